"""Jobs: submit, cancel and resubmit (DESIGN.md §2, the main flow). Reading them (the list, one job, its events and
logs) is :mod:`crater_app.services.job_reads`, whose functions this module also offers."""

from __future__ import annotations

import logging

import uuid
from datetime import datetime

from sqlalchemy import bindparam, func
from sqlalchemy import select as sa_select
from sqlmodel import select

from crater_app.cluster.base import HOST_PROCESSES, Workload
from crater_app.db.models import Approval, Job, OperationLog, Project
from crater_app.schemas import JobPublic
from crater_app.db.types import utcnow
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, NotFound
from crater_app.domain.job_defaults import default_resources, with_default_resources
from crater_app.domain.job_kinds import normalize_tasks
from crater_app.domain.jobs import JobPhase, validate_spec
from crater_app.domain.volume_claims import by_role
from crater_app.domain.policy import (
    Actor, can_cancel_job, can_read_project, can_submit,
)
from crater_app.services import admission, approvals, billing, idempotency, job_reasons, job_tasks, oplog, stops
from crater_app.services.admission import NewJob
from crater_app.services.context import ServiceContext
from crater_app.services.job_events import EVENTS, event_row
from crater_app.services.job_reads import (  # noqa: F401 - part of this module's interface
    MAX_LOG_TAIL_BYTES, MAX_PAGE_SIZE, get_job, job_events, list_jobs, name_of, readable,
)
from crater_app.services.job_replicas import replica_logs as job_logs  # noqa: F401 - one replica's log tail

log = logging.getLogger(__name__)

# Core tables: inserts without ORM objects.
_JOBS, _OPERATION_LOGS = Job.__table__, OperationLog.__table__
# The statements of the submission write transaction, built once (see db.queries.admission: building one costs more
# Python than running it, and it runs under the write lock).
_INSERT_JOB, _INSERT_EVENT, _INSERT_OPERATION_LOG = _JOBS.insert(), EVENTS.insert(), _OPERATION_LOGS.insert()
_IDS_BY_UID = sa_select(_JOBS.c.uid, _JOBS.c.id).where(_JOBS.c.uid.in_(bindparam("uids", expanding=True)))


def workload_of(job: Job, project: str, user: str) -> Workload:
    """The backend request for ``job`` (uid is the idempotency key; ``attempt`` the run it is on), with its tasks and
    options (:func:`crater_app.services.job_tasks.workload_of`)."""
    return job_tasks.workload_of(job, project, user)


