"""Usage reports: accelerator-, CPU-core- and memory-GiB-hours of the jobs a caller may see, per user, project or
accelerator model and per UTC day or month (the arithmetic is :mod:`crater_app.domain.usage`).

Visibility (``domain.policy.usage_scope``): platform admins see every job; project admins every job of their
projects; everyone else their own jobs only.

Only jobs that overlap the window are read: ``started_at < to AND (finished_at IS NULL OR finished_at > from)``,
with plain columns (no ORM objects). There is no index on ``started_at``/``finished_at``, so the database scans
the jobs table (about 50 ms for 100,000 jobs on SQLite; see ``bench/usage.py``); an index on ``started_at`` would
cut that for short windows over a long history.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, or_
from sqlalchemy import select as sa_select

from crater_app.db.models import Job, Project, User
from crater_app.db.schemas import UsagePublic, UsageRowPublic
from crater_app.db.types import utcnow
from crater_app.domain.policy import Actor, usage_scope
from crater_app.domain.times import parse_utc
from crater_app.domain.usage import GRANULARITIES, GROUP_BYS, JobRun, UsageRow, check_choice, model_key, rollup, window_of
from crater_app.services.context import ServiceContext

_JOBS, _USERS, _PROJECTS = Job.__table__, User.__table__, Project.__table__


def _row(r: UsageRow) -> UsageRowPublic:
    return UsageRowPublic(key=r.key, period=r.period, accelerator_hours=round(r.accelerator_hours, 6),
                          cpu_core_hours=round(r.cpu_core_hours, 6), memory_gib_hours=round(r.memory_gib_hours, 6),
                          jobs=r.jobs)


def usage(
    ctx: ServiceContext, actor: Actor, group_by: object = "project", since: object = None, until: object = None,
    granularity: object = "day", now: datetime | None = None,
) -> UsagePublic:
    """Usage of the jobs ``actor`` may see in ``[since, until)``, rolled up per ``group_by`` key and period.

    Args:
        group_by: ``user`` (user names), ``project`` (project names) or ``model`` (the job's accelerator model;
            ``(any)`` when it accepted any model, ``(none)`` without accelerators).
        since, until: ISO 8601 times with an offset (fields ``from`` and ``to``); ``until`` defaults to now,
            ``since`` to 30 days before ``until``; at most 366 days apart, ``until`` after ``since``.
        granularity: ``day`` (UTC days, ``2026-11-30``) or ``month`` (UTC calendar months, ``2026-11``).
        now: the current time for running jobs (tests); default the clock.

    Returns:
        :class:`UsagePublic`: ``rows`` (key, period, accelerator_hours, cpu_core_hours, memory_gib_hours, jobs)
        ordered by period then key, and ``totals`` over the window.

    Raises:
        InvalidInput: a bad ``group_by``, ``granularity``, ``from`` or ``to`` (the field named, with the limit).
    """
    check_choice(group_by, GROUP_BYS, "group_by")
    check_choice(granularity, GRANULARITIES, "granularity")
    now = now or utcnow()
    start = parse_utc(since, "from") if since is not None else None
    end = parse_utc(until, "to") if until is not None else None
    window = window_of(start, end, granularity, now)  # type: ignore[arg-type]
    everything, projects = usage_scope(actor)
    c = _JOBS.c
    stmt = sa_select(c.id, c.user_id, c.project_id, c.accelerator_model, c.gpus, c.cpu_m, c.memory_bytes,
                     c.started_at, c.finished_at).where(
        c.started_at.is_not(None), c.started_at < window.end,
        or_(c.finished_at.is_(None), c.finished_at > window.start),
    )
    if not everything:
        mine = c.user_id == actor.user_id
        stmt = stmt.where(or_(mine, c.project_id.in_(projects)) if projects else mine)
    with ctx.session(read_only=True) as s:
        conn = s.connection()
        rows = conn.execute(stmt).all()
        user_ids = {r.user_id for r in rows}
        project_ids = {r.project_id for r in rows}
        users = dict(conn.execute(sa_select(_USERS.c.id, _USERS.c.username).where(
            and_(_USERS.c.id.in_(user_ids)))).all()) if user_ids and group_by == "user" else {}
        names = dict(conn.execute(sa_select(_PROJECTS.c.id, _PROJECTS.c.name).where(
            _PROJECTS.c.id.in_(project_ids))).all()) if project_ids and group_by == "project" else {}
    runs = (
        JobRun(job_id=r.id, user=users.get(r.user_id, ""), project=names.get(r.project_id, ""),
               model=model_key(r.gpus, r.accelerator_model), started_at=r.started_at, finished_at=r.finished_at,
               gpus=r.gpus, cpu_m=r.cpu_m, memory_bytes=r.memory_bytes)
        for r in rows
    )
    report = rollup(runs, window, group_by, now)  # type: ignore[arg-type]
    return UsagePublic(
        group_by=group_by, granularity=granularity, start=window.start, end=window.end,  # type: ignore[arg-type]
        rows=[_row(r) for r in report.rows], totals=_row(report.totals),
    )
