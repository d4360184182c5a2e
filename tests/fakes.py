"""An in-memory :class:`~crater_app.cluster.base.ClusterBackend`: the boundary mock for service tests.

It keeps the backend contract (idempotent create, a new run of a finished uid for a higher ``attempt``,
Pending -> Running [-> Stopping] -> Succeeded/Failed/Cancelled mapped to Crater's phases, a ``changes`` watch with
an opaque cursor ``"<instance id>:<rev>"`` (a cursor of another instance or a garbled one asks for a re-list), gang
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
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Callable

from crater_app.cluster.base import (ENFORCES_DEADLINES, Changes, Device, NodeInventory, Placement, ReplicaStatus,
                                     Workload, WorkloadStatus)
from crater_app.domain.jobs import JobPhase
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


_PHASES = {"Pending": JobPhase.QUEUED, "Running": JobPhase.RUNNING, "Stopping": JobPhase.STOPPING,
           "Succeeded": JobPhase.SUCCEEDED, "Failed": JobPhase.FAILED, "Cancelled": JobPhase.CANCELLED}
_FINAL = ("Succeeded", "Failed", "Cancelled")


@dataclass
class _Record:
    workload: Workload
    state: str  # the fake's own word (raw_state)
    rev: int
    fields: dict = field(default_factory=dict)  # the other WorkloadStatus fields
    devices: tuple[int, ...] = ()  # the whole gang's, in task order
    logs: dict[tuple[str, int], list[str]] = field(default_factory=dict)  # (task, replica) -> lines
    stopping: str | None = None  # the stop's message while it is Stopping
    final: tuple[str, str, str, str, dict] | None = None  # (state, reason, message, code, args) once stopped


def _split(workload: Workload, devices: tuple[int, ...], kinds: dict[int, str]) -> list[Placement]:
    """The gang's ``devices`` handed to its replicas in task order, each taking its own count per resource."""
    left = list(devices)
    out = []
    for task in workload.tasks:
        for i in range(task.replicas):
            mine = []
            for resource, count in task.resources.accelerators.items():
                taken = [d for d in left if kinds.get(d) == resource][:count]
                mine += taken
                left = [d for d in left if d not in taken]
            out.append(Placement(task.name, i, "fake-node", tuple(sorted(mine))))
    return out