def submit_job(ctx: ServiceContext, actor: Actor, raw: object, resubmitted_from: int | None = None) -> JobPublic:
    """Validate, authorise and admit a job spec, write it, and hand it to the backend.

    Args:
        raw: the decoded JSON/YAML object (see :class:`~crater_app.domain.jobs.JobSpec`).

    Admission (``services.admission``) decides in the write transaction: the job is ``Queued`` (admitted: it
    goes to the backend) or ``Held`` (it waits in Crater's queue: ``reason`` says which limit, how much is used and
    its position; ``reason_code``/``reason_args`` for translation). A job above ``approval_gpu_threshold``
    accelerators (not by a platform admin) is held for an approval (an ``approvals`` row, kind ``large_job``).
    A user's ``max_runtime_s`` limit is also the default ``max_runtime`` of their jobs; a spec (or a task) that names
    no ``cpu`` or no ``memory`` gets the settings' defaults per replica (``default_job_cpu``/``default_job_memory``,
    see :mod:`crater_app.domain.job_defaults`). The row keeps the normalized tasks and the totals over all replicas
    (:func:`crater_app.services.job_tasks.row_values`), which admission, quotas and usage count.

    Returns:
        The job in phase ``Queued`` (the loop moves it on; ``reason_code`` ``placement.pending`` until the backend
        places it) or ``Held``.

    Raises:
        InvalidInput: bad spec (field named), or volumes the backend cannot mount or a claim not registered for the
        project (:func:`crater_app.services.job_tasks.check_volumes`); NotFound: unknown project
        (``job.project_unknown``); Forbidden: no submit right in the project (``job.submit_forbidden``), or the
        project has expired (the date in the arguments); Unschedulable: its ``node_selector`` matches no
        schedulable node, one replica exceeds the largest node, or the gang the schedulable nodes (in sum, or
        packed at once) or the project's capability (numbers in the arguments), or it names an accelerator resource
        no node offers
        (the closest offered name as ``suggestion``): :func:`crater_app.services.job_tasks.check_fits`;
        AdmissionRefused (422, kind ``never_admissible``): over the project's capability, the member's share or the
        user's limits (limit and request in the arguments).
    """
    spec = validate_spec(raw)
    settings = ctx.settings
    spec = with_default_resources(spec, default_resources(settings.default_job_cpu, settings.default_job_memory))
    plan = normalize_tasks(spec)  # the defaults applied: shm_size against each replica's memory
    resources = plan.totals
    project_id, project_name = _submit_project(ctx, actor, spec.project)
    if not can_submit(actor, project_id):
        if not can_read_project(actor, project_id):  # as for an unknown project: names are not disclosed
            raise NotFound("job.project_unknown", "project", project=project_name)
        raise Forbidden("job.submit_forbidden", "project", project=project_name)
    billing.check_can_submit(ctx, actor, project_id)  # PaymentRequired when billing is on and points are used up
    job_tasks.check_volumes(ctx, spec, project_name)  # what the backend can mount, and the registered claims
    if spec.volumes:  # the project's space read-only for its members (its admins write it)
        spec = spec.model_copy(update={"volumes": by_role(
            spec.volumes, writes_project_space=actor.is_admin or actor.administers(project_id))})
    job_tasks.check_fits(ctx, spec, plan, project_id)
    # Everything is prepared before the write transaction, which then only runs INSERTs: SQLite has one writer
    # at a time, so the time spent holding its lock bounds the submission rate. Concurrent submissions share
    # one transaction (ctx.submissions, a group commit), which costs one BEGIN/COMMIT for all of them.
    values = {
        "uid": str(uuid.uuid4()), "name": spec.name, "project_id": project_id, "user_id": actor.user_id,
        # image, command, env, working_dir, resources, cpu_m, memory_bytes, gpus, tasks, min_available, options:
        **job_tasks.row_values(spec, plan),  # the tasks, the totals over their replicas, the options
        "accelerator_model": spec.accelerator_model,
        "max_runtime_s": spec.max_runtime, "priority": spec.priority, "phase": JobPhase.QUEUED.value,
        "reason": "", "exit_code": None, "devices": [], "created_at": utcnow(),
        "started_at": None, "finished_at": None, "resubmitted_from": resubmitted_from, "kind": spec.kind,
        "preemptible": spec.preemptible, "reason_code": "", "reason_args": {}, "admitted_at": None,
        "attempt": 1, "requeue_on_preemption": spec.requeue_on_preemption,
    }
    workload = Workload(
        uid=values["uid"], name=spec.name, project=project_name, user=actor.username,
        accelerator_model=spec.accelerator_model, max_runtime_s=spec.max_runtime, priority=spec.priority,
        created_at=values["created_at"], **job_tasks.workload_fields(values),
    )
    item = NewJob(values=values, actor=actor, workload=workload, target=f"{project_name}/{spec.name}#")
    job_id, error = ctx.submissions.run(item, lambda batch: _write_submissions(ctx, batch))
    if job_id is not None:  # the job is written: an error from here on (the backend's) must not release a retry
        idempotency.mark_written("job")
    if error is not None:
        if job_id is not None:
            ctx.kick.set()
        raise error
    ctx.kick.set()
    return JobPublic(
        id=job_id, uid=values["uid"], name=spec.name, project=project_name, user=actor.username,
        image=values["image"], command=values["command"], env=values["env"], working_dir=values["working_dir"],
        phase=values["phase"],
        reason=values["reason"], exit_code=None, resources=values["resources"],
        accelerator_model=spec.accelerator_model, gpus=resources.gpus, devices=[], max_runtime=values["max_runtime_s"],
        priority=spec.priority, created_at=values["created_at"], started_at=None, finished_at=None,
        resubmitted_from=resubmitted_from, kind=spec.kind, preemptible=spec.preemptible,
        reason_code=values["reason_code"], reason_args=values["reason_args"], admitted_at=values["admitted_at"],
        attempt=1, requeue_on_preemption=spec.requeue_on_preemption, **job_tasks.public_fields(values),
    )


