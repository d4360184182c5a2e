"""What every service call needs: the engine, the cluster backend, settings, and the loop's wake-up."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from sqlalchemy.engine import Engine
from sqlmodel import Session

from crater_app.cluster.base import ClusterBackend
from crater_app.settings import Settings


@dataclass
class ServiceContext:
    """Shared handles. ``kick`` wakes the placement/reconcile loop at once (e.g. after a submission)."""

    engine: Engine
    backend: ClusterBackend
    settings: Settings
    kick: threading.Event = field(default_factory=threading.Event)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session in one transaction, committed on success, rolled back on error."""
        with Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise
