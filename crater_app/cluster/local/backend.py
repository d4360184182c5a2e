"""The embedded *local* backend: each workload runs as a process group on this machine.

Layout per workload: ``<data_dir>/jobs/<uid>/`` with ``work/`` (the working directory shared by its replicas),
``output.log`` (stdout+stderr) and ``exit_code`` (written by :mod:`crater_app.cluster.local.runner`) for a workload of
one replica, ``logs/<task>-<index>.log`` and ``.exit`` per replica of a larger one, and ``hosts/`` (rendezvous host
files; :mod:`~crater_app.cluster.local.replicas`). A gang starts whole or not at all
(:mod:`~crater_app.cluster.local.gangs`) and is supervised replica by replica
(:mod:`~crater_app.cluster.local.supervisor`). State: the store (:mod:`~crater_app.cluster.local.store`). Limits: a
cgroup per replica where Crater can make one (:mod:`~crater_app.cluster.local.cgroups`), else ``RLIMIT_DATA`` for
memory. Identity: an OS account per Crater user
when Crater runs as root (:mod:`~crater_app.cluster.local.isolation`, :mod:`~crater_app.cluster.local.accounts`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import sqlite3
import time
from pathlib import Path
from typing import Callable, ContextManager, Mapping

from crater_app.cluster.base import (ENFORCES_DEADLINES, HOST_PROCESSES, Changes, Device, NodeInventory, Workload,
                                     WorkloadStatus)
from crater_app.cluster.local import cgroups as cg
from crater_app.cluster.local import specs
from crater_app.cluster.local.accounts import DEFAULT_PREFIX, DEFAULT_UID_RANGE, Accounts, tools_available
from crater_app.cluster.local.inventory import discover, host_capacity, node_labels
from crater_app.cluster.local.isolation import ISOLATED, check_mode, closed_ancestors, harden_data_dir, trust_model
from crater_app.cluster.local.launch import Launcher, own_account
from crater_app.cluster.local.outcomes import say
from crater_app.cluster.local.placement import Placer
from crater_app.cluster.local.processes import log_tail
from crater_app.cluster.local.store import FINAL, HOLDING, PENDING, STOPPING, Store, replica_records
from crater_app.cluster.local.supervisor import Supervisor, signal_all
from crater_app.domain.batching import GroupCommit
from crater_app.domain.errors import InvalidInput
from crater_app.domain.quota import Quota

log = logging.getLogger(__name__)

DEFAULT_PIDS_MAX = 16384
PIDS_MAX_LIMIT = 4194304  # the kernel's largest pid_max on 64-bit Linux (PID_MAX_LIMIT)
_PARENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*")
_IN_HOLDING = f"state IN ({','.join('?' * len(HOLDING))})"


class LocalBackend:
    """:class:`~crater_app.cluster.base.ClusterBackend` running workloads as local process groups.

    Args:
        data_dir: Crater's data folder (state DB, job folders).
        local_gpus: ``CRATER_LOCAL_GPUS`` value for machines without NVML devices.
        cancel_grace_s: seconds between SIGTERM and SIGKILL.
        devices: explicit device list (tests); ``None`` discovers them.
        clock: seconds since the epoch (tests may pass a fake).
        isolation: ``auto``/``on``/``off`` (``CRATER_LOCAL_ISOLATION``; the application passes its setting, default
            ``auto``): jobs as OS accounts of their own where Crater is root.
        cgroups: ``auto``/``on``/``off`` (``CRATER_LOCAL_CGROUPS``): a cgroup per workload under
            ``cgroup_root``/<controller>/``cgroup_parent``; ``pids_max`` processes per job (0: no limit).
        uid_range, account_prefix: the job accounts' uids and name prefix.
        store_turn: given the state database's path, the context manager its writers take before each write
            transaction (the application passes a cross-process file lock, for several web workers); default none.

    Raises:
        InvalidInput: a setting out of range, or ``on`` for something this machine does not offer.
    """

    name = "local"
    capabilities = frozenset({HOST_PROCESSES, ENFORCES_DEADLINES})

    def __init__(
        self, data_dir: Path, local_gpus: str = "", cancel_grace_s: float = 10.0, devices: list[Device] | None = None,
        clock: Callable[[], float] = time.time, *, isolation: str = "off", cgroups: str = "auto",
        cgroup_root: Path = Path("/sys/fs/cgroup"), cgroup_parent: str = "crater", pids_max: int = DEFAULT_PIDS_MAX,
        uid_range: tuple[int, int] = DEFAULT_UID_RANGE, account_prefix: str = DEFAULT_PREFIX,
        store_turn: Callable[[Path], ContextManager] | None = None,
    ) -> None:
        check_mode(cgroups, "CRATER_LOCAL_CGROUPS")
        if not _PARENT.fullmatch(cgroup_parent) or ".." in cgroup_parent.split("/"):
            raise InvalidInput("local.cgroup_parent", "CRATER_LOCAL_CGROUP_PARENT", value=cgroup_parent)
        if not 0 <= pids_max <= PIDS_MAX_LIMIT:
            raise InvalidInput("local.pids_max", "CRATER_LOCAL_PIDS_MAX", value=pids_max, min=0, max=PIDS_MAX_LIMIT)
        euid = os.geteuid()
        self.trust = trust_model(isolation, euid, euid == 0 and tools_available())
        self.data_dir = Path(data_dir).resolve()
        self.accounts = Accounts(str(self.data_dir), uid_range, account_prefix)
        if cgroups == "off":
            self.cgroups = cg.unavailable("off", cgroup_parent)
        else:
            self.cgroups = cg.prepare(cg.detect(cgroup_root, cgroup_parent))
            if cgroups == "on" and self.cgroups.version is None:
                raise InvalidInput("local.cgroups_unavailable", "CRATER_LOCAL_CGROUPS", reason=self.cgroups.reason,
                                   root=str(cgroup_root))
        self.jobs_dir = self.data_dir / "jobs"
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        self.pids_max = pids_max
        if devices is None:
            devices, self.device_source = discover(local_gpus)
        else:
            self.device_source = "explicit"
        self.devices: tuple[Device, ...] = tuple(devices)
        self.node_name, self.cpu_m, self.memory_bytes = host_capacity()
        self.labels = node_labels(self.node_name)
        self.cancel_grace_s = cancel_grace_s
        self.clock = clock
        self._launcher = Launcher(self.trust, self.accounts, self.cgroups, pids_max, own_account(euid))
        self._creates = GroupCommit()
        self._capacity: list[NodeInventory] | None = None
        store = self.data_dir / "local" / "backend.db"
        self._store = Store(store, store_turn(store) if store_turn is not None else None, node=self.node_name)
        self._supervisor = Supervisor(self._store, self._launcher, self.job_dir, self.node_name,
                                      {d.index: d.resource for d in self.devices}, self.trust, self.clock,
                                      cancel_grace_s, self.cgroups)
        self._placer = Placer(self._store, self.cpu_m, self.memory_bytes, self.devices, self._supervisor.start,
                              self.clock, stop_grace_s=cancel_grace_s)
        self._harden()
        if self.trust == ISOLATED:
            _warn_closed_ancestors(self.data_dir)

    # -- for tests and tools that reach into the store ------------------------------------------
    @property
    def _conn(self) -> sqlite3.Connection:
        return self._store.conn

    @property
    def _lock(self):
        return self._store.lock

    def _tx(self):
        return self._store.tx()

    def close(self) -> None:
        """Close the store (running jobs go on)."""
        self._store.close()

    def job_dir(self, uid: str) -> Path:
        """Folder of workload ``uid`` (``work/``, ``output.log``, ``exit_code``)."""
        return self.jobs_dir / uid

    @property
    def enforcement(self) -> dict[str, str]:
        """Resource -> how its limit is enforced on this machine (``cgroup v1``/``cgroup v2``, memory falls back to
        ``RLIMIT_DATA``); resources without enforcement are absent."""
        out = {"memory": self.cgroups.mechanism("memory") or "RLIMIT_DATA"}
        if self.cgroups.mechanism("cpu"):
            out["cpu"] = self.cgroups.mechanism("cpu")
        if self.pids_max and self.cgroups.mechanism("pids"):
            out["pids"] = self.cgroups.mechanism("pids")
        return out

    # -- ClusterBackend ------------------------------------------------------------------------
    def inventory(self) -> list[NodeInventory]:
        """One node: this machine, with the devices held by running and stopping workloads, and Kubernetes' standard
        labels (:func:`~crater_app.cluster.local.inventory.node_labels`)."""
        rows = self._store.read(f"SELECT uid, devices, cpu_m, memory_bytes FROM workloads WHERE {_IN_HOLDING}",
                                HOLDING)
        allocations = {index: uid for uid, devices, _, _ in rows for index in json.loads(devices)}
        return [NodeInventory(
            name=self.node_name, cpu_m=self.cpu_m, memory_bytes=self.memory_bytes, devices=self.devices,
            source=self.device_source, allocations=allocations, cpu_m_allocated=sum(r[2] for r in rows),
            memory_bytes_allocated=sum(r[3] for r in rows), enforcement=self.enforcement, isolation=self.trust,
            labels=dict(self.labels),
        )]

    def capacity(self) -> list[NodeInventory]:
        """:meth:`inventory` without the allocations (no device held, nothing allocated), without reading the store:
        what a submission checks a request against (whether it could ever fit) and admission's machine capacity.
        This machine's CPU, memory and devices are found once, when the backend starts."""
        nodes = self._capacity
        if nodes is None:
            nodes = self._capacity = [NodeInventory(
                name=self.node_name, cpu_m=self.cpu_m, memory_bytes=self.memory_bytes, devices=self.devices,
                source=self.device_source, allocations={}, cpu_m_allocated=0, memory_bytes_allocated=0,
                enforcement=self.enforcement, isolation=self.trust, labels=dict(self.labels),
            )]
        return nodes

    def create(self, workload: Workload) -> None:
        """Queue ``workload`` as ``Pending`` (idempotent on ``uid``)."""
        # Concurrent creates (e.g. many submissions at once) share one transaction.
        self._creates.run(self._row(workload), self._insert_workloads)

    def create_many(self, workloads: list[Workload]) -> None:
        """:meth:`create` for several workloads in one transaction (batched submissions)."""
        self._insert_workloads([self._row(w) for w in workloads])

    @staticmethod
    def _row(workload: Workload) -> tuple:
        waiting = say("local.waiting_for_placement")
        resources = workload.resources  # the whole gang's: placed as one request
        return (
            workload.uid, json.dumps(specs.encode(workload)), workload.priority, workload.created_at.timestamp(),
            resources.cpu_m, resources.memory_bytes, json.dumps(resources.accelerators), workload.accelerator_model,
            workload.max_runtime_s, PENDING, "Queued", waiting["message"], waiting["code"], waiting["args"],
            workload.attempt, json.dumps(specs.initial_replicas(workload)),
        )

    def _insert_workloads(self, rows: list[tuple]) -> list[None]:
        # A known uid is left alone, unless this is its next attempt and its last run is final: then it runs again
        # (same folder and log) as Pending with a fresh status (ClusterBackend.create).
        final = ",".join("?" * len(FINAL))
        with self._store.tx() as conn:
            rev = self._store.next_rev(conn)
            conn.executemany(
                "INSERT INTO workloads (uid, spec, priority, created_at, cpu_m, memory_bytes, accelerators,"
                " model, max_runtime_s, state, reason, message, code, args, attempt, replicas, rev)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(uid) DO UPDATE SET"
                " spec = excluded.spec, max_runtime_s = excluded.max_runtime_s, state = excluded.state,"
                " replicas = excluded.replicas, cpu_m = excluded.cpu_m, memory_bytes = excluded.memory_bytes,"
                " accelerators = excluded.accelerators, model = excluded.model,"
                " reason = excluded.reason, message = excluded.message, code = excluded.code, args = excluded.args,"
                " attempt = excluded.attempt, rev = excluded.rev, exit_code = NULL, exit_signal = NULL,"
                " devices = '[]', pid = NULL, pid_start = NULL, started_at = NULL, finished_at = NULL,"
                " stop_reason = NULL, stop_message = NULL, stop_code = NULL, stop_args = NULL, term_sent_at = NULL,"
                " limits = '{}'"
                f" WHERE workloads.attempt < excluded.attempt AND workloads.state IN ({final})",
                [(*row, rev + i, *FINAL) for i, row in enumerate(rows)],
            )
        return [None] * len(rows)

    def cancel(self, uid: str, reason: str, *, code: str = "", args: dict | None = None) -> None:
        """Cancel: a pending workload ends at once; a running one is ``Stopping`` (SIGTERM to each replica's process
        group, SIGKILL after the grace) until the last process of its last replica has exited. A stopping one is left to finish. The final
        status carries ``code``/``args`` (``event.<code>``, e.g. ``job.cancelled_by`` with the ``user``) and
        ``reason`` as its English message; without a code, ``local.cancelled_because`` with ``reason``.

        Raises:
            KeyError: unknown ``uid``.
        """
        with self._store.tx() as conn:
            replicas = self._supervisor.cancel(conn, uid, reason, code, dict(args or {}))
        if replicas:
            signal_all(replicas, signal.SIGTERM)

    def extend(self, uid: str, max_runtime_s: int) -> None:
        """Move the deadline: ``max_runtime_s`` seconds from the workload's start (the column :meth:`tick` checks
        each round). Finished workloads and those already stopping (cancelled, or past their old deadline) keep
        theirs.

        Raises:
            KeyError: unknown ``uid``.
        """
        with self._store.tx() as conn:
            row = conn.execute("SELECT state, term_sent_at FROM workloads WHERE uid = ?", (uid,)).fetchone()
            if row is None:
                raise KeyError(uid)
            state, term_sent = row
            if state in FINAL or state == STOPPING or term_sent is not None:
                return
            self._store.update(conn, uid, max_runtime_s=max_runtime_s)  # a new revision: placement runs again
        self._placer.forget(uid)

    def changes(self, cursor: str = "", limit: int = 1000) -> Changes:
        """Statuses changed after ``cursor``, in change order (at most ``limit``). The cursor is
        ``"<store id>:<revision>"``; one of another store file (replaced or wiped), ahead of this one, or garbled
        answers ``relist`` (:meth:`~crater_app.cluster.local.store.Store.changes`)."""
        return self._store.changes(cursor, limit)

    def list_workloads(self) -> list[WorkloadStatus]:
        """Every workload's current status (one read of the store)."""
        return self._store.list_all()

    def status(self, uid: str) -> WorkloadStatus | None:
        """Current status of ``uid`` or ``None``."""
        return self._store.status(uid)

    def read_logs(self, uid: str, tail_bytes: int = 65536, *, task: str | None = None, replica: int = 0) -> str:
        """Last ``tail_bytes`` of one replica's log (:func:`~crater_app.cluster.local.processes.log_tail`):
        ``<job folder>/output.log`` for a workload of one replica, ``logs/<task>-<replica>.log`` for the replicas of
        a larger one; ``""`` for an unknown task or replica."""
        path = self._log_path(uid, task, replica)
        return "" if path is None else log_tail(path, tail_bytes)

    def _log_path(self, uid: str, task: str | None, replica: int) -> Path | None:
        found = self._store.read("SELECT replicas FROM workloads WHERE uid = ?", (uid,))
        records = replica_records(found[0][0] if found else None)
        first = records[0]["task"]
        for record in records:
            if record["task"] == (first if task is None else task) and record["replica"] == replica:
                return self.job_dir(uid) / record.get("log", "output.log")
        return None

    def ensure_queue(self, project: str, quota: Quota, shares: Mapping[str, Quota] | None = None) -> None:
        """Nothing: this backend keeps no queue object (no ``QUEUES`` capability; Crater's admission enforces the
        project's quota)."""

    def manifests(self, uid: str) -> list[dict]:
        """``[]``: this backend makes no Kubernetes objects (no ``MANIFESTS`` capability)."""
        return []

    def tick(self) -> None:
        """Reap exits, enforce ``max_runtime`` and cancellation grace, remove finished cgroups, then place queued
        workloads."""
        self._supervisor.watch()
        self._supervisor.remove_left_cgroups()
        self._placer.round()

    def adopt(self) -> None:
        """Re-adopt workloads left running (or stopping) by an earlier web process (each replica's runner: same pid
        and start time), or record the end of the replicas that have gone (``ProcessLost`` unless their exit file
        was written) and end the workload as the gang rule says; remove the cgroups a crash left behind (of
        finished workloads, and earlier runs' of pending ones); set the data folder's modes again (isolation)."""
        self._harden()
        self._supervisor.watch()  # a replica no process of this one started is watched by its pid and start time
        self._supervisor.sweep_cgroups()

    # -- internals -----------------------------------------------------------------------------
    def _harden(self) -> None:
        if self.trust == ISOLATED:
            harden_data_dir(self.data_dir, self.jobs_dir, self.data_dir / "local")


def _warn_closed_ancestors(data_dir: Path) -> None:
    """Log a warning when a folder above ``data_dir`` does not let jobs' accounts through (see
    :func:`~crater_app.cluster.local.isolation.closed_ancestors`); Crater still starts: a job's relative paths work."""
    closed = closed_ancestors(data_dir)
    if closed:
        log.warning(
            "local backend: %s cannot be traversed by other accounts (no o+x), so jobs, which run as their own OS "
            "accounts, cannot reach absolute paths under the data folder %s: the MPI hostfile and the rendezvous "
            "host files (CRATER_MPI_HOSTFILE, CRATER_HOSTS_DIR), $HOME and absolute paths into the job folder will "
            "not resolve (a job's relative paths from its working folder still work). Move the data folder to a path "
            "every account may traverse (e.g. /var/lib/crater) or run chmod o+x on %s.",
            ", ".join(map(str, closed)), data_dir, " ".join(map(str, closed)))
