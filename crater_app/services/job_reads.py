"""Reading jobs: the list (filtered, paginated), one job, its events and its logs, each as the actor may see it
(DESIGN.md §2, step 7: from the database; logs from the backend)."""

from __future__ import annotations

import unicodedata

from sqlmodel import select

from crater_app.db.models import Job, JobEvent, Project, User
from crater_app.db.queries import jobs as job_queries
from crater_app.domain.errors import InvalidInput, NotFound
from crater_app.domain.jobs import JobPhase
from crater_app.domain.naming import is_text
from crater_app.domain.paging import check_page
from crater_app.domain.policy import Actor, can_read_job, readable_projects
from crater_app.schemas import JobEventPublic, JobPage, JobPublic
from crater_app.services.context import ServiceContext
from crater_app.services.job_tasks import public_fields

MAX_PAGE_SIZE = 200
MAX_LOG_TAIL_BYTES = 1024 * 1024
_PHASES = tuple(p.value for p in JobPhase)
_names: dict[tuple[str, int], str] = {}  # (table, id) -> name; user and project names never change


def name_of(session, model, key: int) -> str:
    """The name of user or project ``key`` (``model`` is :class:`User` or :class:`Project`), cached in the process:
    neither is ever renamed."""
    cache_key = (model.__tablename__, key)
    name = _names.get(cache_key)  # type: ignore[call-overload]
    if name is None:
        row = session.get(model, key)
        name = row.username if model is User else row.name
        _names[cache_key] = name  # type: ignore[index]
    return name


def public(session, job: Job) -> JobPublic:
    """``job`` as the API and the console show it (its project's and user's names read through :func:`name_of`)."""
    return JobPublic(
        id=job.id, uid=job.uid, name=job.name, project=name_of(session, Project, job.project_id),
        user=name_of(session, User, job.user_id), image=job.image, command=job.command, env=job.env,
        working_dir=job.working_dir, phase=job.phase, reason=job.reason, exit_code=job.exit_code,
        resources=job.resources, accelerator_model=job.accelerator_model, gpus=job.gpus, devices=job.devices,
        max_runtime=job.max_runtime_s, priority=job.priority, created_at=job.created_at,
        started_at=job.started_at, finished_at=job.finished_at, resubmitted_from=job.resubmitted_from,
        kind=job.kind, preemptible=job.preemptible, reason_code=job.reason_code, reason_args=job.reason_args or {},
        admitted_at=job.admitted_at, attempt=job.attempt, requeue_on_preemption=job.requeue_on_preemption,
        stop_requested_at=job.stop_requested_at,
        **public_fields({"tasks": job.tasks, "min_available": job.min_available, "options": job.options}),
    )


def list_jobs(
    ctx: ServiceContext, actor: Actor, phase: str | None = None, q: str | None = None, page: int = 1,
    page_size: int = 20,
) -> JobPage:
    """Jobs the actor may read, newest first, filtered by ``phase`` and a name substring ``q``.

    Raises:
        InvalidInput: unknown phase, ``page`` < 1, ``page_size`` outside 1..200, ``q`` over 63 chars or not
        text (a NUL or other control character, a lone surrogate), each with its own message.
    """
    if phase is not None and phase not in _PHASES:
        raise InvalidInput("job.phase_unknown", "phase", phases=list(_PHASES))
    check_page(page, page_size, MAX_PAGE_SIZE)
    if q is not None and len(q) > 63:
        raise InvalidInput("job.query_length", "q", length=len(q), max=63)
    if q is not None and (not is_text(q) or any(unicodedata.category(ch) == "Cc" for ch in q)):
        raise InvalidInput("job.query_text", "q")
    params: dict = {"offset": (page - 1) * page_size, "limit": page_size}
    visibility = "all"
    if not actor.is_admin:
        params["user_id"] = actor.user_id
        visibility = "own"
        readable = readable_projects(actor)
        if readable:
            params["projects"] = readable
            visibility = "own+projects"
    if phase:
        params["phase"] = phase
    if q:
        params["pattern"] = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    count, rows_of_page = job_queries.list_statements(visibility, bool(phase), bool(q))
    with ctx.session(read_only=True) as s:
        conn = s.connection()
        total = conn.execute(count, params).scalar_one()
        rows = conn.execute(rows_of_page, params).all()
        return JobPage(items=[public(s, j) for j in rows], total=total, page=page, page_size=page_size)


def readable(s, actor: Actor, job_id: int) -> Job:
    """Job ``job_id`` read in session ``s``, when ``actor`` may read it.

    Raises:
        NotFound: ``job.unknown`` (field ``id``) when it does not exist or the actor may not read it (the same
            answer, so that ids disclose nothing).
    """
    # Ids outside the 64-bit range cannot exist (and SQLite's driver raises OverflowError on them).
    job = s.get(Job, job_id) if 0 < job_id < 2**63 else None
    if job is None or not can_read_job(actor, job.user_id, job.project_id):
        raise NotFound("job.unknown", "id", id=job_id)
    return job


def get_job(ctx: ServiceContext, actor: Actor, job_id: int) -> JobPublic:
    """One job. Raises :class:`NotFound` when it does not exist or the actor may not read it."""
    with ctx.session(read_only=True) as s:
        return public(s, readable(s, actor, job_id))


def job_events(ctx: ServiceContext, actor: Actor, job_id: int) -> list[JobEventPublic]:
    """The job's events, oldest first. Raises :class:`NotFound` like :func:`get_job`."""
    with ctx.session(read_only=True) as s:
        readable(s, actor, job_id)
        rows = s.exec(select(JobEvent).where(JobEvent.job_id == job_id).order_by(JobEvent.id)).all()
        return [JobEventPublic(id=e.id, at=e.at, phase=e.phase, reason=e.reason, message=e.message, code=e.code,
                               args=e.args) for e in rows]
