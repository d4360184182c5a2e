"""What every service call needs: the engine, the cluster backend, settings, and the loop's wake-up."""

from __future__ import annotations

import fcntl
import os
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Iterator

from sqlalchemy.engine import Engine
from sqlmodel import Session

from crater_app.cluster.base import ClusterBackend
from crater_app.db.engine import READ_ONLY_OPTION
from crater_app.domain.batching import GroupCommit
from crater_app.services.doorbell import Doorbell, Kick, address
from crater_app.services.identity_cache import IdentityCache
from crater_app.settings import Settings


class WriterLock:
    """The turn at SQLite's single write lock, taken before ``BEGIN IMMEDIATE``: a re-entrant lock among this
    process's threads, then an exclusive ``flock`` on ``path`` (a file beside the database) among the processes
    (web workers, the CLI) that use the database. Crater's database has one; so has the local backend's state database
    (``cluster.local.store.Store``, through ``bootstrap.make_backend``).

    Without it, the writers of other processes wait in SQLite's busy handler, which polls with sleeps of up to
    100 ms: with several web workers, a submission then sometimes waits tens of milliseconds for a lock that was
    free again after one. ``flock`` hands the lock over as soon as it is released. ``path`` ``None`` (an in-memory
    database): in-process only. The file descriptor is opened per process (after a fork the child opens its own:
    a shared open file would share the lock).
    """

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None
        self._pid = 0

    def __enter__(self) -> "WriterLock":
        self._lock.acquire()
        self._depth += 1
        if self._depth == 1 and self.path:
            try:
                if self._fd is None or self._pid != os.getpid():
                    self._fd, self._pid = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600), os.getpid()
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            except BaseException:
                self._depth -= 1
                self._lock.release()
                raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        try:
            if self._depth == 0 and self._fd is not None and self._pid == os.getpid():
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._lock.release()


def writer_lock_path(engine: Engine) -> str | None:
    """The file :class:`WriterLock` locks for ``engine``'s SQLite database (``<database>.writer-lock``), or ``None``
    for an in-memory database or another dialect."""
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database + ".writer-lock"


@dataclass
class ServiceContext:
    """Shared handles. ``kick`` wakes the placement/reconcile loop at once (e.g. after a submission); in a process
    that is not the leader it also rings the leader's ``doorbell`` (``services.doorbell``)."""

    engine: Engine
    backend: ClusterBackend
    settings: Settings
    kick: Kick = field(default_factory=Kick)
    # SQLite has one writer at a time. Writers queue here (threads in Python, processes on a file lock) rather than
    # in SQLite's busy handler, which polls with sleeps of up to 100 ms (a long tail under concurrent writes).
    _write_lock: WriterLock | None = field(default=None, init=False, repr=False, compare=False)
    _doorbell: Doorbell | None = field(default=None, init=False, repr=False, compare=False)
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
        ``BEGIN`` (a WAL snapshot), which neither waits for nor blocks writers. The writer lock
        (:class:`WriterLock`) is shared by this process's threads and, through a file lock, by the other processes.
        """
        sqlite = self.engine.dialect.name == "sqlite"
        if read_only and sqlite:
            if self._read_engine is None:
                self._read_engine = self.engine.execution_options(**{READ_ONLY_OPTION: True})
            bind, guard = self._read_engine, nullcontext()
        else:
            if sqlite and self._write_lock is None:
                self._write_lock = WriterLock(writer_lock_path(self.engine))
            bind, guard = self.engine, (self._write_lock if sqlite else nullcontext())
        with guard, Session(bind, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    @property
    def doorbell(self) -> Doorbell:
        """The leader's doorbell of this deployment (``services.doorbell``), keyed by the database URL."""
        if self._doorbell is None:
            self._doorbell = Doorbell(address(self.settings.resolved_database_url))
        return self._doorbell
