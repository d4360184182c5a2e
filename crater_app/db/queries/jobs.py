"""The SQL of the job lists: one page of jobs and its count for each shape of filter, built once."""

from __future__ import annotations

from functools import lru_cache

from sqlalchemy import bindparam, func, or_
from sqlalchemy import select as sa_select

from crater_app.db.models import Job

_JOBS = Job.__table__

# The columns a job's public shape is built from (``services.jobs``; a row of these has the same attribute names as
# a Job): Core table columns, so that list pages are plain Core queries (no ORM compile/loading step).
PUBLIC_COLUMNS = tuple(_JOBS.c[name] for name in (
    "id", "uid", "name", "project_id", "user_id", "image", "command", "env", "working_dir", "phase", "reason",
    "exit_code", "resources", "accelerator_model", "gpus", "devices", "max_runtime_s", "priority", "created_at",
    "started_at", "finished_at", "resubmitted_from", "kind", "preemptible", "reason_code", "reason_args",
    "admitted_at", "attempt", "requeue_on_preemption", "stop_requested_at", "tasks", "min_available", "options",
))


@lru_cache(maxsize=None)
def list_statements(visibility: str, by_phase: bool, by_name: bool) -> tuple:
    """``(count, page)`` statements of ``services.jobs.list_jobs`` for one shape of filter, built once: the values
    are bound parameters (``user_id``, ``projects``, ``phase``, ``pattern``, ``offset``, ``limit``).

    ``visibility``: ``all`` (platform admin), ``own`` (the actor's jobs) or ``own+projects`` (also every job
    of the projects the actor administers or views, ``readable_projects``): what ``can_read_job`` allows, as
    a query. The page is read in two steps: the page's ids (answered from the indexes, which hold the filter
    columns), then only those rows, as plain rows rather than ORM objects, so that its cost does not grow with
    the rows filtered or skipped.
    """
    c = _JOBS.c

    def where(stmt):
        if visibility == "own":
            stmt = stmt.where(c.user_id == bindparam("user_id"))
        elif visibility == "own+projects":
            stmt = stmt.where(or_(c.user_id == bindparam("user_id"), c.project_id.in_(bindparam("projects", expanding=True))))
        if by_phase:
            stmt = stmt.where(c.phase == bindparam("phase"))
        if by_name:
            stmt = stmt.where(c.name.like(bindparam("pattern"), escape="\\"))
        return stmt

    count = where(sa_select(func.count()).select_from(_JOBS))
    ids = where(sa_select(c.id)).order_by(c.id.desc()).offset(bindparam("offset")).limit(bindparam("limit"))
    page = sa_select(*PUBLIC_COLUMNS).where(c.id.in_(ids)).order_by(c.id.desc())
    return count, page
