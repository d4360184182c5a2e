"""Kubernetes manifests sent where Crater expects its own job spec: say what the document is and what to send.

A body with both ``apiVersion`` and ``kind`` (the two fields every Kubernetes object has, and no Crater job spec
has ``apiVersion``) is a manifest. Crater builds the Volcano Job itself from its job spec (DESIGN.md §3), so a
manifest is refused with an error that names it - "a Volcano Job (batch.volcano.sh/v1alpha1)" - and points at the
fields that carry its content, instead of the first schema error ("name is required"). So are the near misses a
person pastes from ``kubectl``: a YAML stream of several manifests (``---``), a list of manifests, an
``apiVersion`` that is not a string (``apiVersion: 1``), an ``apiVersion`` without ``kind``, and a ``kind`` that is
no Crater job kind on an object with ``metadata`` or ``spec`` but no ``apiVersion``.

Recognised projects (API group of ``apiVersion`` -> ``product``, message ``job.manifest``):

- ``batch.volcano.sh`` (Volcano ``Job``), ``scheduling.volcano.sh`` (``Queue``, ``PodGroup``), ``bus.volcano.sh``:
  Volcano
- ``kubeflow.org`` (Training Operator v1: ``PyTorchJob``, ``TFJob``, ``MPIJob``, ``XGBoostJob``, ``PaddleJob``,
  ``JAXJob``) and ``trainer.kubeflow.org`` (Trainer v2 ``TrainJob``): Kubeflow
- the core group (``v1``: ``Pod``), ``batch`` (``Job``, ``CronJob``), ``apps`` (``Deployment``, ``StatefulSet``,
  ``DaemonSet``, ``ReplicaSet``): Kubernetes

Any other ``apiVersion`` + ``kind`` is a manifest of an unknown project (message ``job.manifest_other``).
"""

from __future__ import annotations

import json

from crater_app.domain.errors import InvalidInput
from crater_app.domain.jobs import JOB_KINDS

MAX_NAME_CHARS = 100
#: how many manifests of a list or a stream the error names (the count says how many there are)
MAX_LISTED = 10
#: API group -> the project that defines it (a proper noun: the same in every language)
PRODUCTS = {
    "batch.volcano.sh": "Volcano", "scheduling.volcano.sh": "Volcano", "bus.volcano.sh": "Volcano",
    "kubeflow.org": "Kubeflow", "trainer.kubeflow.org": "Kubeflow",
    "": "Kubernetes", "batch": "Kubernetes", "apps": "Kubernetes",
}
#: (product, kind) of a multi-task gang manifest -> the Crater job kind that carries it (with ``tasks``); a Volcano
#: Job that enables Volcano's ``pytorch`` or ``mpi`` job plugin is that kind (:func:`gang_kind`)
GANG_KINDS = {("Volcano", "Job"): "batch", ("Kubeflow", "PyTorchJob"): "pytorch", ("Kubeflow", "MPIJob"): "mpi"}
#: Volcano job plugins (``spec.plugins``) that make a Volcano Job one of Crater's kinds
_VOLCANO_PLUGIN_KINDS = ("pytorch", "mpi")
#: fields that every Kubernetes object has and no Crater job spec has
_OBJECT_FIELDS = ("metadata", "spec")


def describe_manifest(body: object) -> tuple[str | None, str, str] | None:
    """``(product, kind, apiVersion)`` when ``body`` is a Kubernetes manifest (an object with non-empty string
    ``apiVersion`` and ``kind``), else ``None``. ``product`` is ``Volcano``, ``Kubeflow``, ``Kubernetes`` or ``None``
    (an API group Crater does not know); ``kind`` and ``apiVersion`` as sent, at most 100 characters each."""
    if not isinstance(body, dict):
        return None
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not api_version or not kind:
        return None
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return PRODUCTS.get(group.lower()), kind[:MAX_NAME_CHARS], api_version[:MAX_NAME_CHARS]


def manifest_name(body: object) -> str | None:
    """A manifest as a list of them names it - ``Volcano Job (batch.volcano.sh/v1alpha1)``, ``RayJob (ray.io/v1)``
    for a project Crater does not know - or ``None`` when ``body`` is no manifest (:func:`describe_manifest`)."""
    found = describe_manifest(body)
    if found is None:
        return None
    product, kind, api_version = found
    return f"{product + ' ' if product else ''}{kind} ({api_version})"