def _write_submissions(ctx: ServiceContext, batch: list[NewJob]) -> list[tuple[int | None, Exception | None]]:
    """Admit and write prepared submissions in one transaction - admission (``services.admission``: project rows
    locked first), the jobs, their events, their operation-log rows and the approvals of large jobs - then hand the
    admitted jobs' workloads to the backend. Returns ``(job id or None, error or None)`` per submission, in order:
    a refused submission (expired project, never admissible) gets ``(None, error)`` and writes nothing; a backend
    error comes back with its (written) job.

    Only the transaction may raise (nothing is written then, and GroupCommit retries the items one by one).
    """
    with ctx.session() as s:
        admission.admit_submissions(s, ctx, batch)
        ok = [item for item in batch if item.error is None]
        ids: list[int] = []
        if len(ok) == 1:
            ids = [s.execute(_INSERT_JOB, ok[0].values).inserted_primary_key[0]]
        elif ok:  # one executemany, then the new ids by uid (unique): two statements for any batch size
            s.execute(_INSERT_JOB, [item.values for item in ok])
            by_uid = dict(s.execute(_IDS_BY_UID, {"uids": [item.values["uid"] for item in ok]}).all())
            ids = [by_uid[item.values["uid"]] for item in ok]
        if ok:
            at = utcnow()
            host = HOST_PROCESSES in ctx.backend.capabilities
            s.execute(_INSERT_EVENT, [
                row for job_id, item in zip(ids, ok) for row in _events_of(item, job_id, at, host)
            ])
            s.execute(_INSERT_OPERATION_LOG, [_oplog_row(item, job_id) for job_id, item in zip(ids, ok)])
            # Large jobs (rare): their approval requests, and a notification to who may decide them.
            by_job = {item_id: item for item_id, item in zip(ids, ok)}
            for row in admission.approval_rows(ok, ids):
                request = Approval(**row)
                s.add(request)
                s.flush()
                item = by_job[row["job_id"]]
                target = approvals.job_target(row["job_id"], item.values["name"])
                approvals.notify_deciders(s, item.actor, request, target)
    # The jobs are written: from here on a submission succeeds. A crash between the commit above and the backend's
    # create, or a create that fails (the backend unreachable for a moment), is repaired by the leader
    # (services.reconcile: Reconciler.repair on taking over and every REPAIR_EVERY_S), never by a second job -
    # answering an error now would make a client retry into a duplicate.
    written = dict(zip((id(item) for item in ok), ids))
    results: list[tuple[int | None, Exception | None]] = [(written.get(id(item)), item.error) for item in batch]
    workloads = [item.workload for item in batch if item.admitted]
    try:
        if len(workloads) > 1:
            ctx.backend.create_many(workloads)
        else:
            for w in workloads:
                ctx.backend.create(w)
    except Exception:  # noqa: BLE001 - any backend failure: the leader's repair hands these jobs over again
        log.exception("handing %d submitted job(s) to the backend failed; the leader's repair retries",
                      len(workloads))
    return results


