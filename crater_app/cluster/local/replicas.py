"""The replicas of one local workload: their names on disk and in the cgroup tree, their devices, and what the
store keeps of each (column ``replicas``: a JSON list in task order).

A record has ``task`` and ``replica`` (index) from the start; once the gang is started also ``devices``, ``pid``
and ``pid_start`` (its runner), ``limits`` (:class:`~crater_app.cluster.local.outcomes.Limits` as JSON), ``log`` and
``exit`` (file names in the job's folder) and ``restarts`` (gang restarts so far); once it has ended ``phase``
(``Succeeded``/``Failed`` when it ended on its own, ``Stopped`` when Crater stopped it), ``exit_code``,
``exit_signal`` and ``reason`` (CamelCase, as the workload's; a stopped one's says why: ``GangEnded``, ``Cancelled``,
``DeadlineExceeded``, ``ReplicaFailed``, ``Restarting``).

Files: a workload of one replica keeps the layout of single-command jobs (``output.log``, ``exit_code``, cgroup named
by the uid); each replica of a larger one has ``logs/<task>-<index>.log`` and ``logs/<task>-<index>.exit`` and a
cgroup ``<uid>.<task>-<index>`` (a uid holds no ``.``: Crater's are UUIDs). Host files for the rendezvous
(:mod:`crater_app.domain.rendezvous`) go to ``hosts/``.
"""

from __future__ import annotations

import json
import socket
from typing import Sequence

from crater_app.cluster.local.specs import TaskSpec
from crater_app.cluster.local.store import replica_records

#: the folder of a workload's rendezvous host files (in its job folder)
HOSTS_DIR = "hosts"


def files_of(task: str, index: int, count: int) -> tuple[str, str]:
    """``(log, exit file)`` names of replica ``index`` of ``task`` in a workload of ``count`` replicas."""
    if count == 1:
        return "output.log", "exit_code"
    return f"logs/{task}-{index}.log", f"logs/{task}-{index}.exit"


def cgroup_of(uid: str, task: str, index: int, count: int) -> str:
    """The cgroup name of replica ``index`` of ``task`` (the uid itself for a workload of one replica)."""
    return uid if count == 1 else f"{uid}.{task}-{index}"


def uid_of_cgroup(name: str) -> str:
    """The workload uid a cgroup name (:func:`cgroup_of`) belongs to."""
    return name.split(".", 1)[0]


def split_devices(tasks: Sequence[TaskSpec], devices: Sequence[int], kinds: dict[int, str]) -> list[tuple[int, ...]]:
    """The gang's ``devices`` (placed as one request) handed to its replicas in task order: each replica takes the
    next free ones of each resource it asks for (``kinds``: device index -> resource name)."""
    left = list(devices)
    out = []
    for task in tasks:
        for _ in range(task.replicas):
            mine: list[int] = []
            for resource, count in task.accelerators.items():
                taken = [d for d in left if kinds.get(d) == resource][:count]
                mine += taken
                left = [d for d in left if d not in taken]
            out.append(tuple(mine))
    return out


def live_records(raw: str | None, pid: int | None, pid_start: float | None, limits: str | None,
                 devices: str) -> list[dict]:
    """The records of a started workload; a row of one replica written before there were records gets one from its
    own columns (``pid``, ``pid_start``, ``limits``, ``devices``; files ``output.log`` and ``exit_code``)."""
    records = replica_records(raw)
    if len(records) == 1 and "pid" not in records[0]:
        records = [{**records[0], "pid": pid, "pid_start": pid_start, "limits": limits or "{}",
                    "devices": json.loads(devices or "[]"), "log": "output.log", "exit": "exit_code"}]
    return records


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on at ``host`` now (the kernel's pick), for a workload's ``MASTER_PORT``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
