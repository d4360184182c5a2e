"""A workload as the local backend's store keeps it (column ``spec``, JSON) and reads it back.

The spec holds what starting the workload needs and nothing the placement round reads (that has columns of its own):
``name``, ``project``, ``user``, ``kind``, ``min_available``, ``restart_policy``, ``max_retry`` and ``tasks``, a
list of ``{name, replicas, image, command, args, env, working_dir, cpu_m, memory_bytes, accelerators, ports,
ends_job}`` (``accelerators``: resource name -> devices per replica). A row written before workloads had tasks holds
``image``, ``command``, ``env`` and ``working_dir`` at the top: it reads as one task :data:`~.store.DEFAULT_TASK` of
one replica with the row's whole request (:func:`tasks_of`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crater_app.cluster.base import Workload
from crater_app.cluster.local.store import DEFAULT_TASK


@dataclass(frozen=True)
class TaskSpec:
    """One task as the local backend starts it: ``argv`` (command then args), per-replica ``cpu_m`` (millicores),
    ``memory_bytes`` (bytes) and ``accelerators`` (resource name -> devices), ``ports`` as ``(name, port)`` pairs,
    ``ends_job`` (:class:`~crater_app.cluster.base.Task`)."""

    name: str
    replicas: int
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    working_dir: str | None = None
    cpu_m: int = 0
    memory_bytes: int = 0
    accelerators: dict[str, int] = field(default_factory=dict)
    ports: tuple[tuple[str, int], ...] = ()
    ends_job: bool = False
    image: str = ""


def encode(workload: Workload) -> dict:
    """The ``spec`` object of ``workload`` (see the module docstring)."""
    return {
        "name": workload.name, "project": workload.project, "user": workload.user, "kind": workload.kind,
        "min_available": workload.min_available, "restart_policy": workload.restart_policy,
        "max_retry": workload.max_retry,
        "tasks": [{
            "name": t.name, "replicas": t.replicas, "image": t.image, "command": list(t.command),
            "args": list(t.args), "env": dict(t.env), "working_dir": t.working_dir, "cpu_m": t.resources.cpu_m,
            "memory_bytes": t.resources.memory_bytes, "accelerators": dict(t.resources.accelerators),
            "ports": [[p.name, p.port] for p in t.ports], "ends_job": t.ends_job,
        } for t in workload.tasks],
    }


def tasks_of(spec: dict, cpu_m: int = 0, memory_bytes: int = 0,
             accelerators: dict[str, int] | None = None) -> list[TaskSpec]:
    """The tasks of a stored ``spec``; a spec without ``tasks`` (an older row) is one task of one replica with the
    row's request (``cpu_m``, ``memory_bytes``, ``accelerators``)."""
    raw = spec.get("tasks")
    if not raw:
        return [TaskSpec(name=DEFAULT_TASK, replicas=1, argv=tuple(spec.get("command") or ()),
                         env=dict(spec.get("env") or {}), working_dir=spec.get("working_dir"), cpu_m=cpu_m,
                         memory_bytes=memory_bytes, accelerators=dict(accelerators or {}),
                         image=spec.get("image") or "")]
    return [TaskSpec(
        name=t["name"], replicas=int(t.get("replicas") or 1), argv=(*t.get("command", ()), *t.get("args", ())),
        env=dict(t.get("env") or {}), working_dir=t.get("working_dir"), cpu_m=int(t.get("cpu_m") or 0),
        memory_bytes=int(t.get("memory_bytes") or 0), accelerators=dict(t.get("accelerators") or {}),
        ports=tuple((p[0], int(p[1])) for p in t.get("ports") or ()), ends_job=bool(t.get("ends_job")),
        image=t.get("image") or "",
    ) for t in raw]


def initial_replicas(workload: Workload) -> list[dict]:
    """The ``replicas`` column of a new run of ``workload``: each replica's task and index, in task order."""
    return [{"task": t.name, "replica": i} for t in workload.tasks for i in range(t.replicas)]