def _events_of(item: NewJob, job_id: int, at: datetime, host: bool) -> list[dict]:
    """The first event rows of job ``job_id``, written at ``at``: ``Submitted``, ``HostEnvironment`` (``host``: the
    job runs on Crater's own machine, the local backend, where its image is not used), then ``Held`` with the job's
    reason (code ``hold.<reason_code>``) when held."""
    v = item.values
    phase = v["phase"]
    rows = [event_row(job_id, phase, "Submitted", "job.submitted", {"user": item.actor.username}, at=at)]
    if host:
        rows.append(event_row(job_id, phase, "HostEnvironment", "job.host_environment", {"image": v["image"]}, at=at))
    if phase == JobPhase.HELD.value:
        rows.append(event_row(job_id, phase, "Held", f"hold.{v['reason_code']}",
                              job_reasons.fresh(v["reason_args"], v["created_at"]), at=at, message=v["reason"]))
    return rows


def _oplog_row(item: NewJob, job_id: int) -> dict:
    """The operation-log row of a submission (details ``job.created_held`` when it was held)."""
    v = item.values
    if v["phase"] == JobPhase.HELD.value:
        return oplog.row(item.actor, "job:create", f"{item.target}{job_id}", code="job.created_held",
                         args={"hold": v["reason_code"], "reason": v["reason"][:1500]})
    return oplog.row(item.actor, "job:create", f"{item.target}{job_id}")


def _submit_project(ctx: ServiceContext, actor: Actor, name: str | None) -> tuple[int, str]:
    """``(id, name)`` of the project a job goes to: ``name``, or the actor's default project.

    Projects are never renamed or deleted, so lookups are cached in the context (only found ones).
    """
    cache = ctx.cache
    if name is None:
        if actor.default_project_id is None:
            raise InvalidInput("job.project_required", "project")
        cached = cache.get(("project-name", actor.default_project_id))
        if cached is not None:
            return actor.default_project_id, cached
        with ctx.session(read_only=True) as s:
            project = s.get(Project, actor.default_project_id)
            if project is None:
                raise NotFound("job.project_unknown", "project", project=str(actor.default_project_id))
    else:
        project_id = cache.get(("project-id", name))
        if project_id is not None:
            return project_id, name
        with ctx.session(read_only=True) as s:
            project = s.exec(select(Project).where(Project.name == name)).first()
            if project is None:
                raise NotFound("job.project_unknown", "project", project=name)
    cache[("project-name", project.id)] = project.name
    cache[("project-id", project.name)] = project.id
    return project.id, project.name


def cancel_job(ctx: ServiceContext, actor: Actor, job_id: int) -> JobPublic:
    """Stop a job. A ``Held`` job never reached the backend: it is ``Cancelled`` at once (a pending approval for it
    stays for the approvals service to close). A ``Queued`` or ``Running`` one is ``Stopping`` from now on
    (``stop_requested_at``, event ``CancelRequested``, ``reason_code`` ``job.stopping_cancelled``) and the backend
    stops it (SIGTERM, then SIGKILL after the grace period; a stop that does not reach the backend is sent again by
    the leader, ``services.stops``); the reconciler makes it ``Cancelled`` when its last process has exited, and
    its devices count as used until then. A job being stopped by a preemption is
    cancelled instead of going back to the queue. Cancelling a job that is already being cancelled changes
    nothing.

    Returns:
        The job as it is now (``Stopping`` or ``Cancelled``).

    Raises:
        NotFound: unknown/invisible job; Forbidden (``job.cancel_forbidden``): may read but not cancel; Conflict
        (``job.already_final``): already finished.
    """
    with ctx.session() as s:
        job = readable(s, actor, job_id)
        if not can_cancel_job(actor, job.user_id, job.project_id):
            raise Forbidden("job.cancel_forbidden", "id", id=job_id)
        if JobPhase(job.phase).terminal:
            raise Conflict("job.already_final", "id", id=job_id, phase=job.phase)
        now = utcnow()
        c = _JOBS.c
        who = {"user": actor.username}
        held = stopping = 0
        if job.phase == JobPhase.HELD.value:
            # Conditional: when the admission pass admitted it meanwhile, it is stopped in the backend below.
            held = s.execute(_JOBS.update().where(c.id == job.id, c.phase == JobPhase.HELD.value).values(
                phase=JobPhase.CANCELLED.value, reason=job_reasons.english("job.cancelled_by", who),
                # A job back in the queue after a preemption keeps the end of its last run (billing settles to it).
                reason_code="job.cancelled_by", reason_args=who, finished_at=func.coalesce(c.finished_at, now),
            )).rowcount
            if held:
                s.execute(EVENTS.insert(), event_row(job.id, JobPhase.CANCELLED.value, "Cancelled", "job.cancelled_by",
                                                     {"user": actor.username}, at=now))
                oplog.record(s, actor, "job:cancel", f"#{job.id}", code="job.cancel_held")
                admission.nudge(ctx)  # the jobs queued behind it may start
        if not held:
            stopping = _request_stop(s, job, who, now)
            if stopping:
                s.execute(EVENTS.insert(), event_row(job.id, JobPhase.STOPPING.value, "CancelRequested",
                                                     "job.cancel_requested", {"user": actor.username}, at=now))
                oplog.record(s, actor, "job:cancel", f"#{job.id}")
        s.expire_all()
        uid = job.uid
    if not held:
        # Sent after the commit; when it does not reach the backend (unreachable, or the workload not created yet),
        # the leader sends it again (services.stops) - or repair() ends a job the backend never had.
        stops.send(ctx, uid, job_reasons.english("job.cancelled_by", who), "job.cancelled_by", who)
    ctx.kick.set()
    return get_job(ctx, actor, job_id)


