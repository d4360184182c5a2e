"""The Kubernetes backend's change log: every status a workload took, in order, read with an opaque cursor.

A cursor is ``<generation>:<seq>``: ``generation`` names this log's history (a random token per process, so a cursor
kept across a Crater restart is recognised as foreign), ``seq`` the last change read. A cursor of another
generation, or one older than the oldest change kept (the log keeps the last :data:`DEFAULT_KEEP`), reads with
``relist=True``: the caller replaces its view with ``list_workloads`` and goes on from the cursor returned. A
re-list of the API (after ``410 Gone``) does not start a new generation: the backend compares what it had with what
the re-list brought and logs every workload whose status changed, so a reader loses no final status.
"""

from __future__ import annotations

import secrets
import threading

from crater_app.cluster.base import Changes, WorkloadStatus

#: how many changes the log keeps (a reader further behind re-lists)
DEFAULT_KEEP = 100_000


class ChangeLog:
    """An append-only, bounded log of statuses (thread-safe). Change number ``n`` is ``_entries[n - _first]``."""

    def __init__(self, keep: int = DEFAULT_KEEP) -> None:
        self.generation = secrets.token_hex(6)
        self._keep = keep
        self._entries: list[WorkloadStatus] = []
        self._first = 1  # the number of _entries[0]
        self._lock = threading.Lock()

    @property
    def _last(self) -> int:
        return self._first + len(self._entries) - 1

    @property
    def cursor(self) -> str:
        """The cursor after the last change (what a reader that has everything passes next)."""
        with self._lock:
            return f"{self.generation}:{self._last}"

    def append(self, status: WorkloadStatus) -> None:
        """Log ``status`` as the newest change."""
        with self._lock:
            self._entries.append(status)
            if len(self._entries) > self._keep + self._keep // 4:  # trim in batches: appends stay O(1) amortised
                drop = len(self._entries) - self._keep
                del self._entries[:drop]
                self._first += drop

    def restart(self) -> None:
        """Start a new generation: every cursor given so far reads with ``relist=True``."""
        with self._lock:
            self.generation = secrets.token_hex(6)
            self._first += len(self._entries)
            self._entries = []

    def read(self, cursor: str = "", limit: int = 1000) -> Changes:
        """The changes after ``cursor`` (``""``: from the oldest kept), at most ``limit``; see the module for
        ``relist``."""
        with self._lock:
            generation, _, raw = cursor.partition(":")
            if not cursor:
                after = self._first - 1
                relist = self._first > 1  # changes were dropped (or came before a restart of the log)
            elif generation != self.generation or not raw.isdigit() or not self._first - 1 <= int(raw) <= self._last:
                return Changes((), f"{self.generation}:{self._last}", relist=True)
            else:
                after, relist = int(raw), False
            picked = self._entries[after + 1 - self._first:after + 1 - self._first + max(limit, 0)]
            return Changes(tuple(picked), f"{self.generation}:{after + len(picked)}", relist=relist)
