""""Did you mean" for a job spec: the field or value a user probably meant, from the names they bring.

Users coming from Volcano or Kubernetes write their spellings (``restartPolicy``, ``minAvailable``, ``OnFailure``);
those are mapped explicitly (:data:`FIELD_ALIASES`, :data:`RESTART_POLICY_ALIASES`). Any other unknown name gets
the closest known name at the same level, by :func:`crater_app.domain.resource_names.closest`
(:func:`difflib.get_close_matches`, cutoff 0.6, case-insensitive), as Python's own "did you mean" does.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from crater_app.domain.resource_names import closest

#: Volcano Job / Kubernetes field names (camelCase) -> Crater's job spec field (Volcano's ``batch.volcano.sh/v1alpha1``
#: ``JobSpec``: ``minAvailable``, ``maxRetry``, ``ttlSecondsAfterFinished``, ``policies``; core/v1 ``PodSpec``:
#: ``restartPolicy``, ``nodeSelector``; ``Container``: ``workingDir``)
FIELD_ALIASES = {
    "restartPolicy": "restart_policy", "minAvailable": "min_available", "maxRetry": "max_retry",
    "nodeSelector": "node_selector", "ttlSecondsAfterFinished": "ttl_after_finished", "workingDir": "working_dir",
    "acceleratorModel": "accelerator_model", "maxRuntime": "max_runtime", "shmSize": "shm_size",
}
#: Volcano's job policy actions and Kubernetes' pod ``restartPolicy`` values -> Crater's ``restart_policy``:
#: Volcano ``RestartJob`` restarts the job (``restart``), ``AbortJob``/``TerminateJob`` end it (``fail``); a pod's
#: ``OnFailure`` restarts a failed container (``restart``), ``Never`` does not (``fail``)
RESTART_POLICY_ALIASES = {
    "RestartJob": "restart", "AbortJob": "fail", "TerminateJob": "fail", "OnFailure": "restart", "Never": "fail",
}


def _model_in(annotation: object) -> type[BaseModel] | None:
    """The pydantic model an annotation holds (``list[TaskSpec] | None`` -> ``TaskSpec``), or ``None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if isinstance(arg, (type, types.GenericAlias)) or typing.get_args(arg):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def known_fields(model: type[BaseModel], loc: Sequence[object]) -> tuple[str, ...]:
    """The field names allowed at the level of the last element of ``loc`` (a pydantic error location such as
    ``("tasks", 1, "replica")``), walking ``model``'s nested models; ``()`` where the level is no model (a dict's
    keys are the user's own)."""
    current: type[BaseModel] | None = model
    for part in loc[:-1]:
        if current is None:
            return ()
        if isinstance(part, int):
            continue
        info = current.model_fields.get(str(part))
        current = _model_in(info.annotation) if info is not None else None
    return tuple(current.model_fields) if current is not None else ()


def suggest_field(name: object, known: Iterable[str]) -> str | None:
    """The field meant by the unknown field ``name``: its :data:`FIELD_ALIASES` entry when that is among ``known``,
    else the closest of ``known`` (see the module), else ``None``."""
    known = tuple(known)
    if not isinstance(name, str) or not known:
        return None
    alias = FIELD_ALIASES.get(name)
    if alias in known:
        return alias
    return closest(name, known)


def suggest_restart_policy(value: str, policies: Iterable[str]) -> str | None:
    """The ``restart_policy`` meant by ``value``: its :data:`RESTART_POLICY_ALIASES` entry, else the closest of
    ``policies`` (``Restart`` -> ``restart``), else ``None``."""
    policies = tuple(policies)
    alias = RESTART_POLICY_ALIASES.get(value)
    if alias in policies:
        return alias
    return closest(value, policies)
