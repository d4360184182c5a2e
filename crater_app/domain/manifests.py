"""Kubernetes manifests sent where Crater expects its own job spec: say what the document is and what to send.

A body with both ``apiVersion`` and ``kind`` (the two fields every Kubernetes object has, and no Crater job spec
has ``apiVersion``) is a manifest. Crater builds the Volcano Job itself from its job spec (DESIGN.md §3), so a
manifest is refused with an error that names it - "a Volcano Job (batch.volcano.sh/v1alpha1)" - and points at the
fields that carry its content, instead of the first schema error ("name is required").

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

from crater_app.domain.errors import InvalidInput

MAX_NAME_CHARS = 100
#: API group -> the project that defines it (a proper noun: the same in every language)
PRODUCTS = {
    "batch.volcano.sh": "Volcano", "scheduling.volcano.sh": "Volcano", "bus.volcano.sh": "Volcano",
    "kubeflow.org": "Kubeflow", "trainer.kubeflow.org": "Kubeflow",
    "": "Kubernetes", "batch": "Kubernetes", "apps": "Kubernetes",
}


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


def refuse_manifest(body: object) -> None:
    """Raise when ``body`` is a Kubernetes manifest rather than a Crater job spec; otherwise nothing.

    Raises:
        InvalidInput: field ``apiVersion``; code ``job.manifest`` (arguments ``product``, ``kind``,
            ``api_version``) for a known project, ``job.manifest_other`` (``kind``, ``api_version``) otherwise.
    """
    found = describe_manifest(body)
    if found is None:
        return
    product, kind, api_version = found
    if product is None:
        raise InvalidInput("job.manifest_other", "apiVersion", kind=kind, api_version=api_version)
    raise InvalidInput("job.manifest", "apiVersion", product=product, kind=kind, api_version=api_version)