class FakeBackend:
    """In-memory backend with one node (``fake-node``) and the given devices."""

    name = "fake"
    capabilities = frozenset({ENFORCES_DEADLINES})

    def __init__(self, devices: list[Device], cpu_m: int = 64000, memory_bytes: int = 256 * GiB,
                 clock: Callable[[], float] = time.time) -> None:
        self.devices = tuple(devices)
        self.cpu_m, self.memory_bytes = cpu_m, memory_bytes
        self.clock = clock
        self._lock = threading.RLock()
        self._records: dict[str, _Record] = {}
        self._rev = 0
        self._id = uuid.uuid4().hex[:12]
        self.created: list[str] = []  # every create() call, in order (idempotency checks)
        self.adopted = 0
        self.queues: dict[str, tuple] = {}  # ensure_queue() calls: project -> (quota, shares)

    # -- helpers -------------------------------------------------------------------------------
    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), timezone.utc)

    def _set(self, uid: str, state: str | None = None, devices: tuple[int, ...] | None = None, **changes) -> None:
        self._rev += 1
        rec = self._records[uid]
        rec.rev = self._rev
        if state is not None:
            rec.state = state
        if devices is not None:
            rec.devices = devices
        rec.fields.update(changes)

    def _status(self, rec: _Record) -> WorkloadStatus:
        started = rec.fields.get("started_at") is not None
        placements = tuple(_split(rec.workload, rec.devices, {d.index: d.resource for d in self.devices})) \
            if started else ()
        final = rec.state in _FINAL
        replicas = tuple(ReplicaStatus(
            task=t.name, replica=i, node="fake-node" if started else "",
            phase=("Running" if not final else "Succeeded" if rec.state == "Succeeded" else "Failed") if started
            else "Pending",
            exit_code=rec.fields.get("exit_code") if final and started else None,
        ) for t in rec.workload.tasks for i in range(t.replicas))
        return WorkloadStatus(uid=rec.workload.uid, phase=_PHASES.get(rec.state), raw_state=rec.state,
                              attempt=rec.workload.attempt, placements=placements, replicas=replicas,
                              **{"reason": "", "message": "", **rec.fields})

    # -- ClusterBackend ------------------------------------------------------------------------
    def inventory(self) -> list[NodeInventory]:
        with self._lock:
            running = [r for r in self._records.values() if r.state in ("Running", "Stopping")]
            allocations = {d: r.workload.uid for r in running for d in r.devices}
            return [NodeInventory(
                name="fake-node", cpu_m=self.cpu_m, memory_bytes=self.memory_bytes, devices=self.devices,
                source="fake", allocations=allocations,
                cpu_m_allocated=sum(r.workload.resources.cpu_m for r in running),
                memory_bytes_allocated=sum(r.workload.resources.memory_bytes for r in running),
            )]

    def capacity(self) -> list[NodeInventory]:
        return [NodeInventory(name="fake-node", cpu_m=self.cpu_m, memory_bytes=self.memory_bytes,
                              devices=self.devices, source="fake")]

    def create(self, workload: Workload) -> None:
        with self._lock:
            self.created.append(workload.uid)
            old = self._records.get(workload.uid)
            if old is not None and (workload.attempt <= old.workload.attempt or old.state not in _FINAL):
                return
            self._rev += 1
            self._records[workload.uid] = _Record(
                workload, "Pending", self._rev,
                {"reason": "Queued", "message": "waiting for placement", "code": "placement.pending"},
                logs=old.logs if old is not None else {})

    def create_many(self, workloads: list[Workload]) -> None:
        for workload in workloads:
            self.create(workload)

    def cancel(self, uid: str, reason: str, *, code: str = "", args: dict | None = None) -> None:
        with self._lock:
            rec = self._records[uid]  # KeyError for unknown uids, as the contract says
            if rec.state == "Pending":
                self._set(uid, state="Cancelled", reason="Cancelled", message=reason, finished_at=self._now(),
                          code=code, args=dict(args or {}))
            elif rec.state == "Running" and rec.stopping is None:
                self._stop(uid, f"stopping: {reason}", ("Cancelled", "Cancelled", reason, code, dict(args or {})))

    def _stop(self, uid: str, message: str, final: tuple[str, str, str, str, dict]) -> None:
        rec = self._records[uid]
        rec.stopping, rec.final = message, final
        self._set(uid, state="Stopping", message=message, code="", args={})

    def extend(self, uid: str, max_runtime_s: int) -> None:
        with self._lock:
            rec = self._records[uid]  # KeyError for unknown uids, as the contract says
            if rec.state in ("Pending", "Running"):
                rec.workload = replace(rec.workload, max_runtime_s=max_runtime_s)

    def changes(self, cursor: str = "", limit: int = 1000) -> Changes:
        with self._lock:
            instance, _, rev = cursor.rpartition(":")
            if cursor == "":
                since = 0
            elif instance == self._id and rev.isdigit() and int(rev) <= self._rev:
                since = int(rev)
            else:
                return Changes((), f"{self._id}:{self._rev}", relist=True)
            found = sorted((r for r in self._records.values() if r.rev > since), key=lambda r: r.rev)[:limit]
            return Changes(tuple(self._status(r) for r in found), f"{self._id}:{found[-1].rev if found else since}")

    def list_workloads(self) -> list[WorkloadStatus]:
        with self._lock:
            return [self._status(r) for r in sorted(self._records.values(), key=lambda r: r.rev)]

    def status(self, uid: str) -> WorkloadStatus | None:
        with self._lock:
            rec = self._records.get(uid)
            return None if rec is None else self._status(rec)

    def read_logs(self, uid: str, tail_bytes: int = 65536, *, task: str | None = None, replica: int = 0) -> str:
        with self._lock:
            rec = self._records.get(uid)
            if rec is None:
                return ""
            name = rec.workload.tasks[0].name if task is None else task
            text = "".join(line + "\n" for line in rec.logs.get((name, replica), []))
        return text[-tail_bytes:]

    def ensure_queue(self, project: str, quota, shares=None) -> None:
        self.queues[project] = (quota, dict(shares or {}))

    def manifests(self, uid: str) -> list[dict]:
        return []

    def tick(self) -> None:
        with self._lock:
            now = self.clock()
            for uid, rec in list(self._records.items()):
                if rec.state == "Stopping":  # its processes have exited: it ends as the stop said
                    state, reason, message, code, args = rec.final or ("Cancelled", "Cancelled", "cancelled", "", {})
                    self._set(uid, state=state, reason=reason, message=message, exit_code=143, exit_signal=15,
                              finished_at=self._now(), code=code, args=args)
                    continue
                if rec.state != "Running":
                    continue
                runs = [_simulate(t.argv) for t in rec.workload.tasks]
                seconds = max(r[1] for r in runs)
                code = next((r[2] for r in runs if r[2] != 0), 0)
                started = rec.fields["started_at"].timestamp()
                if rec.workload.max_runtime_s and now - started >= rec.workload.max_runtime_s:
                    message = f"max_runtime of {rec.workload.max_runtime_s} s exceeded"
                    self._stop(uid, f"stopping: {message}", ("Failed", "DeadlineExceeded", message, "", {}))
                elif now - started >= seconds:
                    self._set(uid, state="Succeeded" if code == 0 else "Failed",
                              reason="Completed" if code == 0 else "Error", message=f"exited with code {code}",
                              exit_code=code, finished_at=self._now())
            self._place()

    def _place(self) -> None:
        running = [r for r in self._records.values() if r.state in ("Running", "Stopping")]
        held = {d for r in running for d in r.devices}
        by_index = {d.index: FreeDevice(d.index, d.resource, d.model) for d in self.devices}
        now = self._now()
        holding = [Running(
            r.workload.uid, r.workload.resources.cpu_m, r.workload.resources.memory_bytes,
            tuple(by_index[i] for i in r.devices),
            now if r.state == "Stopping" else (
                max(r.fields["started_at"] + timedelta(seconds=r.workload.max_runtime_s), now)
                if r.workload.max_runtime_s else None),
        ) for r in running]
        capacity = Capacity(
            cpu_m=self.cpu_m - sum(r.workload.resources.cpu_m for r in running),
            memory_bytes=self.memory_bytes - sum(r.workload.resources.memory_bytes for r in running),
            devices=tuple(FreeDevice(d.index, d.resource, d.model) for d in self.devices if d.index not in held),
        )
        pending = [r for r in self._records.values() if r.state == "Pending"]
        decision = place([
            Request(uid=r.workload.uid, priority=r.workload.priority, created_at=r.workload.created_at,
                    cpu_m=r.workload.resources.cpu_m, memory_bytes=r.workload.resources.memory_bytes,
                    accelerators=dict(r.workload.resources.accelerators), model=r.workload.accelerator_model,
                    max_runtime_s=r.workload.max_runtime_s)
            for r in pending
        ], capacity, holding, now)
        for uid, message in decision.waiting.items():
            if self._records[uid].fields.get("message") != message:
                code, args = decision.reasons[uid]
                self._set(uid, message=message, code=code, args=args)
        for uid, devices in decision.placed.items():
            rec = self._records[uid]
            for t in rec.workload.tasks:
                for i in range(t.replicas):
                    rec.logs.setdefault((t.name, i), []).extend(_simulate(t.argv)[0])
            rec.stopping = rec.final = None
            self._set(uid, state="Running", reason="Started", message="started on fake-node", devices=devices,
                      started_at=self._now(), finished_at=None, exit_code=None, exit_signal=None, code="", args={})

    def adopt(self) -> None:
        self.adopted += 1

    # -- test hooks ------------------------------------------------------------------------------
    def set_state(self, uid: str, state: str, reason: str = "", message: str = "") -> None:
        """Report ``state`` (any word, e.g. ``Evicted``: a phase of ``None``) for ``uid`` as the next change."""
        with self._lock:
            self._set(uid, state=state, reason=reason, message=message, code="", args={})

    def forget(self, uid: str) -> None:
        """Lose every trace of ``uid``."""
        with self._lock:
            self._records.pop(uid, None)
