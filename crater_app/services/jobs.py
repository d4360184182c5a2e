"""Jobs: submit, list, read, cancel, resubmit, logs and events (DESIGN.md §2, the main flow)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import func, or_
from sqlmodel import select

from crater_app.cluster.base import Workload
from crater_app.db.models import Job, JobEvent, Project, User
from crater_app.db.schemas import JobEventPublic, JobPage, JobPublic
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, NotFound, Unschedulable
from crater_app.domain.jobs import JobPhase, JobSpec, validate_spec
from crater_app.domain.placement import Request, never_fits
from crater_app.domain.resources import parse_resources
from crater_app.domain.policy import Actor, can_cancel_job, can_read_job, can_submit, readable_projects
from crater_app.services import oplog
from crater_app.services.context import ServiceContext

MAX_PAGE_SIZE = 200
MAX_LOG_TAIL_BYTES = 1024 * 1024
_PHASES = tuple(p.value for p in JobPhase)
_names: dict[tuple[str, int], str] = {}  # (table, id) -> name; user and project names never change


def _name(session, model, key: int) -> str:
    cache_key = (model.__tablename__, key)
    name = _names.get(cache_key)  # type: ignore[call-overload]
    if name is None:
        row = session.get(model, key)
        name = row.username if model is User else row.name
        _names[cache_key] = name  # type: ignore[index]
    return name


def _public(session, job: Job) -> JobPublic:
    return JobPublic(
        id=job.id, uid=job.uid, name=job.name, project=_name(session, Project, job.project_id),
        user=_name(session, User, job.user_id), image=job.image, command=job.command, env=job.env,
        working_dir=job.working_dir, phase=job.phase, reason=job.reason, exit_code=job.exit_code,
        resources=job.resources, accelerator_model=job.accelerator_model, gpus=job.gpus, devices=job.devices,
        max_runtime=job.max_runtime_s, priority=job.priority, created_at=job.created_at,
        started_at=job.started_at, finished_at=job.finished_at, resubmitted_from=job.resubmitted_from,
    )


def _check_fits(ctx: ServiceContext, spec: JobSpec) -> None:
    resources = spec.resource_list
    req = Request(uid="", priority=0, created_at=datetime.min, cpu_m=resources.cpu_m,
                  memory_bytes=resources.memory_bytes, accelerators=resources.accelerators, model=spec.accelerator_model)
    problems = []
    for node in ctx.backend.inventory():
        problem = never_fits(req, node.cpu_m, node.memory_bytes, [(d.resource, d.model) for d in node.devices])
        if problem is None:
            return
        problems.append(problem)
    field, message = problems[0] if problems else ("resources", "there is no node to run on")
    raise Unschedulable(f"{field}: {message}; the job could never start", field)


def workload_of(job: Job, project: str, user: str) -> Workload:
    """The backend request for ``job`` (uid is the idempotency key)."""
    return Workload(
        uid=job.uid, name=job.name, project=project, user=user, image=job.image, command=tuple(job.command),
        env=dict(job.env), working_dir=job.working_dir, resources=parse_resources(job.resources),
        accelerator_model=job.accelerator_model, max_runtime_s=job.max_runtime_s, priority=job.priority,
        created_at=job.created_at,
    )


def submit_job(ctx: ServiceContext, actor: Actor, raw: object, resubmitted_from: int | None = None) -> JobPublic:
    """Validate, authorise and admit a job spec, write it, and hand it to the backend.

    Args:
        raw: the decoded JSON/YAML object (see :class:`~crater_app.domain.jobs.JobSpec`).

    Returns:
        The job in phase ``Queued`` (the loop moves it on).

    Raises:
        InvalidInput: bad spec (field named); NotFound: unknown project; Forbidden: no submit right
        in the project; Unschedulable: the request exceeds the machine (numbers in the message).
    """
    spec = validate_spec(raw)
    with ctx.session() as s:
        if spec.project is None:
            if actor.default_project_id is None:
                raise InvalidInput("project is required: you have no default project", "project")
            project = s.get(Project, actor.default_project_id)
        else:
            project = s.exec(select(Project).where(Project.name == spec.project)).first()
            if project is None:
                raise NotFound(f"project '{spec.project}' does not exist", "project")
        if not can_submit(actor, project.id):
            raise Forbidden(f"you may not submit jobs to project '{project.name}'", "project")
        _check_fits(ctx, spec)
        resources = spec.resource_list
        job = Job(
            uid=str(uuid.uuid4()), name=spec.name, project_id=project.id, user_id=actor.user_id, image=spec.image,
            command=list(spec.command), env=dict(spec.env), working_dir=spec.working_dir,
            resources={k: str(v) for k, v in spec.resources.items()}, cpu_m=resources.cpu_m,
            memory_bytes=resources.memory_bytes, gpus=resources.gpus, accelerator_model=spec.accelerator_model,
            max_runtime_s=spec.max_runtime, priority=spec.priority, phase=JobPhase.QUEUED.value,
            reason="waiting for placement", resubmitted_from=resubmitted_from,
        )
        s.add(job)
        s.flush()
        s.add(JobEvent(job_id=job.id, phase=job.phase, reason="Submitted", message=f"submitted by {actor.username}"))
        if ctx.backend.name == "local":
            s.add(JobEvent(job_id=job.id, phase=job.phase, reason="HostEnvironment", message=(
                f"image '{job.image}' recorded; the local backend runs the command in the host environment")))
        oplog.record(s, actor, "job:create", f"{project.name}/{job.name}#{job.id}")
        workload = workload_of(job, project.name, actor.username)
        public = _public(s, job)
    # A crash between the commit above and this call is repaired by services.reconcile.repair().
    ctx.backend.create(workload)
    ctx.kick.set()
    return public


def _visible(actor: Actor, stmt):
    if actor.is_admin:
        return stmt
    readable = readable_projects(actor)
    if readable:
        return stmt.where(or_(Job.user_id == actor.user_id, Job.project_id.in_(readable)))
    return stmt.where(Job.user_id == actor.user_id)


def list_jobs(
    ctx: ServiceContext, actor: Actor, phase: str | None = None, q: str | None = None, page: int = 1,
    page_size: int = 20,
) -> JobPage:
    """Jobs the actor may read, newest first, filtered by ``phase`` and a name substring ``q``.

    Raises:
        InvalidInput: unknown phase, ``page`` < 1, ``page_size`` outside 1..200, ``q`` over 63 chars.
    """
    if phase is not None and phase not in _PHASES:
        raise InvalidInput(f"phase must be one of {', '.join(_PHASES)}", "phase")
    if page < 1 or page > 1_000_000:
        raise InvalidInput("page must be between 1 and 1000000", "page")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise InvalidInput(f"page_size must be between 1 and {MAX_PAGE_SIZE}", "page_size")
    if q is not None and len(q) > 63:
        raise InvalidInput("q is limited to 63 characters (job names are DNS-1123 labels)", "q")
    stmt = _visible(actor, select(Job))
    count = _visible(actor, select(func.count()).select_from(Job))
    if phase:
        stmt, count = stmt.where(Job.phase == phase), count.where(Job.phase == phase)
    if q:
        pattern = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        stmt = stmt.where(Job.name.like(pattern, escape="\\"))
        count = count.where(Job.name.like(pattern, escape="\\"))
    with ctx.session() as s:
        total = s.exec(count).one()
        rows = s.exec(stmt.order_by(Job.id.desc()).offset((page - 1) * page_size).limit(page_size)).all()
        return JobPage(items=[_public(s, j) for j in rows], total=total, page=page, page_size=page_size)


def _readable(s, actor: Actor, job_id: int) -> Job:
    job = s.get(Job, job_id)
    if job is None or not can_read_job(actor, job.user_id, job.project_id):
        raise NotFound(f"job {job_id} does not exist", "id")
    return job


def get_job(ctx: ServiceContext, actor: Actor, job_id: int) -> JobPublic:
    """One job. Raises :class:`NotFound` when it does not exist or the actor may not read it."""
    with ctx.session() as s:
        return _public(s, _readable(s, actor, job_id))


def job_events(ctx: ServiceContext, actor: Actor, job_id: int) -> list[JobEventPublic]:
    """The job's events, oldest first. Raises :class:`NotFound` like :func:`get_job`."""
    with ctx.session() as s:
        _readable(s, actor, job_id)
        rows = s.exec(select(JobEvent).where(JobEvent.job_id == job_id).order_by(JobEvent.id)).all()
        return [JobEventPublic(id=e.id, at=e.at, phase=e.phase, reason=e.reason, message=e.message) for e in rows]


