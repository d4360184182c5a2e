"""An in-memory :class:`~crater_app.cluster.base.ClusterBackend`: the boundary mock for service tests.

It keeps the backend contract (idempotent create, a new run of a finished uid for a higher ``attempt``,
Pending -> Running [-> Stopping] -> Succeeded/Failed/Cancelled mapped to Crater's phases, a ``changes`` watch with
an opaque cursor ``"<instance id>:<rev>"`` (a cursor of another instance or a garbled one asks for a re-list), gang
placement with the same :func:`place` the local backend uses - backfill and coded reasons included) without
starting processes. A stop (cancel, deadline) reports ``Stopping`` with the devices still held, and the final
state at the next :meth:`tick`. Commands are simulated: ``["sh", "-c", "echo hi; sleep 2; exit 3"]`` logs ``hi``,
runs 2 seconds and exits 3 (statements ``echo``, ``sleep N``, ``exit K``; ``$NAME``/``${NAME}`` in an ``echo`` are
the replica's environment; anything else runs instantly with 0).

Workloads of several replicas are simulated replica by replica, as the local backend runs them: the gang is placed as
one request and starts whole, its devices split per replica in task order, each replica gets the rendezvous variables
of :mod:`crater_app.domain.rendezvous` (every host ``127.0.0.1``) and its own log, and the gang ends as
:func:`crater_app.domain.gang.decide` says, with the same codes (``replicas.*``) as the local backend.

Test hooks: :meth:`set_state` reports an arbitrary backend state (e.g. ``Evicted``); :meth:`forget` loses a
workload, as a wiped cluster would; :meth:`keep_manifests` makes it a backend that keeps objects (``MANIFESTS``),
as the Kubernetes backend does, with the given objects for a uid.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Callable

from crater_app.cluster.base import (ENFORCES_DEADLINES, MANIFESTS, Changes, Device, NodeInventory, Placement, ReplicaStatus,
                                     Workload, WorkloadStatus)
from crater_app.domain.gang import COMPLETE, RESTART, WAIT, decide
from crater_app.domain.jobs import JobPhase
from crater_app.domain.placement import Capacity, FreeDevice, Request, Running, place
from crater_app.domain.rendezvous import PYTORCH_DEFAULT_PORT, loopback_hosts, replica_env

GiB = 1024**3


def _simulate(command: tuple[str, ...], env: dict[str, str] | None = None) -> tuple[list[str], float, int]:
    """(log lines, run seconds, exit code) of a command run with ``env``."""
    env = env or {}
    if len(command) == 3 and command[0] == "sh" and command[1] == "-c":
        lines, seconds, code = [], 0.0, 0
        for stmt in (s.strip() for s in command[2].split(";")):
            if stmt.startswith("echo "):
                text = stmt[5:].strip("'\"")
                lines.append(re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m.group(1), ""), text))
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
    ended: dict[tuple[str, int], int] = field(default_factory=dict)  # replicas that have ended -> exit code
    stopped: dict[tuple[str, int], str] = field(default_factory=dict)  # replicas Crater stopped -> why (reason)
    stop_word: str = ""  # while Stopping: the reason its replicas still running will be Stopped with
    run_started: float = 0.0  # when the gang's replicas (last) started, epoch seconds
    restarts: int = 0
    exit_code: int | None = None  # the final status' exit code (a stopped gang's, decided when it was stopped)

    def replicas(self) -> list[tuple[str, int]]:
        return [(t.name, i) for t in self.workload.tasks for i in range(t.replicas)]

    def env(self, task: str, index: int) -> dict[str, str]:
        shape = [(t.name, t.replicas) for t in self.workload.tasks]
        ender = next((t.name for t in self.workload.tasks if t.ends_job), None)
        return replica_env(self.workload.kind, shape, task, index, loopback_hosts(shape),
                           master_port=PYTORCH_DEFAULT_PORT, ends_job=ender)

    def run(self, task: str, index: int) -> tuple[list[str], float, int]:
        spec = next(t for t in self.workload.tasks if t.name == task)
        return _simulate(spec.argv, {**spec.env, **self.env(task, index)})


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
    """In-memory backend with one node (``fake-node``) and the given devices; the node's labels are the kubelet's
    standard ones and ``labels`` (``fake.labels`` may be changed by a test)."""

    name = "fake"
    capabilities = frozenset({ENFORCES_DEADLINES})

    def __init__(self, devices: list[Device], cpu_m: int = 64000, memory_bytes: int = 256 * GiB,
                 clock: Callable[[], float] = time.time, labels: dict[str, str] | None = None) -> None:
        self.devices = tuple(devices)
        self.labels = {"kubernetes.io/hostname": "fake-node", "kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", **(labels or {})}
        self.cpu_m, self.memory_bytes = cpu_m, memory_bytes
        self.clock = clock
        self._lock = threading.RLock()
        self._records: dict[str, _Record] = {}
        self._rev = 0
        self._id = uuid.uuid4().hex[:12]
        self.created: list[str] = []  # every create() call, in order (idempotency checks)
        self.adopted = 0
        self.queues: dict[str, tuple] = {}  # ensure_queue() calls: project -> (quota, shares)
        self._manifests: dict[str, list[dict]] = {}  # keep_manifests(): uid -> objects

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
        replicas = tuple(ReplicaStatus(
            task=t.name, replica=i, node="fake-node" if started else "",
            phase=("Pending" if not started else "Running" if (t.name, i) not in rec.ended
                   else "Stopped" if (t.name, i) in rec.stopped
                   else "Succeeded" if rec.ended[(t.name, i)] == 0 else "Failed"),
            exit_code=rec.ended.get((t.name, i)), reason=rec.stopped.get((t.name, i), ""), restarts=rec.restarts,
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
                labels=dict(self.labels),
            )]

    def capacity(self) -> list[NodeInventory]:
        return [NodeInventory(name="fake-node", cpu_m=self.cpu_m, memory_bytes=self.memory_bytes,
                              devices=self.devices, source="fake", labels=dict(self.labels))]

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
                self._stop(uid, f"stopping: {reason}", ("Cancelled", "Cancelled", reason, code, dict(args or {})),
                           "Cancelled")

    def _stop(self, uid: str, message: str, final: tuple[str, str, str, str, dict], word: str) -> None:
        """Stop ``uid``'s replicas still running (``word``: the reason they will be ``Stopped`` with)."""
        rec = self._records[uid]
        rec.stopping, rec.final, rec.stop_word = message, final, word
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
        with self._lock:
            if MANIFESTS not in self.capabilities or uid not in self._records:
                return []
            return [dict(o) for o in self._manifests.get(uid, [])]

    def tick(self) -> None:
        with self._lock:
            now = self.clock()
            for uid, rec in list(self._records.items()):
                if rec.state == "Stopping":  # its processes have exited: it ends as the stop said
                    state, reason, message, code, args = rec.final or ("Cancelled", "Cancelled", "cancelled", "", {})
                    for key in rec.replicas():
                        if key not in rec.ended:
                            rec.ended[key], rec.stopped[key] = 143, rec.stop_word
                    exit_code = rec.exit_code if rec.exit_code is not None else 143
                    self._set(uid, state=state, reason=reason, message=message, exit_code=exit_code,
                              exit_signal=15 if exit_code == 143 else None, finished_at=self._now(), code=code,
                              args=args)
                    continue
                if rec.state != "Running":
                    continue
                if rec.workload.max_runtime_s and now - rec.fields["started_at"].timestamp() >= \
                        rec.workload.max_runtime_s:
                    message = f"max_runtime of {rec.workload.max_runtime_s} s exceeded"
                    self._stop(uid, f"stopping: {message}", ("Failed", "DeadlineExceeded", message, "", {}),
                               "DeadlineExceeded")
                    continue
                newly = False
                for key in rec.replicas():
                    _, seconds, code = rec.run(*key)
                    if key not in rec.ended and now - rec.run_started >= seconds:
                        rec.ended[key], newly = code, True
                if newly:
                    self._gang_moves(uid, rec)
            self._place()

    def _gang_moves(self, uid: str, rec: _Record) -> None:
        """Some replicas of running ``rec`` have ended: the gang rule, as the local backend applies it."""
        w = rec.workload
        verdict = decide([(t.name, t.replicas, t.ends_job) for t in w.tasks], rec.ended,
                         restart_policy=w.restart_policy, max_retry=w.max_retry, restarts=rec.restarts,
                         min_available=w.min_available)
        if w.replica_count == 1 and verdict.action != RESTART:  # one replica: as a single-command job
            code = rec.ended[rec.replicas()[0]]
            self._set(uid, state="Succeeded" if code == 0 else "Failed", reason="Completed" if code == 0 else "Error",
                      message=f"exited with code {code}", exit_code=code, finished_at=self._now())
            return
        if verdict.action == WAIT:
            self._set(uid)  # the replicas' statuses changed
            return
        task, index = verdict.replica or ("", 0)
        if verdict.action == RESTART:
            rec.restarts += 1
            rec.ended, rec.stopped, rec.run_started = {}, {}, self.clock()
            why = f"replica {task}-{index} exited with code {verdict.exit_code}" if verdict.replica \
                else "too few replicas succeeded"
            for key in rec.replicas():
                rec.logs.setdefault(key, []).append(f"--- crater: restart {rec.restarts} of {w.max_retry} ({why}) ---")
                rec.logs[key].extend(rec.run(*key)[0])
            self._set(uid, reason="Restarted", code="replicas.restarted", message="every replica started again",
                      args={"restart": rec.restarts, "max_retry": w.max_retry, "task": task, "replica": index,
                            "exit_code": verdict.exit_code})
            return
        ender = next((t.name for t in w.tasks if t.ends_job), None)
        if verdict.action == COMPLETE and verdict.succeeded:
            final = ("Succeeded", "Completed", "completed", "replicas.task_completed", {"task": ender}) if ender \
                else ("Succeeded", "Completed", "completed", "replicas.completed",
                      {"replicas": w.replica_count, "succeeded": sum(1 for c in rec.ended.values() if c == 0)})
            rec.exit_code = 0
        else:
            final = ("Failed", "Error", f"replica {task}-{index} failed", "replicas.failed",
                     {"task": task, "replica": index, "exit_code": verdict.exit_code})
            rec.exit_code = verdict.exit_code
        if len(rec.ended) == w.replica_count:
            state, reason, message, code, args = final
            self._set(uid, state=state, reason=reason, message=message, exit_code=rec.exit_code,
                      finished_at=self._now(), code=code, args=args)
        else:
            self._stop(uid, f"stopping: {final[2]}", final,
                       "GangEnded" if verdict.action == COMPLETE and verdict.succeeded else "ReplicaFailed")

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
            for key in rec.replicas():
                rec.logs.setdefault(key, []).extend(rec.run(*key)[0])
            rec.stopping = rec.final = rec.exit_code = None
            rec.ended, rec.stopped, rec.run_started, rec.restarts = {}, {}, self.clock(), 0
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
            self._manifests.pop(uid, None)

    def keep_manifests(self, uid: str, objects: list[dict]) -> None:
        """From now on this backend has ``MANIFESTS`` and gives ``objects`` as the objects made for ``uid`` (while
        it knows ``uid``; ``[]`` for the others)."""
        with self._lock:
            self.capabilities = type(self).capabilities | {MANIFESTS}
            self._manifests[uid] = [dict(o) for o in objects]