def _request_stop(s, job: Job, who: dict, now) -> int:
    """Mark ``job`` (active) as being stopped by the cancel of ``who`` (``{"user": name}``); 1 when this changed it,
    0 when it was being cancelled already or has ended meanwhile.

    A job that is ``Stopping`` for a preemption keeps that reason: its room went to the job it was stopped for
    (admission leaves it out), and counting it again until its processes exit would hold others back. The cancel
    is recorded in its ``reason_args`` (``cancelled_by``) and decides its end: ``Cancelled``, not requeued
    (``services.reconcile``)."""
    c = _JOBS.c
    preempting = (c.phase == JobPhase.STOPPING.value) & (c.reason_code == admission.PREEMPTED)
    cancelling = (c.phase == JobPhase.STOPPING.value) & (c.reason_code == "job.stopping_cancelled")
    row = s.execute(sa_select(c.phase, c.reason_code, c.reason_args).where(c.id == job.id).with_for_update()).first()
    if row is not None and row.phase == JobPhase.STOPPING.value and row.reason_code == admission.PREEMPTED:
        args = dict(row.reason_args or {})
        if "cancelled_by" in args:
            return 0
        args["cancelled_by"] = who["user"]
        return s.execute(_JOBS.update().where(c.id == job.id, preempting).values(reason_args=args)).rowcount
    return s.execute(_JOBS.update().where(
        c.id == job.id, c.phase.in_(admission.ACTIVE_PHASES), ~cancelling, ~preempting).values(
        phase=JobPhase.STOPPING.value, stop_requested_at=now, reason_code="job.stopping_cancelled",
        reason_args=who, reason=job_reasons.english("job.stopping_cancelled", who),
    )).rowcount


def resubmit_job(ctx: ServiceContext, actor: Actor, job_id: int) -> JobPublic:
    """Submit a copy of job ``job_id`` as a new job (same spec, same project). Same errors as submit."""
    with ctx.session(read_only=True) as s:
        job = readable(s, actor, job_id)
        raw = {
            "name": job.name, "project": name_of(s, Project, job.project_id), "priority": job.priority,
            **job_tasks.spec_fields(job),  # what it runs (one task or several) and its options
        }
        for key, value in (("accelerator_model", job.accelerator_model), ("max_runtime", job.max_runtime_s)):
            if value is not None:
                raw[key] = value
        if job.kind != "batch":
            raw["kind"] = job.kind
        if job.preemptible:
            raw["preemptible"] = True
        if not job.requeue_on_preemption:
            raw["requeue_on_preemption"] = False
    return submit_job(ctx, actor, raw, resubmitted_from=job_id)
