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


def make_backend(settings: Settings) -> ClusterBackend:
    """The backend named by ``CRATER_BACKEND`` (only ``local`` for now).

    Raises:
        ValueError: an unknown backend name.
    """
    if settings.backend == "local":
        from crater_app.cluster.local import LocalBackend

        return LocalBackend(
            settings.data_dir, settings.local_gpus, settings.cancel_grace_s, isolation=settings.local_isolation,
            cgroups=settings.local_cgroups, cgroup_root=settings.local_cgroup_root,
            cgroup_parent=settings.local_cgroup_parent, pids_max=settings.local_pids_max,
            uid_range=(settings.local_uid_min, settings.local_uid_max), account_prefix=settings.local_account_prefix,
            store_turn=lambda path: WriterLock(f"{path}.writer-lock"),  # its writers in every web worker queue here
        )
    raise ValueError(f"CRATER_BACKEND must be 'local' (got {settings.backend!r})")


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
