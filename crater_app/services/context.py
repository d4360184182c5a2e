"""What every service call needs: the engine, the cluster backend, settings, and the loop's wake-up."""

from __future__ import annotations

import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Iterator

from sqlalchemy.engine import Engine
from sqlmodel import Session

from crater_app.cluster.base import ClusterBackend
from crater_app.db.engine import READ_ONLY_OPTION
from crater_app.domain.batching import GroupCommit
from crater_app.services.identity_cache import IdentityCache
from crater_app.settings import Settings


@dataclass
class ServiceContext:
    """Shared handles. ``kick`` wakes the placement/reconcile loop at once (e.g. after a submission)."""

    engine: Engine
    backend: ClusterBackend
    settings: Settings
    kick: threading.Event = field(default_factory=threading.Event)
    # SQLite has one writer at a time. Writers of this process queue here, in Python, rather than in
    # SQLite's busy handler, which polls with sleeps of up to 100 ms (a long tail under concurrent writes).
    _write_lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False, compare=False)
    _read_engine: Engine | None = field(default=None, init=False, repr=False, compare=False)
    # Concurrent job submissions are written in one transaction (see GroupCommit and services.jobs).
    submissions: GroupCommit = field(default_factory=GroupCommit, init=False, repr=False, compare=False)
    # Per-database caches of services (e.g. project name -> id); they live and die with the context.
    cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    # Credentials resolved in the last few seconds (services.identity), per context so that they never outlive
    # the database they were read from.
    identities: IdentityCache = field(default_factory=IdentityCache, init=False, repr=False, compare=False)

    @contextmanager
    def session(self, read_only: bool = False) -> Iterator[Session]:
        """A session in one transaction, committed on success, rolled back on error.

        On SQLite a transaction starts with ``BEGIN IMMEDIATE`` (the write lock is taken up front, so a
        read-then-write transaction cannot fail when another connection commits in between), after the
        process-wide writer lock. ``read_only=True`` is for transactions that never write: a plain
        ``BEGIN`` (a WAL snapshot), which neither waits for nor blocks writers.
        """
        sqlite = self.engine.dialect.name == "sqlite"
        if read_only and sqlite:
            if self._read_engine is None:
                self._read_engine = self.engine.execution_options(**{READ_ONLY_OPTION: True})
            bind, guard = self._read_engine, nullcontext()
        else:
            bind, guard = self.engine, (self._write_lock if sqlite else nullcontext())
        with guard, Session(bind, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise
