"""Readers of the held jobs (phase ``Held``: waiting for admission) for the admission rules: each project's queue,
its head window and counts, and what the leader loop compares between rounds. One query each, over the phase
indexes; the rows stay JSON texts until a rule needs them parsed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

from sqlalchemy import and_, case, cast, func, or_
from sqlalchemy import select as sa_select
from sqlalchemy.types import Text

from crater_app.db.models import Job
from crater_app.db.queries.resource_lists import job_usage
from crater_app.domain.admission import Demand
from crater_app.domain.jobs import JobPhase

HELD = JobPhase.HELD.value
#: the reason code of a job held until its approval request is decided
APPROVAL = "approval"
#: the most held jobs one admission decision looks at (oldest/highest priority first)
MAX_HELD = 5000
#: a submission decides against the first this many held jobs of each project's queue (their order and count are
#: read in full, so positions stay exact); a job behind a longer queue waits behind it
HELD_WINDOW = 16

_JOBS = Job.__table__


@dataclass(frozen=True)
class HeldJob:
    """A ``Held`` job as admission reads it; ``resources`` and ``reason_args`` are the stored JSON texts (parsed
    only when needed: the usage through a cache per distinct text, the arguments only to rewrite a sentence)."""

    id: int
    uid: str
    name: str
    project_id: int
    user_id: int
    priority: int
    created_at: datetime
    kind: str
    preemptible: bool
    resources: str
    accelerator_model: str | None
    reason: str
    reason_code: str
    reason_args: str
    max_runtime_s: int | None = None


def _held_columns():
    c = _JOBS.c
    return (c.id, c.uid, c.name, c.project_id, c.user_id, c.priority, c.created_at, c.kind, c.preemptible,
            cast(c.resources, Text), c.accelerator_model, c.reason, c.reason_code, cast(c.reason_args, Text),
            c.max_runtime_s)


def held_demand(job: HeldJob, bound_s: int | None = None) -> Demand:
    """A held job row as the domain's demand (``bound_s``: its runtime bound, for backfill)."""
    return Demand(key=job.id, project_id=job.project_id, user_id=job.user_id, priority=job.priority,
                  created_at=job.created_at, usage=job_usage(job.resources, job.accelerator_model),
                  kind=job.kind, preemptible=job.preemptible, approval_pending=job.reason_code == APPROVAL,
                  bound_s=bound_s)


def read_held(s, project_ids: list[int] | None) -> list[HeldJob]:
    """Held jobs (of ``project_ids``; ``None``: all), highest priority first, then oldest (at most MAX_HELD)."""
    c = _JOBS.c
    stmt = sa_select(*_held_columns()).where(c.phase == HELD)
    if project_ids is not None:
        stmt = stmt.where(c.project_id.in_(sorted(set(project_ids))))
    stmt = stmt.order_by(c.priority.desc(), c.created_at, c.id).limit(MAX_HELD)
    return [HeldJob(*row) for row in s.execute(stmt).all()]


def held_projects(s) -> list[int]:
    """The projects that have a held job."""
    return s.execute(sa_select(_JOBS.c.project_id).where(_JOBS.c.phase == HELD).distinct()).scalars().all()


def held_users(s) -> list[int]:
    """The users who have a held job."""
    return s.execute(sa_select(_JOBS.c.user_id).where(_JOBS.c.phase == HELD).distinct()).scalars().all()


@dataclass
class HeldQueues:
    """The held jobs a submission decides against: ``window`` the first :data:`HELD_WINDOW` of each project's
    queue (full rows) and ``counts`` project id -> priority -> how many jobs are held there (for true positions)."""

    window: list[HeldJob]
    counts: dict[int, dict[int, int]]

    def truncated(self, project_id: int) -> bool:
        """Whether the project has more held jobs than the window holds."""
        return sum(self.counts.get(project_id, {}).values()) > HELD_WINDOW

    def ahead(self, project_id: int, priority: int) -> int:
        """Held jobs of the project a new job of ``priority`` queues behind (those of the same or a higher
        priority: they were submitted earlier)."""
        return sum(n for p, n in self.counts.get(project_id, {}).items() if p >= priority)


def read_held_window(s, project_ids: list[int] | None, mine: Iterable[int] = ()) -> HeldQueues:
    """:class:`HeldQueues` of ``project_ids`` (``None``: every project) in two indexed queries: the held counts per
    project and priority, and the head of each queue (``ROW_NUMBER() OVER (PARTITION BY project_id ...)``, so
    that only the windows' rows reach Python). With ``mine`` (fair share: every project is read), the projects
    not in ``mine`` contribute only the first job of their queue - the one competing for capacity now."""
    c = _JOBS.c
    where = [c.phase == HELD]
    if project_ids is not None:
        where.append(c.project_id.in_(sorted(set(project_ids))))
    counts: dict[int, dict[int, int]] = {}
    for pid, priority, n in s.execute(
        sa_select(c.project_id, c.priority, func.count()).where(*where).group_by(c.project_id, c.priority)
    ).all():
        counts.setdefault(pid, {})[priority] = n
    if not counts:
        return HeldQueues([], counts)
    rank = func.row_number().over(partition_by=c.project_id, order_by=(c.priority.desc(), c.created_at, c.id))
    ranked = sa_select(c.id.label("id"), rank.label("rank")).where(*where).subquery()
    mine = sorted(set(mine))
    limit = ranked.c.rank <= HELD_WINDOW
    if project_ids is None and mine:
        limit = or_(ranked.c.rank <= 1, and_(ranked.c.rank <= HELD_WINDOW, c.project_id.in_(mine)))
    window = [HeldJob(*row) for row in s.execute(
        sa_select(*_held_columns()).join(ranked, ranked.c.id == c.id).where(limit)
        .order_by(c.project_id, c.priority.desc(), c.created_at, c.id)
    ).all()]
    return HeldQueues(window, counts)


def held_fingerprint(s) -> tuple:
    """``(held jobs, largest held id, held for an approval)``: what the loop compares between rounds."""
    c = _JOBS.c
    return tuple(s.execute(
        sa_select(func.count(), func.max(c.id), func.sum(case((c.reason_code == APPROVAL, 1), else_=0)))
        .where(c.phase == HELD)
    ).one())