def job_logs(ctx: ServiceContext, actor: Actor, job_id: int, tail_bytes: int = 65536) -> str:
    """The last ``tail_bytes`` (1..1 MiB) of the job's combined stdout/stderr.

    Raises:
        NotFound: like :func:`get_job`; InvalidInput: ``tail_bytes`` out of range.
    """
    if not 1 <= tail_bytes <= MAX_LOG_TAIL_BYTES:
        raise InvalidInput(f"tail_bytes must be between 1 and {MAX_LOG_TAIL_BYTES}", "tail_bytes")
    with ctx.session() as s:
        uid = _readable(s, actor, job_id).uid
    return ctx.backend.read_logs(uid, tail_bytes)


def cancel_job(ctx: ServiceContext, actor: Actor, job_id: int) -> JobPublic:
    """Ask the backend to stop the job (SIGTERM, then SIGKILL after the grace period).

    Raises:
        NotFound: unknown/invisible job; Forbidden: may read but not cancel; Conflict: already finished.
    """
    with ctx.session() as s:
        job = _readable(s, actor, job_id)
        if not can_cancel_job(actor, job.user_id, job.project_id):
            raise Forbidden(f"you may not cancel job {job_id}")
        if JobPhase(job.phase).terminal:
            raise Conflict(f"job {job_id} is already {job.phase}", "id")
        s.add(JobEvent(job_id=job.id, phase=job.phase, reason="CancelRequested", message=f"cancel requested by {actor.username}"))
        oplog.record(s, actor, "job:cancel", f"#{job.id}")
        uid = job.uid
    try:
        ctx.backend.cancel(uid, f"cancelled by {actor.username}")
    except KeyError:
        pass  # never reached the backend: the reconciler's repair() marks it Cancelled
    ctx.kick.set()
    return get_job(ctx, actor, job_id)


def resubmit_job(ctx: ServiceContext, actor: Actor, job_id: int) -> JobPublic:
    """Submit a copy of job ``job_id`` as a new job (same spec, same project). Same errors as submit."""
    with ctx.session() as s:
        job = _readable(s, actor, job_id)
        raw = {
            "name": job.name, "project": _name(s, Project, job.project_id), "image": job.image,
            "command": list(job.command), "env": dict(job.env), "resources": dict(job.resources),
            "priority": job.priority,
        }
        for key, value in (("working_dir", job.working_dir), ("accelerator_model", job.accelerator_model),
                           ("max_runtime", job.max_runtime_s)):
            if value is not None:
                raw[key] = value
    return submit_job(ctx, actor, raw, resubmitted_from=job_id)
