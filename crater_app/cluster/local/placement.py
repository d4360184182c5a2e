"""The local backend's placement round: pending workloads onto this machine's free devices, CPU and memory.

The rule itself is :func:`crater_app.domain.placement.place` (pure); this module reads the store, calls it once per
round, records each waiting workload's reason and starts the placed ones, all in one write transaction. Capacity
held by ``Running`` and ``Stopping`` workloads is not free: a stopped job's devices come back when its last process
has exited.

Backfill needs, for each holder, the latest instant it can still run (``Running.ends_at``): a running workload's
start plus its ``max_runtime`` (unbounded without one); a stopping one's SIGTERM plus the grace after which the
backend sends SIGKILL (``stop_grace_s``, ``CRATER_CANCEL_GRACE_S``), whatever its ``max_runtime``. An instant
already past (a process that outlives its SIGKILL for a moment) counts as now. A gang being restarted
(``Restarting``) runs on: it counts as running.
"""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import datetime
from typing import Callable

from crater_app.cluster.base import Device
from crater_app.cluster.local.outcomes import english
from crater_app.cluster.local.store import HOLDING, PENDING, RESTARTING, Store, ts
from crater_app.domain.placement import Capacity, FreeDevice, Request, Running, place

#: how pending workloads are read when they are new to the round's cache
_CHUNK = 500


class Placer:
    """Runs placement rounds over ``store`` for a node of ``cpu_m`` millicores, ``memory_bytes`` bytes and
    ``devices``; ``start(conn, uid, devices)`` starts one placed workload inside the round's transaction (it must not
    raise: a failure fails that workload only) and returns ``False`` when the workload stays pending for a later
    round (then the next round runs even if the store has not changed); ``clock`` gives seconds since the epoch
    (backfill's "now"); ``stop_grace_s`` the seconds between SIGTERM and SIGKILL of a stopping workload."""

    def __init__(self, store: Store, cpu_m: int, memory_bytes: int, devices: tuple[Device, ...],
                 start: Callable[[sqlite3.Connection, str, tuple[int, ...]], bool],
                 clock: Callable[[], float] = time.time, *, stop_grace_s: float = 0.0) -> None:
        self.store = store
        self.clock = clock
        self.stop_grace_s = stop_grace_s
        self.cpu_m, self.memory_bytes, self.devices = cpu_m, memory_bytes, devices
        self.start = start
        self._placed_rev = -1  # the store's revision after the last round: no change, no round
        self._requests: dict[str, Request] = {}  # uid -> placement request of a pending workload

    def round(self) -> None:
        """One round: nothing when the store has not changed since the last one."""
        with self.store.tx() as conn:
            if self.store.head(conn) == self._placed_rev:
                return
            running = conn.execute(
                "SELECT uid, devices, cpu_m, memory_bytes, started_at, max_runtime_s,"
                f" CASE WHEN state = '{RESTARTING}' THEN NULL ELSE term_sent_at END FROM workloads"
                f" WHERE state IN ({','.join('?' * len(HOLDING))})", HOLDING,
            ).fetchall()
            held = {i for r in running for i in json.loads(r[1])}
            now = self.clock()
            by_index = {d.index: FreeDevice(d.index, d.resource, d.model) for d in self.devices}
            holding = [  # what each holds, and until when at the latest (backfill; see the module docstring)
                Running(r[0], r[2], r[3], tuple(by_index[i] for i in json.loads(r[1]) if i in by_index),
                        self._ends_at(r[4], r[5], r[6], now))
                for r in running
            ]
            capacity = Capacity(
                cpu_m=self.cpu_m - sum(r[2] for r in running),
                memory_bytes=self.memory_bytes - sum(r[3] for r in running),
                devices=tuple(FreeDevice(d.index, d.resource, d.model) for d in self.devices if d.index not in held),
            )
            pending = conn.execute("SELECT uid, code, args FROM workloads WHERE state = ?", (PENDING,)).fetchall()
            requests = self._pending_requests(conn, [r[0] for r in pending])
            stored = {uid: (code, args) for uid, code, args in pending}
            decision = place(requests, capacity, holding, ts(now))
            # Compared as code and arguments (their JSON text, as stored): only a reason that changed is rendered.
            changed = [(uid, code, args, text) for uid, (code, args) in decision.reasons.items()
                       if stored[uid] != (code, text := json.dumps(args))]
            if changed:  # as one Store.update per workload (revs head+1, head+2, ...), in one statement
                rev = self.store.next_rev(conn)
                rows = [("Queued", english(code, args), code, text, rev + i, uid)
                        for i, (uid, code, args, text) in enumerate(changed)]
                conn.executemany("UPDATE workloads SET reason = ?, message = ?, code = ?, args = ?, rev = ?"
                                 " WHERE uid = ?", rows)
            deferred = False
            for uid, devices in decision.placed.items():
                deferred |= self.start(conn, uid, devices) is False
            self._placed_rev = -1 if deferred else self.store.head(conn)

    def _ends_at(self, started_at: float | None, max_runtime_s: int | None, term_sent_at: float | None,
                 now: float) -> datetime | None:
        """The latest instant (UTC) a holder can still run (see the module docstring); ``None``: unbounded."""
        if term_sent_at is not None:
            return ts(max(term_sent_at + self.stop_grace_s, now))
        if started_at is not None and max_runtime_s:
            return ts(max(started_at + max_runtime_s, now))
        return None

    def _pending_requests(self, conn: sqlite3.Connection, uids: list[str]) -> list[Request]:
        """Placement requests of the pending workloads ``uids``. A request never changes while its workload
        is pending (priority, time and resources are written once, by ``create``), so they are kept
        between rounds and only new workloads are read and decoded: a round over a long queue stays cheap."""
        cache = self._requests
        missing = [uid for uid in uids if uid not in cache]
        for i in range(0, len(missing), _CHUNK):
            chunk = missing[i:i + _CHUNK]
            rows = conn.execute(
                "SELECT uid, priority, created_at, cpu_m, memory_bytes, accelerators, model, max_runtime_s"
                f" FROM workloads WHERE uid IN ({','.join('?' * len(chunk))})", chunk,
            ).fetchall()
            for r in rows:
                cache[r[0]] = Request(uid=r[0], priority=r[1], created_at=ts(r[2]), cpu_m=r[3], memory_bytes=r[4],
                                      accelerators=json.loads(r[5]), model=r[6], max_runtime_s=r[7])
        if len(cache) > len(uids):  # forget workloads that are no longer pending
            live = set(uids)
            self._requests = cache = {uid: req for uid, req in cache.items() if uid in live}
        return [cache[uid] for uid in uids]

    def forget(self, uid: str) -> None:
        """Drop the cached request of ``uid`` (its max_runtime changed while it waits)."""
        self._requests.pop(uid, None)
