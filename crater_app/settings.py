"""Crater settings: the only reader of ``os.environ`` (pydantic-settings, prefix ``CRATER_``)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Process-wide configuration read from ``CRATER_*`` environment variables.

    Attributes:
        data_dir: folder holding the SQLite database, job logs and working directories.
        database_url: SQLAlchemy URL; empty means ``sqlite:///<data_dir>/crater.db``.
        backend: cluster backend name; ``local`` is the embedded default.
        local_gpus: virtual accelerators for machines without NVML, ``"4"`` or
            ``"4:NVIDIA-A100-SXM4-80GB"``; real NVML devices win when present.
        admin_password: password of the first admin (user ``admin``); random when empty.
        secret_key: key signing console session tokens; random per data dir when empty.
        token_ttl_s: lifetime of a login access token, seconds.
        cancel_grace_s: seconds between SIGTERM and SIGKILL when a job is cancelled.
        loop_interval_s: period of the placement/reconcile loop, seconds.
        lease_ttl_s: seconds a leader lease stays valid without renewal.
        port: the single HTTP port for console and API.
    """

    model_config = SettingsConfigDict(env_prefix="CRATER_", extra="ignore")

    data_dir: Path = Path("./var")
    database_url: str = ""
    backend: str = "local"
    local_gpus: str = ""
    admin_password: str = ""
    secret_key: str = ""
    token_ttl_s: int = 12 * 3600
    cancel_grace_s: float = 10.0
    loop_interval_s: float = 0.2
    lease_ttl_s: float = 10.0
    port: int = Field(default=3000, validation_alias="PORT")
    api_url: str = ""

    @property
    def resolved_database_url(self) -> str:
        """The database URL in use: ``database_url`` or the SQLite file in ``data_dir``."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir.resolve() / 'crater.db'}"


@lru_cache
def get_settings() -> Settings:
    """Return the process-wide :class:`Settings` (cached; call ``get_settings.cache_clear()`` in tests)."""
    return Settings()
