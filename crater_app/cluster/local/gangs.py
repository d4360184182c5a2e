"""Starting a local workload's gang: every replica at once, or none.

The placement round places the workload as one request of all its replicas together; :func:`start_gang` splits the
devices per replica in task order (:func:`~crater_app.cluster.local.replicas.split_devices`), writes the rendezvous
host files, and starts each replica through the :class:`~crater_app.cluster.local.launch.Launcher`: its own process
group, cgroup and limits (the task's per-replica request), devices (``CUDA_VISIBLE_DEVICES``), log and exit file, and
the rendezvous variables of :mod:`crater_app.domain.rendezvous` with every host ``127.0.0.1`` and a free
``MASTER_PORT`` of this machine for a ``pytorch`` workload (two DDP jobs on one server never share one). When one
replica cannot start, those already started are killed and the error is raised: the gang does not run in part.

``min_available`` below the replica count changes nothing here: one machine starts all replicas together.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

from crater_app.cluster.local import cgroups as cg
from crater_app.cluster.local.isolation import open_log
from crater_app.cluster.local.launch import Launched, Launcher
from crater_app.cluster.local.processes import kill_tree
from crater_app.cluster.local.replicas import HOSTS_DIR, cgroup_of, files_of, free_port, split_devices
from crater_app.cluster.local.specs import TaskSpec
from crater_app.domain.rendezvous import host_files, loopback_hosts, replica_env

#: seconds a partly started gang's replicas get to exit after SIGKILL before their cgroups are left to the sweep
_CLEANUP_WAIT_S = 1.0


@dataclass(frozen=True)
class Gang:
    """A started gang: ``records`` (one per replica, in task order: :mod:`~crater_app.cluster.local.replicas`),
    ``procs`` (``(task, index)`` -> its runner) and ``first`` (the first replica's :class:`Launched`, which the
    workload's row and its ``Running`` message describe)."""

    records: list[dict]
    procs: dict[tuple[str, int], subprocess.Popen]
    first: Launched


class GangBusy(Exception):
    """A replica's cgroup of an earlier run still holds processes (``cgroup``, ``pids``: as
    :class:`~crater_app.cluster.local.cgroups.CgroupBusy`); ``name`` is that cgroup's name. Nothing was started."""

    def __init__(self, busy: cg.CgroupBusy, name: str) -> None:
        super().__init__(str(busy))
        self.cgroup, self.pids, self.name = busy.cgroup, busy.pids, name


def gang_cgroups(uid: str, tasks: list[TaskSpec]) -> list[str]:
    """The cgroup names of every replica of workload ``uid``."""
    count = sum(t.replicas for t in tasks)
    return [cgroup_of(uid, t.name, i, count) for t in tasks for i in range(t.replicas)]


def start_gang(launcher: Launcher, conn: sqlite3.Connection, folder: Path, uid: str, spec: dict,
               tasks: list[TaskSpec], devices: tuple[int, ...], kinds: dict[int, str], restarts: int = 0,
               marker: str = "") -> Gang:
    """Start every replica of workload ``uid`` (``spec`` as :mod:`~crater_app.cluster.local.specs` keeps it) in
    ``folder`` on the gang's ``devices`` (``kinds``: device index -> resource name); ``restarts`` the gang restarts
    so far (kept in each record); ``marker`` (a line, for a restart) is appended to each replica's log before it
    starts, between the earlier attempt's output and this one's.

    Raises:
        StartFailed: a replica cannot start (as :meth:`Launcher.launch`); the replicas already started are killed.
        GangBusy: an earlier run's processes still hold a replica's cgroup; the replicas already started are killed.
    """
    count = sum(t.replicas for t in tasks)
    kind = spec.get("kind") or "batch"
    shape = [(t.name, t.replicas) for t in tasks]
    ender = next((t.name for t in tasks if t.ends_job), None)
    hosts = loopback_hosts(shape)
    files = host_files(kind, shape, hosts, ender)
    hosts_dir = folder / HOSTS_DIR
    port = free_port() if kind == "pytorch" else 0
    per_replica = split_devices(tasks, devices, kinds)
    started: list[tuple[dict, Launched]] = []
    try:
        if files:
            _write_host_files(hosts_dir, files)
        k = 0
        for task in tasks:
            for i in range(task.replicas):
                log, exit_name = files_of(task.name, i, count)
                name = cgroup_of(uid, task.name, i, count)
                if marker:
                    _append(folder, log, marker)
                env = replica_env(kind, shape, task.name, i, hosts, master_port=port,
                                  hosts_dir=str(hosts_dir) if files else "", ends_job=ender)
                if files:
                    env["CRATER_HOSTS_DIR"] = str(hosts_dir)
                replica_spec = {"user": spec.get("user", ""), "command": list(task.argv), "env": task.env,
                                "working_dir": task.working_dir}
                try:
                    run = launcher.launch(conn, folder, uid, replica_spec, task.cpu_m, task.memory_bytes,
                                          per_replica[k], cgroup_name=name, log_name=log, exit_name=exit_name,
                                          rendezvous=env)
                except cg.CgroupBusy as exc:
                    raise GangBusy(exc, name) from exc
                started.append(({"task": task.name, "replica": i, "devices": list(per_replica[k]),
                                 "pid": run.proc.pid, "pid_start": run.pid_start, "limits": run.limits.to_json(),
                                 "log": log, "exit": exit_name, "restarts": restarts}, run))
                k += 1
    except BaseException:
        _kill(started)
        raise
    return Gang([record for record, _ in started],
                {(record["task"], record["replica"]): run.proc for record, run in started}, started[0][1])


def _write_host_files(folder: Path, files: dict[str, str]) -> None:
    """The rendezvous host files, readable by the job's account (0644 in a 0755 folder)."""
    folder.mkdir(mode=0o755, parents=True, exist_ok=True)
    os.chmod(folder, 0o755)
    for name, text in files.items():
        path = folder / name
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)


def _append(folder: Path, log: str, text: str) -> None:
    """Append ``text`` to the log ``log`` of the job's ``folder`` (as :func:`~.isolation.open_log` opens it)."""
    fd = open_log(folder, log)
    try:
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def _kill(started: list[tuple[dict, Launched]]) -> None:
    """Kill the replicas of a gang that could not start whole, and remove their cgroups where they have emptied."""
    for _, run in started:
        kill_tree(run.proc.pid, run.pid_start)
    for _, run in started:
        try:
            run.proc.wait(timeout=_CLEANUP_WAIT_S)
        except subprocess.TimeoutExpired:  # pragma: no cover - the sweep removes what is left
            pass
        cgroup = cg.JobCgroup.from_json(run.limits.cgroup)
        if cgroup is not None:
            try:
                cg.clear(cgroup, _CLEANUP_WAIT_S)
            except cg.CgroupBusy:  # pragma: no cover - left to the adoption sweep
                pass
