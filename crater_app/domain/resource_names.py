"""Resource names a request asks for that no node offers, and the offered name the user probably meant.

``nvidia.com/gpus`` is a valid extended resource name (Kubernetes accepts it and the pod would wait forever); when
no node has such devices, the submission is refused with the names the cluster does offer and, when one is close
(``nvidia.com/gpu``), "did you mean ...?". Closeness is :func:`difflib.get_close_matches` (Ratcliff/Obershelp
similarity, cutoff 0.6) on lower-cased names, as Python's own "did you mean" for misspelt attributes does.

The same holds for the resources a limit or a price names (a quota, a member's share, a quota request, the price
table; :func:`check_offered_key`): a quota on ``nvidia.com/gpus`` limits nothing and a price on it charges nothing,
so such a name is refused too, and so is an accelerator model no device has (``nvidia.com/gpu:Nope Model``), with the
models that exist. Kubernetes' standard names (:data:`STANDARD_NAMES`) are offered by every node.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from crater_app.domain import field_paths
from crater_app.domain.errors import InvalidInput, Unschedulable
from crater_app.domain.resources import CPU, MEMORY

#: similarity a candidate needs to be suggested (difflib's default)
CUTOFF = 0.6
#: similarity a model needs to be suggested: model names share their vendor's words (``NVIDIA H100 80GB HBM3`` is
#: 0.62 like ``NVIDIA-A100-SXM4-80GB``), so only a near miss (a typo, another separator) is "did you mean"
MODEL_CUTOFF = 0.8
#: Kubernetes' standard resource names (core/v1 ``ResourceName``: every node has CPU, memory, ephemeral storage and
#: a pod count), never "not offered"
STANDARD_NAMES = frozenset({CPU, MEMORY, "ephemeral-storage", "pods"})


def closest(name: str, candidates: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The candidate most similar to ``name`` (case-insensitive; at least ``cutoff``), or ``None``."""
    by_folded: dict[str, str] = {}
    for candidate in candidates:
        by_folded.setdefault(candidate.lower(), candidate)
    found = difflib.get_close_matches(name.lower(), list(by_folded), n=1, cutoff=cutoff)
    return by_folded[found[0]] if found else None


def check_offered(requested: Iterable[str], offered: Iterable[str], field_prefix: str = "resources") -> None:
    """Raise when a name in ``requested`` (accelerator resource names) is not in ``offered`` (the resource name of
    every device of every node; read only as far as needed). ``cpu`` and ``memory`` are always offered.

    Raises:
        Unschedulable: field ``<field_prefix>.<name>``; code ``job.resource_not_offered_suggestion`` with arguments
            ``resource``, ``suggestion`` and ``offered`` (sorted names, ``cpu`` and ``memory`` first) when an offered
            name is close, else ``job.resource_not_offered`` with ``resource`` and ``offered``.
    """
    wanted = set(requested) - {CPU, MEMORY}
    if not wanted:
        return
    seen: set[str] = set()
    for name in offered:
        seen.add(name)
        if wanted <= seen:
            return
    missing = sorted(wanted - seen)[0]
    names = [CPU, MEMORY, *sorted(seen - {CPU, MEMORY})]
    suggestion = closest(missing, names)
    field = field_paths.key(field_prefix, missing)
    if suggestion is not None:
        raise Unschedulable("job.resource_not_offered_suggestion", field, resource=missing, suggestion=suggestion,
                            offered=names)
    raise Unschedulable("job.resource_not_offered", field, resource=missing, offered=names)


@dataclass(frozen=True)
class Offered:
    """What the cluster's nodes offer besides :data:`STANDARD_NAMES`: accelerator resource name (``nvidia.com/gpu``)
    -> the models of its devices (``NVIDIA-A100-SXM4-80GB``). ``known`` is ``False`` when the inventory has no node
    at all (a cluster not yet listed): nothing can be judged then, and nothing is refused."""

    models: Mapping[str, frozenset[str]]
    known: bool = True

    @classmethod
    def of(cls, devices: Iterable[tuple[str, str]], nodes: int = 1) -> Offered:
        """From ``(resource, model)`` of every device of ``nodes`` nodes."""
        found: dict[str, set[str]] = {}
        for resource, model in devices:
            found.setdefault(resource, set()).add(model)
        return cls({name: frozenset(models) for name, models in found.items()}, known=nodes > 0)

    def names(self) -> list[str]:
        """The offered resource names for a message: ``cpu``, ``memory``, then the accelerators sorted."""
        return [CPU, MEMORY, *sorted(self.models)]


def check_offered_key(resource: str, model: str | None, offered: Offered, field: str,
                      model_field: str | None = None) -> None:
    """Refuse a resource a limit or a price names (``resource``, and ``model`` when it names one) that no node
    offers: a standard name (:data:`STANDARD_NAMES`) always passes; an accelerator name must be one a device has,
    and ``model`` one of that name's device models. Nothing is refused while the inventory is unknown.

    Args:
        field: the full path errors name for the resource (``capability.nvidia.com/gpus``, ``prices[1].resource``);
            ``model_field`` for the model (default ``field``: a quota key holds both, ``nvidia.com/gpu:MODEL``).

    Raises:
        InvalidInput: ``resource.not_offered`` (``resource``, ``offered``: the names the cluster offers) or
            ``resource.not_offered_suggestion`` (also the close ``suggestion``); ``resource.model_not_offered``
            (``resource``, ``model``, ``models``: the models it has) or ``resource.model_not_offered_suggestion``
            (also ``suggestion``).
    """
    if not offered.known or resource in STANDARD_NAMES:
        return
    models = offered.models.get(resource)
    if models is None:
        names = offered.names()
        suggestion = closest(resource, names)
        if suggestion is not None:
            raise InvalidInput("resource.not_offered_suggestion", field, resource=resource, suggestion=suggestion,
                               offered=names)
        raise InvalidInput("resource.not_offered", field, resource=resource, offered=names)
    if model is None or model in models:
        return
    have = sorted(models)
    suggestion = closest(model, have, MODEL_CUTOFF)
    where = model_field or field
    if suggestion is not None:
        raise InvalidInput("resource.model_not_offered_suggestion", where, resource=resource, model=model,
                           suggestion=suggestion, models=have)
    raise InvalidInput("resource.model_not_offered", where, resource=resource, model=model, models=have)


def check_offered_keys(keys: Iterable[str], offered: Offered, field_prefix: str,
                       accepted: Collection[str] = ()) -> None:
    """:func:`check_offered_key` for each key of a quota resource list (``nvidia.com/gpu`` or
    ``nvidia.com/gpu:MODEL``), field ``<field_prefix>.<key>``; keys in ``accepted`` (those already stored, so that
    editing a quota does not fail while a node is away) pass. Raises as :func:`check_offered_key`."""
    for key in keys:
        if key in accepted:
            continue
        resource, sep, model = key.partition(":")
        check_offered_key(resource, model if sep else None, offered, field_paths.key(field_prefix, key))