def gang_kind(body: dict, product: str, kind: str) -> str | None:
    """The Crater job kind (``batch``, ``pytorch``, ``mpi``) whose ``tasks`` carry a gang manifest - a Volcano
    ``Job`` (``pytorch``/``mpi`` when its ``spec.plugins`` enables that plugin, else ``batch``), a Kubeflow
    ``PyTorchJob`` or ``MPIJob`` - or ``None`` for any other manifest (its advice is the single-task form)."""
    found = GANG_KINDS.get((product, kind))
    if found == "batch":
        spec = body.get("spec")
        plugins = spec.get("plugins") if isinstance(spec, dict) else None
        if isinstance(plugins, dict):
            found = next((k for k in _VOLCANO_PLUGIN_KINDS if k in plugins), found)
    return found


def _shown(value: object) -> str:
    """A sent value as the message quotes it: its JSON text, at most 64 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:
        text = str(value)
    return text if len(text) <= 64 else text[:63] + "…"


def refuse_manifest(body: object) -> None:
    """Raise when ``body`` is a Kubernetes manifest (or a near miss, see the module) rather than a Crater job spec;
    otherwise nothing.

    Raises:
        InvalidInput: field ``apiVersion``: ``job.manifest`` (``product``, ``kind``, ``api_version``) for a known
            project, ``job.manifest_gang`` (also ``crater_kind``, :func:`gang_kind`) for a multi-task gang (a Volcano
            Job, a Kubeflow PyTorchJob or MPIJob), ``job.manifest_other`` (``kind``, ``api_version``) otherwise, ``job.manifest_api_version``
            (``value``: an ``apiVersion`` that is not a non-empty string, as JSON), ``job.manifest_no_api_version``
            (``kind``); field ``kind``: ``job.manifest_kind`` (``api_version``; ``kind`` missing or not a string);
            field ``None``: ``job.manifest_list`` (``count``, ``manifests``: a list holding manifests).
    """
    if isinstance(body, list):
        names = [n for n in (manifest_name(item) for item in body) if n is not None]
        if names:
            raise InvalidInput("job.manifest_list", None, count=len(body), manifests=names[:MAX_LISTED])
        return
    if not isinstance(body, dict):
        return
    found = describe_manifest(body)
    if found is not None:
        product, kind, api_version = found
        if product is None:
            raise InvalidInput("job.manifest_other", "apiVersion", kind=kind, api_version=api_version)
        crater_kind = gang_kind(body, product, kind)
        if crater_kind is not None:
            raise InvalidInput("job.manifest_gang", "apiVersion", product=product, kind=kind,
                               api_version=api_version, crater_kind=crater_kind)
        raise InvalidInput("job.manifest", "apiVersion", product=product, kind=kind, api_version=api_version)
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if "apiVersion" in body:
        if not isinstance(api_version, str) or not api_version:
            raise InvalidInput("job.manifest_api_version", "apiVersion", value=_shown(api_version))
        raise InvalidInput("job.manifest_kind", "kind", api_version=api_version[:MAX_NAME_CHARS])
    if isinstance(kind, str) and kind not in JOB_KINDS and any(name in body for name in _OBJECT_FIELDS):
        raise InvalidInput("job.manifest_no_api_version", "apiVersion", kind=kind[:MAX_NAME_CHARS])


def refuse_manifests(documents: list[object]) -> None:
    """:func:`refuse_manifest` for the documents of one body (a YAML stream may hold several, ``---`` separated).

    Raises:
        InvalidInput: what :func:`refuse_manifest` raises for a single document; ``job.manifest_documents``
            (``count``, ``manifests``) for a stream of several documents holding manifests.
    """
    if len(documents) == 1:
        refuse_manifest(documents[0])
        return
    names = [n for n in (manifest_name(d) for d in documents) if n is not None]
    if names:
        raise InvalidInput("job.manifest_documents", None, count=len(documents), manifests=names[:MAX_LISTED])
