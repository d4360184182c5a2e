"""An in-memory :class:`~crater_app.cluster.base.ClusterBackend`: the boundary mock for service tests.

It keeps the backend contract (idempotent create, a new run of a finished uid for a higher ``attempt``,
Pending -> Running [-> Stopping] -> Succeeded/Failed/Cancelled, a ``changes`` watch with increasing ``rev``, gang
placement with the same :func:`place` the local backend uses - backfill and coded reasons included) without
starting processes. A stop (cancel, deadline) reports ``Stopping`` with the devices still held, and the final
state at the next :meth:`tick`. Commands are simulated: ``["sh", "-c", "echo hi; sleep 2; exit 3"]`` logs ``hi``,
runs 2 seconds and exits 3 (statements ``echo``, ``sleep N``, ``exit K``; anything else runs instantly with 0).

Test hooks: :meth:`set_state` reports an arbitrary backend state (e.g. ``Evicted``); :meth:`forget` loses a
workload, as a wiped cluster would.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Callable

from crater_app.cluster.base import Device, NodeInventory, Workload, WorkloadStatus
from crater_app.domain.placement import Capacity, FreeDevice, Request, Running, place

GiB = 1024**3


def _simulate(command: tuple[str, ...]) -> tuple[list[str], float, int]:
    """(log lines, run seconds, exit code) of a command."""
    if len(command) == 3 and command[0] == "sh" and command[1] == "-c":
        lines, seconds, code = [], 0.0, 0
        for stmt in (s.strip() for s in command[2].split(";")):
            if stmt.startswith("echo "):
                lines.append(stmt[5:].strip("'\""))
            elif m := re.fullmatch(r"sleep ([0-9.]+)", stmt):
                seconds += float(m.group(1))
            elif m := re.fullmatch(r"exit (\d+)", stmt):
                code = int(m.group(1))
                break
        return lines, seconds, code
    if command and command[0] == "sleep" and len(command) == 2:
        return [], float(command[1]), 0
    return [], 0.0, 0


@dataclass
class _Record:
    workload: Workload
    status: WorkloadStatus
    logs: list[str] = field(default_factory=list)
    stopping: str | None = None  # the stop's message while it is Stopping
    final: tuple[str, str, str, str, dict] | None = None  # (state, reason, message, code, args) once stopped


class FakeBackend:
    """In-memory backend with one node (``fake-node``) and the given devices."""

    name = "fake"

    def __init__(self, devices: list[Device], cpu_m: int = 64000, memory_bytes: int = 256 * GiB,
                 clock: Callable[[], float] = time.time) -> None:
        self.devices = tuple(devices)
        self.cpu_m, self.memory_bytes = cpu_m, memory_bytes
        self.clock = clock
        self._lock = threading.RLock()
        self._records: dict[str, _Record] = {}
        self._rev = 0
        self.created: list[str] = []  # every create() call, in order (idempotency checks)
        self.adopted = 0

    # -- helpers -------------------------------------------------------------------------------
    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), timezone.utc)

    def _set(self, uid: str, **changes) -> None:
        self._rev += 1
        rec = self._records[uid]
        rec.status = replace(rec.status, rev=self._rev, **changes)

    # -- ClusterBackend ------------------------------------------------------------------------
    def inventory(self) -> list[NodeInventory]:
        with self._lock:
            running = [r for r in self._records.values() if r.status.state in ("Running", "Stopping")]
            allocations = {d: r.workload.uid for r in running for d in r.status.devices}
            return [NodeInventory(
                name="fake-node", cpu_m=self.cpu_m, memory_bytes=self.memory_bytes, devices=self.devices,
                source="fake", allocations=allocations,
                cpu_m_allocated=sum(r.workload.resources.cpu_m for r in running),
                memory_bytes_allocated=sum(r.workload.resources.memory_bytes for r in running),
            )]

    def create(self, workload: Workload) -> None:
        with self._lock:
            self.created.append(workload.uid)
            old = self._records.get(workload.uid)
            if old is not None and (workload.attempt <= old.workload.attempt
                                    or old.status.state not in ("Succeeded", "Failed", "Cancelled")):
                return
            self._rev += 1
            self._records[workload.uid] = _Record(workload, WorkloadStatus(
                uid=workload.uid, state="Pending", reason="Queued", message="waiting for placement", exit_code=None,
                devices=(), started_at=None, finished_at=None, rev=self._rev, code="placement.pending",
                attempt=workload.attempt,
            ), logs=old.logs if old is not None else [])

    def create_many(self, workloads: list[Workload]) -> None:
        for workload in workloads:
            self.create(workload)

    def cancel(self, uid: str, reason: str, *, code: str = "", args: dict | None = None) -> None:
        with self._lock:
            rec = self._records[uid]  # KeyError for unknown uids, as the contract says
            if rec.status.state == "Pending":
                self._set(uid, state="Cancelled", reason="Cancelled", message=reason, finished_at=self._now(),
                          code=code, args=dict(args or {}))
            elif rec.status.state == "Running" and rec.stopping is None:
                self._stop(uid, f"stopping: {reason}", ("Cancelled", "Cancelled", reason, code, dict(args or {})))

    def _stop(self, uid: str, message: str, final: tuple[str, str, str, str, dict]) -> None:
        rec = self._records[uid]
        rec.stopping, rec.final = message, final
        self._set(uid, state="Stopping", message=message, code="", args={})

    def extend(self, uid: str, max_runtime_s: int) -> None:
        with self._lock:
            rec = self._records[uid]  # KeyError for unknown uids, as the contract says
            if rec.status.state in ("Pending", "Running"):
                rec.workload = replace(rec.workload, max_runtime_s=max_runtime_s)

    def changes(self, since_rev: int, limit: int = 1000) -> list[WorkloadStatus]:
        with self._lock:
            out = sorted((r.status for r in self._records.values() if r.status.rev > since_rev), key=lambda s: s.rev)
            return out[:limit]

    def status(self, uid: str) -> WorkloadStatus | None:
        with self._lock:
            rec = self._records.get(uid)
            return None if rec is None else rec.status

    def read_logs(self, uid: str, tail_bytes: int = 65536) -> str:
        with self._lock:
            rec = self._records.get(uid)
            text = "" if rec is None else "".join(line + "\n" for line in rec.logs)
        return text[-tail_bytes:]

    def tick(self) -> None:
        with self._lock:
            now = self.clock()
            for uid, rec in list(self._records.items()):
                if rec.status.state == "Stopping":  # its processes have exited: it ends as the stop said
                    state, reason, message, code, args = rec.final or ("Cancelled", "Cancelled", "cancelled", "", {})
                    self._set(uid, state=state, reason=reason, message=message, exit_code=143, exit_signal=15,
                              finished_at=self._now(), code=code, args=args)
                    continue
                if rec.status.state != "Running":
                    continue
                _, seconds, code = _simulate(rec.workload.command)
                started = rec.status.started_at.timestamp()
                if rec.workload.max_runtime_s and now - started >= rec.workload.max_runtime_s:
                    message = f"max_runtime of {rec.workload.max_runtime_s} s exceeded"
                    self._stop(uid, f"stopping: {message}", ("Failed", "DeadlineExceeded", message, "", {}))
                elif now - started >= seconds:
                    self._set(uid, state="Succeeded" if code == 0 else "Failed",
                              reason="Completed" if code == 0 else "Error", message=f"exited with code {code}",
                              exit_code=code, finished_at=self._now())
            self._place()

    def _place(self) -> None:
        running = [r for r in self._records.values() if r.status.state in ("Running", "Stopping")]
        held = {d for r in running for d in r.status.devices}
        by_index = {d.index: FreeDevice(d.index, d.resource, d.model) for d in self.devices}
        now = self._now()
        holding = [Running(
            r.workload.uid, r.workload.resources.cpu_m, r.workload.resources.memory_bytes,
            tuple(by_index[i] for i in r.status.devices),
            now if r.status.state == "Stopping" else (
                max(r.status.started_at + timedelta(seconds=r.workload.max_runtime_s), now)
                if r.workload.max_runtime_s else None),
        ) for r in running]
        capacity = Capacity(
            cpu_m=self.cpu_m - sum(r.workload.resources.cpu_m for r in running),
            memory_bytes=self.memory_bytes - sum(r.workload.resources.memory_bytes for r in running),
            devices=tuple(FreeDevice(d.index, d.resource, d.model) for d in self.devices if d.index not in held),
        )
        pending = [r for r in self._records.values() if r.status.state == "Pending"]
        decision = place([
            Request(uid=r.workload.uid, priority=r.workload.priority, created_at=r.workload.created_at,
                    cpu_m=r.workload.resources.cpu_m, memory_bytes=r.workload.resources.memory_bytes,
                    accelerators=dict(r.workload.resources.accelerators), model=r.workload.accelerator_model,
                    max_runtime_s=r.workload.max_runtime_s)
            for r in pending
        ], capacity, holding, now)
        for uid, message in decision.waiting.items():
            if self._records[uid].status.message != message:
                code, args = decision.reasons[uid]
                self._set(uid, message=message, code=code, args=args)
        for uid, devices in decision.placed.items():
            rec = self._records[uid]
            rec.logs.extend(_simulate(rec.workload.command)[0])
            rec.stopping = rec.final = None
            self._set(uid, state="Running", reason="Started", message="started on fake-node", devices=devices,
                      started_at=self._now(), code="", args={})

    def adopt(self) -> None:
        self.adopted += 1

    # -- test hooks ------------------------------------------------------------------------------
    def set_state(self, uid: str, state: str, reason: str = "", message: str = "") -> None:
        """Report ``state`` (any word, e.g. ``Evicted``) for ``uid`` as the next change."""
        with self._lock:
            self._set(uid, state=state, reason=reason, message=message, code="", args={})

    def forget(self, uid: str) -> None:
        """Lose every trace of ``uid``."""
        with self._lock:
            self._records.pop(uid, None)
