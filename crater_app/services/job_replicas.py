"""A job's replicas, each replica's log (also followed while the job runs) and the objects its backend made, as
the actor may read them (the policy of the job itself: :func:`crater_app.services.job_reads.readable`).

Everything comes from the backend's own cache (``ClusterBackend.status``/``read_logs``/``manifests``, no call to a
cluster); a finished job its backend forgot has no replicas left to show (``[]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import yaml

from crater_app.cluster.base import HOST_PROCESSES, MANIFESTS, WorkloadStatus
from crater_app.db.models import Job
from crater_app.domain.errors import CraterError, InvalidInput, NotFound
from crater_app.domain.job_tasks import SINGLE_TASK
from crater_app.domain.jobs import TERMINAL_PHASES
from crater_app.domain.log_follow import appended, tail
from crater_app.domain.policy import Actor
from crater_app.schemas.replicas import ReplicaPublic
from crater_app.services.context import ServiceContext
from crater_app.services.job_reads import MAX_LOG_TAIL_BYTES, readable

#: seconds between two reads of a followed log (bounded: at most 2 reads a second per follower)
FOLLOW_POLL_S = 0.5
#: bytes of the window a follower reads each time (what may be written between two reads without a gap)
FOLLOW_WINDOW_BYTES = 256 * 1024


def _current(ctx: ServiceContext, job: Job) -> WorkloadStatus | None:
    """The backend's status of ``job``'s current run (``None``: the backend does not know it, or knows only an
    earlier attempt, which is history)."""
    status = ctx.backend.status(job.uid)
    if status is None or status.attempt < job.attempt:
        return None
    return status


def _layout(job: Job, status: WorkloadStatus | None) -> list[tuple[str, int]]:
    """``(task, replica count)`` of the job, in task order: from the backend's replicas, else from the row's tasks
    (``[]`` there: the single task :data:`SINGLE_TASK` of one replica)."""
    if status is not None and status.replicas:
        counts: dict[str, int] = {}
        for r in status.replicas:
            counts[r.task] = max(counts.get(r.task, 0), r.replica + 1)
        return list(counts.items())
    declared = getattr(job, "tasks", None) or []
    tasks = [(str(t.get("name")), int(t.get("replicas", 1))) for t in declared if isinstance(t, dict)]
    return tasks or [(SINGLE_TASK, 1)]


def replicas_of(status: WorkloadStatus | None) -> list[ReplicaPublic]:
    """The replicas of ``status`` (``[]`` when ``None`` or it has none), each with the devices of its placement."""
    if status is None:
        return []
    placements = {(p.task, p.replica): p for p in status.placements}
    out = []
    for r in status.replicas:
        placed = placements.get((r.task, r.replica))
        out.append(ReplicaPublic(
            task=r.task, replica=r.replica, phase=r.phase, node=r.node or (placed.node if placed else ""),
            devices=list(placed.devices) if placed else [], exit_code=r.exit_code, reason=r.reason,
            message=r.message, restarts=r.restarts))
    return out


def job_replicas(ctx: ServiceContext, actor: Actor, job_id: int) -> list[ReplicaPublic]:
    """Job ``job_id``'s replicas now, in task order then by index (``[]`` before the backend has the job, and for a
    finished job the backend forgot).

    Raises:
        NotFound: ``job.unknown`` (field ``id``) when the job does not exist or the actor may not read it.
    """
    with ctx.session(read_only=True) as s:
        job = readable(s, actor, job_id)
    return replicas_of(_current(ctx, job))


def check_replica(job: Job, status: WorkloadStatus | None, task: str | None, replica: int) -> str:
    """The task named by ``task`` (``None``: the first) after checking that it and its ``replica`` exist.

    Raises:
        NotFound: ``replicas.task_unknown`` (field ``task``, with the job's ``tasks``) or
            ``replicas.replica_unknown`` (field ``replica``, with the task's replica ``count``).
    """
    layout = _layout(job, status)
    name = layout[0][0] if task is None else task
    counts = dict(layout)
    if name not in counts:
        raise NotFound("replicas.task_unknown", "task", id=job.id, task=name, tasks=[t for t, _ in layout])
    if not 0 <= replica < counts[name]:
        raise NotFound("replicas.replica_unknown", "replica", id=job.id, task=name, replica=replica,
                       count=counts[name])
    return name


def _check_tail(tail_bytes: int) -> None:
    if not 1 <= tail_bytes <= MAX_LOG_TAIL_BYTES:
        raise InvalidInput("job.tail_bytes", "tail_bytes", max=MAX_LOG_TAIL_BYTES)


def replica_logs(ctx: ServiceContext, actor: Actor, job_id: int, tail_bytes: int = 65536, *,
                 task: str | None = None, replica: int = 0) -> str:
    """The last ``tail_bytes`` (1..1 MiB) of one replica's combined stdout/stderr (``task`` ``None`` and
    ``replica`` 0: the first task's first replica, as the job's log was before tasks; ``""`` while it has none).

    Raises:
        NotFound: ``job.unknown`` as :func:`job_replicas`; ``replicas.task_unknown``/``replicas.replica_unknown``
            as :func:`check_replica`. InvalidInput: ``job.tail_bytes``.
    """
    _check_tail(tail_bytes)
    with ctx.session(read_only=True) as s:
        job = readable(s, actor, job_id)
    name = check_replica(job, _current(ctx, job), task, replica)
    return ctx.backend.read_logs(job.uid, tail_bytes, task=name, replica=replica)


@dataclass
class LogFollow:
    """One replica's log followed while its job runs: :meth:`read` gives what was written since the last read
    (the first time: the last ``tail_bytes``), :meth:`finished` whether the job is over. Read again once after
    :meth:`finished` says true: that read has the end of the log. Made by :func:`follow_logs`. ``actor_now`` (when
    given) resolves the caller again: each :meth:`finished` checks that they may still read the job (a member
    removed, a token revoked or a session ended stops the stream, and nothing more is read)."""

    ctx: ServiceContext
    job_id: int
    uid: str
    task: str
    replica: int
    tail_bytes: int
    actor_now: Callable[[], Actor] | None = None
    _window: str | None = None
    _revoked: bool = False

    def read(self) -> str:
        """The text written since the last read (the first read: the last ``tail_bytes`` of the log); ``""`` once
        the caller may no longer read the job."""
        if self._revoked:
            return ""
        size = max(self.tail_bytes, FOLLOW_WINDOW_BYTES)
        current = self.ctx.backend.read_logs(self.uid, size, task=self.task, replica=self.replica)
        previous, self._window = self._window, current
        return tail(current, self.tail_bytes) if previous is None else appended(previous, current)

    def finished(self) -> bool:
        """The job is final (its row, or the backend's status of its current run), or it is gone, or the caller may
        no longer read it."""
        if self.actor_now is not None:
            try:
                actor = self.actor_now()
                with self.ctx.session(read_only=True) as s:
                    readable(s, actor, self.job_id)
            except CraterError:
                self._revoked = True
                return True
        with self.ctx.session(read_only=True) as s:
            job = s.get(Job, self.job_id)
            if job is None or job.phase in {p.value for p in TERMINAL_PHASES}:
                return True
            attempt = job.attempt
        status = self.ctx.backend.status(self.uid)
        return status is not None and status.attempt >= attempt and status.phase in TERMINAL_PHASES


def follow_logs(ctx: ServiceContext, actor: Actor, job_id: int, tail_bytes: int = 65536, *,
                task: str | None = None, replica: int = 0,
                actor_now: Callable[[], Actor] | None = None) -> LogFollow:
    """A :class:`LogFollow` of one replica's log, the job and the replica checked now (as :func:`replica_logs`);
    ``actor_now`` resolves the caller again for each later check (see :class:`LogFollow`)."""
    _check_tail(tail_bytes)
    with ctx.session(read_only=True) as s:
        job = readable(s, actor, job_id)
    name = check_replica(job, _current(ctx, job), task, replica)
    return LogFollow(ctx, job.id, job.uid, name, replica, tail_bytes, actor_now)


def job_manifests(ctx: ServiceContext, actor: Actor, job_id: int) -> list[dict]:
    """The Kubernetes objects the backend made for job ``job_id`` (a Volcano Job, its Services, ...).

    Raises:
        NotFound: ``job.unknown`` as :func:`job_replicas`; ``replicas.manifest_processes`` (field ``id``) on a backend
            that runs processes (no ``MANIFESTS`` capability: the local backend); ``replicas.manifest_none`` when the
            backend keeps none for this job (not created yet, or deleted after it finished).
    """
    with ctx.session(read_only=True) as s:
        job = readable(s, actor, job_id)
    backend = ctx.backend
    if MANIFESTS not in backend.capabilities and HOST_PROCESSES in backend.capabilities:
        raise NotFound("replicas.manifest_processes", "id", id=job_id, backend=backend.name)
    objects = backend.manifests(job.uid) if MANIFESTS in backend.capabilities else []
    if not objects:
        raise NotFound("replicas.manifest_none", "id", id=job_id, backend=backend.name)
    return objects


def manifest_yaml(objects: list[dict]) -> str:
    """``objects`` as one YAML stream (``---`` between documents), keys in the order the backend gave them."""
    return yaml.safe_dump_all(objects, sort_keys=False, allow_unicode=True, default_flow_style=False)


def keeps_manifests(ctx: ServiceContext) -> bool:
    """Whether the backend keeps the objects it makes (the job page shows a manifest section only then)."""
    return MANIFESTS in ctx.backend.capabilities
