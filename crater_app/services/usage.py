"""Usage reports: accelerator-, CPU-core- and memory-GiB-hours of the jobs a caller may see, per user, project or
accelerator model and per UTC day or month (the arithmetic is :mod:`crater_app.domain.usage`).

Visibility (``domain.policy.usage_scope``): platform admins see every job; project admins every job of their
projects; everyone else their own jobs only.

Only jobs that overlap the window are read: ``started_at < to AND (finished_at IS NULL OR finished_at > from)``,
six plain columns per job with the times as POSIX seconds computed by the database (no ORM objects, no Python
datetimes), streamed in chunks into the rollup. There is no index on ``started_at``/``finished_at``, so the
database scans the jobs table; for a short window over a long history an index on ``(started_at)`` would let it
skip most rows (see ``bench/usage.py`` for the figures).
"""

from __future__ import annotations

from datetime import datetime
from itertools import chain

from sqlalchemy import Float, case, cast, func, or_
from sqlalchemy import select as sa_select

from crater_app.db.models import Job, Project, User
from crater_app.schemas import UsagePublic, UsageRowPublic
from crater_app.db.types import utcnow
from crater_app.domain.policy import Actor, usage_scope
from crater_app.domain.times import parse_utc
from crater_app.domain.usage import (
    ANY_MODEL,
    GRANULARITIES,
    GROUP_BYS,
    NO_ACCELERATOR,
    UsageRow,
    aggregate,
    check_choice,
    window_of,
)
from crater_app.services.context import ServiceContext

_JOBS, _USERS, _PROJECTS = Job.__table__, User.__table__, Project.__table__


def _epoch(column, dialect: str):
    """``column`` (a UTC timestamp) as POSIX seconds, computed by the database: reading 100,000 timestamps as
    Python datetimes costs more than the whole rollup."""
    if dialect == "sqlite":  # stored as naive UTC text; julianday() keeps the microseconds
        return (func.julianday(column) - 2440587.5) * 86400.0
    return cast(func.extract("epoch", column), Float)


def _key(group_by: str):
    c = _JOBS.c
    if group_by == "user":
        return c.user_id
    if group_by == "project":
        return c.project_id
    return case((c.gpus <= 0, NO_ACCELERATOR), else_=func.coalesce(c.accelerator_model, ANY_MODEL))


def _row(r: UsageRow) -> UsageRowPublic:
    return UsageRowPublic(key=r.key, period=r.period, accelerator_hours=round(r.accelerator_hours, 6),
                          cpu_core_hours=round(r.cpu_core_hours, 6), memory_gib_hours=round(r.memory_gib_hours, 6),
                          jobs=r.jobs)


def default_group_by(actor: Actor) -> str:
    """What a report is grouped by when the caller does not say: projects for platform admins, users for project
    admins (who is using my project?), projects for everyone else (where did my own hours go?)."""
    everything, projects = usage_scope(actor)
    return "user" if not everything and projects else "project"


def usage(
    ctx: ServiceContext, actor: Actor, group_by: object = None, since: object = None, until: object = None,
    granularity: object = "day", now: datetime | None = None,
) -> UsagePublic:
    """Usage of the jobs ``actor`` may see in ``[since, until)``, rolled up per ``group_by`` key and period.

    Args:
        group_by: ``user`` (user names), ``project`` (project names) or ``model`` (the job's accelerator model;
            ``(any)`` when it accepted any model, ``(none)`` without accelerators); ``None``:
            :func:`default_group_by`.
        since, until: ISO 8601 times with an offset (fields ``from`` and ``to``); ``until`` defaults to now,
            ``since`` to 30 days before ``until``; at most 366 days apart, ``until`` after ``since``.
        granularity: ``day`` (UTC days, ``2026-11-30``) or ``month`` (UTC calendar months, ``2026-11``).
        now: the current time for running jobs (tests); default the clock.

    Returns:
        :class:`UsagePublic`: ``rows`` (key, period, accelerator_hours, cpu_core_hours, memory_gib_hours, jobs)
        ordered by period then key, ``keys`` (each key's totals) and ``totals`` over the window.

    Raises:
        InvalidInput: a bad ``group_by``, ``granularity``, ``from`` or ``to`` (the field named, with the limit).
    """
    if group_by is None:
        group_by = default_group_by(actor)
    check_choice(group_by, GROUP_BYS, "group_by")
    check_choice(granularity, GRANULARITIES, "granularity")
    now = now or utcnow()
    start = parse_utc(since, "from") if since is not None else None
    end = parse_utc(until, "to") if until is not None else None
    window = window_of(start, end, granularity, now)  # type: ignore[arg-type]
    everything, projects = usage_scope(actor)
    c = _JOBS.c
    dialect = ctx.engine.dialect.name
    stmt = sa_select(_key(group_by), _epoch(c.started_at, dialect), _epoch(c.finished_at, dialect),  # type: ignore[arg-type]
                     c.gpus, c.cpu_m, c.memory_bytes).where(
        c.started_at.is_not(None), c.started_at < window.end,
        or_(c.finished_at.is_(None), c.finished_at > window.start),
    )
    if not everything:
        mine = c.user_id == actor.user_id
        stmt = stmt.where(or_(mine, c.project_id.in_(projects)) if projects else mine)
    with ctx.session(read_only=True) as s:
        conn = s.connection()
        # streamed in chunks (fetchmany), not one row at a time and not all at once
        report = aggregate(chain.from_iterable(conn.execute(stmt).partitions(10_000)), window, now)
        ids = {r.key for r in report.rows}
        names: dict = {}
        if ids and group_by == "user":
            names = dict(conn.execute(sa_select(_USERS.c.id, _USERS.c.username).where(_USERS.c.id.in_(ids))).all())
        elif ids and group_by == "project":
            names = dict(conn.execute(sa_select(_PROJECTS.c.id, _PROJECTS.c.name).where(_PROJECTS.c.id.in_(ids))).all())
    if names:
        for r in (*report.rows, *report.keys):
            r.key = names.get(r.key, str(r.key))
        report.rows.sort(key=lambda r: (r.period, r.key))
        report.keys.sort(key=lambda r: r.key)
    return UsagePublic(
        group_by=group_by, granularity=granularity, start=window.start, end=window.end,  # type: ignore[arg-type]
        rows=[_row(r) for r in report.rows], keys=[_row(r) for r in report.keys], totals=_row(report.totals),
    )
