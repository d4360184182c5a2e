"""Composition root for services: builds the engine, the configured cluster backend and the context.

Only this module (and the app/API entry points) names a concrete backend.
"""

from __future__ import annotations

import threading

from crater_app.cluster.base import ClusterBackend
from crater_app.db.engine import make_engine
from crater_app.db.migrate import upgrade
from crater_app.domain.job_defaults import default_resources
from crater_app.services.console_sessions import check_settings
from crater_app.services.context import ServiceContext, WriterLock
from crater_app.settings import Settings, get_settings

_lock = threading.Lock()
_ctx: ServiceContext | None = None


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def kube_options(settings: Settings):
    """The Kubernetes builders' :class:`~crater_app.cluster.kube.options.KubeOptions` from ``CRATER_KUBE_*``.

    Raises:
        ValueError: a bad namespace mode or pull policy (``KubeOptions``), or a ``CRATER_KUBE_MODEL_LABELS`` entry
            without ``=``.
    """
    from crater_app.cluster.kube.options import DEFAULT_MODEL_LABELS, KubeOptions

    labels = dict(DEFAULT_MODEL_LABELS)
    for pair in _names(settings.kube_model_labels):
        resource, sep, label = pair.partition("=")
        if not sep or not resource.strip() or not label.strip():
            raise ValueError(f"CRATER_KUBE_MODEL_LABELS: {pair!r} is not <resource>=<node label>")
        labels[resource.strip()] = label.strip()
    return KubeOptions(
        namespace_mode=settings.kube_namespace_mode, namespace=settings.kube_namespace,
        namespace_prefix=settings.kube_namespace_prefix, crater_namespace=settings.kube_crater_namespace,
        scheduler_name=settings.kube_scheduler, accelerators=_names(settings.kube_accelerators), model_labels=labels,
        service_account=settings.kube_service_account, spaces_claim=settings.kube_spaces_claim,
        image_pull_policy=settings.kube_image_pull_policy, image_pull_secrets=_names(settings.kube_image_pull_secrets),
        priority_class=settings.kube_priority_class, member_queues=settings.kube_member_queues)


def make_backend(settings: Settings) -> ClusterBackend:
    """The backend named by ``CRATER_BACKEND``: ``local`` or ``kubernetes`` (the cluster of ``CRATER_KUBE_CONFIG``,
    ``KUBECONFIG``, ``~/.kube/config`` or the in-cluster service account, checked before it is used).

    Raises:
        ValueError: an unknown backend name, or bad ``CRATER_KUBE_*`` settings.
        crater_app.cluster.kube.client.ClusterUnavailable: the cluster cannot be used (``kube.config``,
            ``kube.unreachable``, ``kube.crds_missing``, ``kube.forbidden``).
    """
    if settings.backend == "kubernetes":
        from crater_app.cluster.kube.backend import KubernetesBackend
        from crater_app.cluster.kube.client import check_cluster, make_api_client

        options = kube_options(settings)
        api = make_api_client(settings.kube_config or None, settings.kube_context or None)
        check_cluster(api)
        return KubernetesBackend(options, api)
    if settings.backend == "local":
        from crater_app.cluster.local import LocalBackend

        return LocalBackend(
            settings.data_dir, settings.local_gpus, settings.cancel_grace_s, isolation=settings.local_isolation,
            cgroups=settings.local_cgroups, cgroup_root=settings.local_cgroup_root,
            cgroup_parent=settings.local_cgroup_parent, pids_max=settings.local_pids_max,
            uid_range=(settings.local_uid_min, settings.local_uid_max), account_prefix=settings.local_account_prefix,
            store_turn=lambda path: WriterLock(f"{path}.writer-lock"),  # its writers in every web worker queue here
        )
    raise ValueError(f"CRATER_BACKEND must be 'local' or 'kubernetes' (got {settings.backend!r})")


def build_context(settings: Settings | None = None, migrate: bool = True) -> ServiceContext:
    """A fresh :class:`ServiceContext` for ``settings`` (migrating the database first when ``migrate``).

    Raises:
        ValueError: a job default (``CRATER_DEFAULT_JOB_CPU``/``_MEMORY``) that is not a quantity, or unusable
            sign-in settings (``services.console_sessions.check_settings``).
    """
    settings = settings or get_settings()
    default_resources(settings.default_job_cpu, settings.default_job_memory)  # ValueError: a bad default
    check_settings(settings)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    url = settings.resolved_database_url
    if migrate:
        upgrade(url)
    return ServiceContext(engine=make_engine(url), backend=make_backend(settings), settings=settings)


def get_context() -> ServiceContext:
    """The process-wide context, built on first use from :func:`get_settings`."""
    global _ctx
    with _lock:
        if _ctx is None:
            _ctx = build_context()
        return _ctx
