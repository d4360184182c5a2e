"""Approval requests (Crater's "approval orders"): ask, list, read, approve or reject, and close the orphans.

Rules (the permission checks are in :mod:`crater_app.domain.policy`):

- A request has a kind (see :mod:`crater_app.domain.approvals`), a reason (1..1,000 characters) and a target: a
  project (``quota``) or a job (``extend_runtime``, ``reclaim_lock``, ``large_job``). One pending request per
  requester, kind and target at a time.
- Platform admins decide every request; a project's admins decide the requests of their project except
  ``quota`` and except their own. A decision may carry a note (at most 1,000 characters); a request is decided
  once (a second decision is a 409).
- Approving applies the request at once, in the decision's transaction: the project's quota sections take the
  payload's entries; the job's ``max_runtime`` grows (and the backend's deadline with it); the job gets its
  reclaim lock; a held large job goes on to admission (``ctx.kick``). Rejecting a large job cancels it.
- Auto-approval (``settings.auto_extend_max_s``/``auto_extend_window_s``, Crater's default: an extension under
  12 h, at most once per 48 h per user): such an ``extend_runtime`` request is approved when it is made,
  ``auto=True``, with no decider. It never grants beyond the user's own ``max_runtime`` ceiling.
- A pending request whose target is gone (the job finished, was cancelled or deleted, a large job no longer
  waits; the project expired) is closed: by :func:`close_orphans` from the leader loop, and when someone tries
  to decide it (409).
- Every change writes an operation-log row, and every decision (and closing) a notification for the requester,
  in the same transaction; a new pending request notifies who may decide it (platform admins, and the project's
  admins except for quota).
"""

from __future__ import annotations

from dataclasses import dataclass
from sqlalchemy import and_, bindparam, func, or_, update
from sqlmodel import Session, select

from crater_app.db.models import Approval, Job, JobEvent, OperationLog, Project, ProjectMember, User
from crater_app.schemas import ApprovalPage, ApprovalPublic
from crater_app.db.types import utcnow
from crater_app.domain import quota as quota_lists
from crater_app.domain.approvals import (
    JOB_KINDS,
    KINDS,
    REQUESTABLE_KINDS,
    STATUSES,
    AutoRule,
    check_note,
    check_quota_payload,
    check_reason,
    merged_quota,
)
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, NotFound
from crater_app.domain.jobs import TERMINAL_PHASES, JobPhase, parse_duration
from crater_app.domain.naming import check_dns1123_label
from crater_app.domain.paging import check_page
from crater_app.domain.policy import (
    Actor,
    approval_projects,
    can_decide_approval,
    can_read_approval,
    can_read_job,
    can_read_project,
    can_request_approval,
)
from crater_app.services import admission, notifications, oplog
from crater_app.services.context import ServiceContext
from crater_app.services.projects import project_expired

MAX_PAGE_SIZE = 200
KIND_LABELS = {"quota": "quota", "extend_runtime": "runtime extension", "reclaim_lock": "reclaim lock",
               "large_job": "large job"}
_TERMINAL = tuple(p.value for p in TERMINAL_PHASES)
_BACKEND_PHASES = (JobPhase.QUEUED.value, JobPhase.RUNNING.value)  # phases in which the backend knows the job


def _fmt_s(seconds: int | None) -> str:
    if seconds is None:
        return "none"
    hours, rest = divmod(seconds, 3600)
    return f"{seconds} s ({hours} h {rest // 60} min)" if hours else f"{seconds} s"


# ---- reading --------------------------------------------------------------------------------------------------
def _effective_project(a: Approval, job: Job | None) -> int | None:
    """The project a request belongs to: its own ``project_id``, else its job's (rows written by the
    submission path may leave ``project_id`` empty)."""
    return a.project_id if a.project_id is not None else (job.project_id if job is not None else None)


def _stored_quota(project: Project) -> dict[str, dict]:
    """The project's quota sections as stored (resource lists; ``{}`` for an empty section)."""
    return {section: dict(getattr(project, section) or {}) for section in quota_lists.SECTIONS}


def _current(a: Approval, job: Job | None, project: Project | None) -> dict:
    if a.kind == "quota":
        return {} if project is None else _stored_quota(project)
    if job is None:
        return {}
    if a.kind == "extend_runtime":
        return {"max_runtime": job.max_runtime_s}
    if a.kind == "reclaim_lock":
        return {"reclaim_lock": job.reclaim_lock}
    return {"phase": job.phase, "gpus": job.gpus}


def _publics(s: Session, actor: Actor, rows: list[Approval]) -> list[ApprovalPublic]:
    """Public forms of ``rows`` with names resolved in three queries (users, jobs, projects)."""
    job_ids = {a.job_id for a in rows if a.job_id is not None}
    jobs = {j.id: j for j in s.exec(select(Job).where(Job.id.in_(job_ids)))} if job_ids else {}  # type: ignore[union-attr]
    project_ids = {_effective_project(a, jobs.get(a.job_id)) for a in rows} - {None}
    projects = ({p.id: p for p in s.exec(select(Project).where(Project.id.in_(project_ids)))}  # type: ignore[union-attr]
                if project_ids else {})
    user_ids = {a.requester_id for a in rows} | {a.decided_by for a in rows if a.decided_by is not None}
    names = dict(s.exec(select(User.id, User.username).where(User.id.in_(user_ids))).all()) if user_ids else {}  # type: ignore[union-attr]
    out = []
    for a in rows:
        job = jobs.get(a.job_id) if a.job_id is not None else None
        pid = _effective_project(a, job)
        project = projects.get(pid) if pid is not None else None
        out.append(ApprovalPublic(
            id=a.id, kind=a.kind, status=a.status, requester=names.get(a.requester_id, f"#{a.requester_id}"),
            project=project.name if project else None, job_id=a.job_id, job_name=job.name if job else None,
            payload=a.payload, current=_current(a, job, project), reason=a.reason, auto=a.auto,
            decided_by=names.get(a.decided_by) if a.decided_by is not None else None,
            decision_note=a.decision_note, created_at=a.created_at, decided_at=a.decided_at,
            can_decide=a.status == "pending" and can_decide_approval(actor, a.kind, pid, a.requester_id),
        ))
    return out


def list_approvals(
    ctx: ServiceContext, actor: Actor, status: str | None = None, kind: str | None = None, mine: bool = False,
    page: int = 1, page_size: int = 20,
) -> ApprovalPage:
    """Requests the caller may read, newest first: every request for platform admins, those of the projects
    they administer plus their own for others; ``mine`` keeps only the caller's own.

    Raises:
        InvalidInput: unknown ``status``/``kind``, ``page`` outside 1..1,000,000, ``page_size`` outside 1..200.
    """
    if status is not None and status not in STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(STATUSES)}", "status")
    if kind is not None and kind not in KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}", "kind")
    check_page(page, page_size, MAX_PAGE_SIZE)

    def where(stmt):
        if mine:
            stmt = stmt.where(Approval.requester_id == actor.user_id)
        elif not actor.is_admin:
            visible = [Approval.requester_id == actor.user_id]
            admin_of = approval_projects(actor)
            if admin_of:
                # Each term can use an index (requester_id, project_id), so the OR is a union of index lookups;
                # rows without project_id (written by the submission path) are matched through their job.
                visible.append(Approval.project_id.in_(admin_of))  # type: ignore[union-attr]
                visible.append(and_(Approval.project_id.is_(None),  # type: ignore[union-attr]
                                    Approval.job_id.in_(select(Job.id).where(Job.project_id.in_(admin_of)))))  # type: ignore[union-attr]
            stmt = stmt.where(or_(*visible))
        if status:
            stmt = stmt.where(Approval.status == status)
        if kind:
            stmt = stmt.where(Approval.kind == kind)
        return stmt

    with ctx.session(read_only=True) as s:
        total = s.exec(where(select(func.count()).select_from(Approval))).one()
        rows = list(s.exec(where(select(Approval)).order_by(Approval.id.desc())  # type: ignore[union-attr]
                           .offset((page - 1) * page_size).limit(page_size)).all())
        return ApprovalPage(items=_publics(s, actor, rows), total=total, page=page, page_size=page_size)


def _visible(s: Session, actor: Actor, approval_id: object, lock: bool = False) -> tuple[Approval, Job | None, int | None]:
    if isinstance(approval_id, bool) or not isinstance(approval_id, int) or not 0 < approval_id < 2**63:
        raise NotFound(f"approval request {approval_id} does not exist", "id")
    stmt = select(Approval).where(Approval.id == approval_id)
    a = s.exec(stmt.with_for_update() if lock else stmt).first()
    job = None
    if a is not None and a.job_id is not None:
        job_stmt = select(Job).where(Job.id == a.job_id)
        job = s.exec(job_stmt.with_for_update() if lock else job_stmt).first()
    pid = _effective_project(a, job) if a is not None else None
    if a is None or not can_read_approval(actor, a.requester_id, pid):
        raise NotFound(f"approval request {approval_id} does not exist", "id")
    return a, job, pid


def get_approval(ctx: ServiceContext, actor: Actor, approval_id: int) -> ApprovalPublic:
    """One request. Raises :class:`NotFound` when it does not exist or the caller may not read it."""
    with ctx.session(read_only=True) as s:
        a, _, _ = _visible(s, actor, approval_id)
        return _publics(s, actor, [a])[0]


# ---- asking -------------------------------------------------------------------------------------------------
@dataclass
class _Prepared:
    """A checked request, before the transaction."""

    kind: str
    reason: str
    project: str | None = None
    job_id: int | None = None
    payload: dict | None = None


def _prepare(kind: object, reason: object, project: object, job_id: object, payload: object) -> _Prepared:
    if not isinstance(kind, str) or kind not in KINDS:
        raise InvalidInput(f"kind is required and must be one of {', '.join(REQUESTABLE_KINDS)}", "kind")
    if kind not in REQUESTABLE_KINDS:
        raise InvalidInput(
            "large_job requests are made by submitting a job above the accelerator threshold; they cannot be asked "
            f"for by hand. kind must be one of {', '.join(REQUESTABLE_KINDS)}", "kind")
    reason_text = check_reason(reason)
    if project is not None:
        check_dns1123_label(project, "project")
    if kind == "quota":
        if job_id is not None:
            raise InvalidInput("job_id is not used by quota requests (they name a project)", "job_id")
        if project is None:
            raise InvalidInput("project is required for a quota request", "project")
        return _Prepared(kind, reason_text, project=project, payload=check_quota_payload(payload))  # type: ignore[arg-type]
    if job_id is None:
        raise InvalidInput(f"job_id is required for a {kind} request", "job_id")
    if isinstance(job_id, bool) or not isinstance(job_id, int) or not 0 < job_id < 2**63:
        raise InvalidInput("job_id must be a job's id (a positive integer)", "job_id")
    if kind == "extend_runtime":
        if not isinstance(payload, dict) or set(payload) != {"max_runtime"}:
            raise InvalidInput('payload must be {"max_runtime": seconds or a duration such as "6h"}', "payload")
        seconds = parse_duration(payload["max_runtime"], "payload.max_runtime")
        return _Prepared(kind, reason_text, project=project, job_id=job_id, payload={"max_runtime": seconds})  # type: ignore[arg-type]
    if payload not in (None, {}):
        raise InvalidInput("reclaim_lock requests take no payload", "payload")
    return _Prepared(kind, reason_text, project=project, job_id=job_id, payload={})  # type: ignore[arg-type]


def _user_limit(s: Session, ctx: ServiceContext, user_id: int) -> int | None:
    """The user's ceiling on ``max_runtime`` (their own, else the platform default; ``None`` = none)."""
    # Locked (PostgreSQL): two requests of one user are checked against the auto rule one after the other.
    user = s.exec(select(User).where(User.id == user_id).with_for_update()).one()
    return user.max_runtime_s if user.max_runtime_s is not None else ctx.settings.default_max_runtime_s


def create_request(
    ctx: ServiceContext, actor: Actor, kind: object, reason: object, project: object = None, job_id: object = None,
    payload: object = None,
) -> ApprovalPublic:
    """Ask for an approval. An ``extend_runtime`` request that meets the auto-approval rule is approved at once.

    Args:
        kind: ``quota``, ``extend_runtime`` or ``reclaim_lock``. reason: 1..1,000 characters.
        project: the project's name (required for ``quota``; for job kinds optional, and then it must be the
            job's). job_id: the job (job kinds). payload: ``quota``: ``{"guarantee"|"deserved"|"capability":
            resource list}``; ``extend_runtime``: ``{"max_runtime": seconds or "6h"}``, above the job's current
            one; ``reclaim_lock``: none.

    Returns:
        The request: ``pending``, or ``approved`` with ``auto=True``.

    Raises:
        InvalidInput: a field breaks its rule (named, with the limit). NotFound: the project or job does not
        exist or is not visible. Forbidden: the caller may not ask for this. Conflict: the target cannot take it
        (job finished, no ``max_runtime`` to extend, already locked, project expired) or the caller already has
        a pending request of this kind for it.
    """
    req = _prepare(kind, reason, project, job_id, payload)
    auto_note = ""
    extend_uid: str | None = None
    with ctx.session() as s:
        job: Job | None = None
        if req.kind == "quota":
            proj = s.exec(select(Project).where(Project.name == req.project)).first()
            if proj is None or not can_read_project(actor, proj.id):
                raise NotFound(f"project '{req.project}' does not exist", "project")
            if not can_request_approval(actor, "quota", proj.id):
                raise Forbidden(f"only admins and members of project '{proj.name}' may ask for more quota", "project")
            if project_expired(proj):
                raise Conflict(f"project '{proj.name}' has expired; it takes no more quota", "project")
            current = _stored_quota(proj)
            try:
                merged = merged_quota(current, req.payload or {})
            except InvalidInput as exc:
                raise InvalidInput(f"payload: {exc.message}", f"payload.{exc.field}") from None
            if merged == quota_lists.parse_quota(current):
                raise InvalidInput("payload asks for the quota the project already has", "payload")
            project_id, target = proj.id, f"project {proj.name}"
        else:
            job = s.exec(select(Job).where(Job.id == req.job_id).with_for_update()).first()
            if job is None or not can_read_job(actor, job.user_id, job.project_id):
                raise NotFound(f"job {req.job_id} does not exist", "job_id")
            proj = s.get(Project, job.project_id)
            if req.project is not None and req.project != proj.name:
                raise InvalidInput(f"job {job.id} belongs to project '{proj.name}', not '{req.project}'", "project")
            if not can_request_approval(actor, req.kind, job.project_id, job.user_id):
                raise Forbidden(f"only the job's owner and the admins of project '{proj.name}' may ask for this",
                                "job_id")
            if JobPhase(job.phase).terminal:
                raise Conflict(f"job {job.id} is already {job.phase}; there is nothing left to approve", "job_id")
            if req.kind == "extend_runtime":
                new = (req.payload or {})["max_runtime"]
                if job.max_runtime_s is None:
                    raise Conflict(f"job {job.id} has no max_runtime: it already runs without a time limit", "job_id")
                if new <= job.max_runtime_s:
                    raise InvalidInput(
                        f"payload.max_runtime {new} s is not above the job's current max_runtime of "
                        f"{job.max_runtime_s} s", "payload.max_runtime")
            elif job.reclaim_lock:
                raise Conflict(f"job {job.id} already holds a reclaim lock", "job_id")
            project_id, target = job.project_id, f"job {job.name} (#{job.id})"
        duplicate = s.exec(select(Approval.id).where(
            Approval.status == "pending", Approval.kind == req.kind, Approval.requester_id == actor.user_id,
            (Approval.job_id == job.id) if job is not None else (Approval.project_id == project_id),
        )).first()
        if duplicate is not None:
            raise Conflict(f"you already have a pending {KIND_LABELS[req.kind]} request for {target} "
                           f"(#{duplicate})", "kind")
        a = Approval(kind=req.kind, requester_id=actor.user_id, project_id=project_id,
                     job_id=job.id if job is not None else None, payload=req.payload or {}, reason=req.reason)
        s.add(a)
        s.flush()
        oplog.record(s, actor, "approval:create", f"approval#{a.id}", details=f"kind={a.kind}; target={target}")
        if job is not None and req.kind == "extend_runtime":
            auto_note = _maybe_auto(ctx, s, actor, a, job)
            if auto_note and job.phase in _BACKEND_PHASES:
                extend_uid = job.uid
        if a.status == "pending":
            notify_deciders(s, actor, a, target)
        result = _publics(s, actor, [a])[0]
    if extend_uid is not None:
        _extend_backend(ctx, extend_uid, a.payload["max_runtime"])
    return result


MAX_DECIDERS_NOTIFIED = 50


def notify_deciders(s: Session, actor: Actor, a: Approval, target: str) -> None:
    """Notify who may decide the new request ``a`` (``approval.requested``): the active platform admins and,
    except for ``quota``, the admins of its project; never the requester (``actor``); at most 50 people. Call it
    in the transaction that writes ``a`` (``a.id`` and ``a.project_id`` set; ``target`` names the job or project
    in English, e.g. :func:`job_target`); the submission path does so for ``large_job`` requests."""
    admins = select(User.id).where(User.role == "admin", User.status == "active")
    recipients = set(s.exec(admins.limit(MAX_DECIDERS_NOTIFIED)).all())
    if a.kind != "quota" and a.project_id is not None:
        recipients |= set(s.exec(
            select(ProjectMember.user_id).join(User, User.id == ProjectMember.user_id)
            .where(ProjectMember.project_id == a.project_id, ProjectMember.role == "admin", User.status == "active",
                   User.role != "guest").limit(MAX_DECIDERS_NOTIFIED)).all())
    recipients.discard(actor.user_id)
    label = KIND_LABELS.get(a.kind, a.kind)
    notifications.add_rows(s, [
        notifications.row(user_id, "approval.requested",
                          {"id": a.id, "kind": a.kind, "target": target, "by": actor.username, "note": ""},
                          f"{actor.username} asks for a {label} for {target} (request #{a.id}): {a.reason}"[:2000])
        for user_id in sorted(recipients)[:MAX_DECIDERS_NOTIFIED]
    ])


def _maybe_auto(ctx: ServiceContext, s: Session, actor: Actor, a: Approval, job: Job) -> str:
    """Approve ``a`` (an ``extend_runtime`` request) by the auto rule when it applies; returns the note."""
    rule = AutoRule(ctx.settings.auto_extend_max_s, ctx.settings.auto_extend_window_s)
    new = a.payload["max_runtime"]
    added = new - (job.max_runtime_s or 0)
    limit = _user_limit(s, ctx, actor.user_id)
    last = s.exec(select(func.max(Approval.decided_at)).where(
        Approval.requester_id == actor.user_id, Approval.auto == True)).one()  # noqa: E712 - SQL expression
    now = utcnow()
    if not rule.applies(added, last, now, new, limit):
        return ""
    note = (f"approved automatically: an extension under {rule.max_s // 3600} h, at most once per "
            f"{rule.window_s // 3600} h per user")
    a.status, a.auto, a.decided_at, a.decision_note = "approved", True, now, note
    s.add(a)
    _apply(s, None, a, job, note)
    _notify(s, a, job, None, "approved", note, job_target(job))
    oplog.record(s, None, "approval:approve", f"approval#{a.id}",
                 details=f"kind=extend_runtime; target={job_target(job)}; auto; max_runtime {_fmt_s(job.max_runtime_s)}")
    return note


def job_target(job: Job) -> str:
    """How a job is named in sentences: ``job <name> (#<id>)``."""
    return f"job {job.name} (#{job.id})"


# ---- deciding -----------------------------------------------------------------------------------------------
def _lost_target(a: Approval, job: Job | None, project: Project | None) -> str | None:
    """Why the request's target is gone, or ``None`` when it is still there."""
    if a.kind == "quota":
        if project is None:
            return "its project no longer exists"
        if project_expired(project):
            return f"project '{project.name}' has expired"
        return None
    if job is None:
        return f"job #{a.job_id} no longer exists"
    if JobPhase(job.phase).terminal:
        return f"job {job.name} (#{job.id}) is {job.phase}"
    if a.kind == "large_job" and job.phase != JobPhase.HELD.value:
        return f"job {job.name} (#{job.id}) no longer waits for approval (it is {job.phase})"
    return None


def _close(s: Session, a: Approval, job: Job | None, why: str, target: str) -> None:
    """Close pending request ``a`` (its target is gone): status, note, notification, operation-log row."""
    note = f"closed: {why}"
    a.status, a.decided_at, a.decision_note = "closed", utcnow(), note
    s.add(a)
    _notify(s, a, job, None, "closed", note, target)
    oplog.record(s, None, "approval:close", f"approval#{a.id}", details=f"kind={a.kind}; {why}")


def _notification(a: Approval, by: Actor | None, outcome: str, note: str, target: str) -> dict:
    """The ``notifications`` row telling the requester of ``a`` that it was ``outcome`` (approved, rejected,
    closed)."""
    label = KIND_LABELS.get(a.kind, a.kind)
    who = by.username if by is not None else ""
    if outcome == "closed":
        message = f"Your {label} request #{a.id} for {target} was closed: {note.removeprefix('closed: ')}"
    else:
        message = f"Your {label} request #{a.id} for {target} was {outcome}" + (f" by {who}" if who else "") + (
            f": {note}" if note else "")
    return notifications.row(a.requester_id, f"approval.{outcome}",
                             {"id": a.id, "kind": a.kind, "target": target, "by": who, "note": note}, message)


def _notify(s: Session, a: Approval, job: Job | None, by: Actor | None, outcome: str, note: str, target: str) -> None:
    notifications.add_rows(s, [_notification(a, by, outcome, note, target)])


def _apply(s: Session, actor: Actor | None, a: Approval, job: Job | None, note: str) -> None:
    """Carry out approved request ``a`` on its target (in the decision's transaction).

    Raises:
        Conflict: the change no longer fits (the quota became inconsistent, the job's ``max_runtime`` is already
        at least the one asked).
    """
    by = actor.username if actor is not None else "the auto-approval rule"
    suffix = f" (approval #{a.id}" + (f": {note}" if note and actor is not None else "") + ")"
    if a.kind == "quota":
        project = s.exec(select(Project).where(Project.id == a.project_id).with_for_update()).one()
        try:
            merged = merged_quota(_stored_quota(project), a.payload)
        except InvalidInput as exc:
            raise Conflict(f"the quota of project '{project.name}' changed since the request: {exc.message}",
                           "id") from None
        # Stored in canonical form, as services.quotas.set_quota stores it (ProjectQuotaPublic reads strings).
        for section in quota_lists.SECTIONS:
            setattr(project, section, quota_lists.render_quota_list(getattr(merged, section)))
        s.add(project)
        return
    assert job is not None
    if a.kind == "extend_runtime":
        new = a.payload["max_runtime"]
        if job.max_runtime_s is not None and new <= job.max_runtime_s:
            raise Conflict(f"job {job.id} already has a max_runtime of {job.max_runtime_s} s, not less than the "
                           f"{new} s asked", "id")
        s.add(JobEvent(job_id=job.id, phase=job.phase, reason="RuntimeExtended",
                       message=f"max_runtime extended from {_fmt_s(job.max_runtime_s)} to {_fmt_s(new)} by {by}{suffix}"))
        job.max_runtime_s = new
    elif a.kind == "reclaim_lock":
        job.reclaim_lock = True
        s.add(JobEvent(job_id=job.id, phase=job.phase, reason="ReclaimLocked",
                       message=f"locked against automatic reclamation by {by}{suffix}"))
    else:  # large_job: on to admission (the admission loop admits it when its quota has room)
        job.reason_code, job.reason_args = "quota", {}
        job.reason = "waiting for admission (approved)"
        s.add(JobEvent(job_id=job.id, phase=job.phase, reason="Approved",
                       message=f"approved to run with {job.gpus} accelerators by {by}{suffix}"))
    s.add(job)


def _reject_target(s: Session, actor: Actor, a: Approval, job: Job | None, note: str) -> None:
    """What a rejection does to the target: a held large job is cancelled; other targets stay as they are."""
    if a.kind != "large_job" or job is None:
        return
    now = utcnow()
    why = f"the request to run it with {job.gpus} accelerators was rejected by {actor.username}" + (
        f": {note}" if note else "")
    job.phase, job.finished_at, job.reason, job.reason_code, job.reason_args = (
        JobPhase.CANCELLED.value, now, why, "", {})
    s.add(job)
    s.add(JobEvent(job_id=job.id, at=now, phase=job.phase, reason="Rejected", message=why))


def decide(ctx: ServiceContext, actor: Actor, approval_id: int, approve: bool, note: object = None) -> ApprovalPublic:
    """Approve (``approve=True``) or reject a pending request, with an optional ``note`` (<= 1,000 characters).

    Approving carries the request out (see the module's rules); rejecting a large job cancels it. A request
    whose target is gone is closed instead, and the call fails with 409.

    Raises:
        InvalidInput: bad ``note``. NotFound: no such request, or not visible to the caller. Forbidden: the
        caller may read but not decide it. Conflict: already decided or closed, its target is gone (it is closed
        now), or the change no longer fits.
    """
    note_text = check_note(note)
    closed_why: str | None = None
    extend: tuple[str, int] | None = None
    with ctx.session() as s:
        a, job, pid = _visible(s, actor, approval_id, lock=True)
        if not can_decide_approval(actor, a.kind, pid, a.requester_id):
            if a.kind == "quota":
                raise Forbidden("only platform admins decide quota requests", "id")
            if a.requester_id == actor.user_id:
                raise Forbidden("you may not decide your own request; a platform admin does", "id")
            raise Forbidden("only platform admins and the admins of the request's project decide it", "id")
        if a.status != "pending":
            by = f" ({a.decision_note})" if a.status == "closed" and a.decision_note else ""
            raise Conflict(f"approval request {a.id} is already {a.status}{by}", "id")
        project = s.get(Project, pid) if pid is not None else None
        target = f"project {project.name}" if a.kind == "quota" and project else (
            job_target(job) if job is not None else f"job #{a.job_id}")
        closed_why = _lost_target(a, job, project)
        if closed_why is not None:
            _close(s, a, job, closed_why, target)
        else:
            outcome = "approved" if approve else "rejected"
            if approve:
                _apply(s, actor, a, job, note_text)
                if a.kind == "extend_runtime" and job is not None and job.phase in _BACKEND_PHASES:
                    extend = (job.uid, a.payload["max_runtime"])
            else:
                _reject_target(s, actor, a, job, note_text)
            a.status, a.decided_by, a.decided_at, a.decision_note = outcome, actor.user_id, utcnow(), note_text
            s.add(a)
            _notify(s, a, job, actor, outcome, note_text, target)
            oplog.record(s, actor, f"approval:{'approve' if approve else 'reject'}", f"approval#{a.id}",
                         details=f"kind={a.kind}; target={target}" + (f"; note={note_text}" if note_text else ""))
        result = _publics(s, actor, [a])[0]
    if closed_why is not None:
        raise Conflict(f"approval request {approval_id} was closed: {closed_why}", "id")
    if extend is not None:
        _extend_backend(ctx, *extend)
    if result.kind == "large_job" and result.status == "approved":
        admission.nudge(ctx)  # the admission loop admits it when there is room
    elif result.kind == "quota" and result.status == "approved":
        admission.invalidate(ctx)  # as services.quotas.set_quota: held jobs may fit the new quota
    return result


def approve(ctx: ServiceContext, actor: Actor, approval_id: int, note: object = None) -> ApprovalPublic:
    """:func:`decide` with ``approve=True``."""
    return decide(ctx, actor, approval_id, True, note)


def reject(ctx: ServiceContext, actor: Actor, approval_id: int, note: object = None) -> ApprovalPublic:
    """:func:`decide` with ``approve=False``."""
    return decide(ctx, actor, approval_id, False, note)


def _extend_backend(ctx: ServiceContext, uid: str, max_runtime_s: int) -> None:
    """Move the backend's deadline of ``uid`` (a job it knows) after its ``max_runtime`` grew. A job the backend
    does not know yet is handed to it later with the new value (its workload is built from the job row)."""
    try:
        ctx.backend.extend(uid, max_runtime_s)
    except KeyError:
        pass


# ---- orphans --------------------------------------------------------------------------------------------------
def close_orphans(ctx: ServiceContext) -> int:
    """Close every pending request whose target is gone (see :func:`_lost_target`); called by the leader loop.

    One query on the pending requests (index ``ix_approvals_status_id``) joined with their jobs and projects
    finds them; usually it returns nothing. Each is closed with a conditional UPDATE (``status = 'pending'``),
    so a decision made at the same moment wins and nothing is closed twice.

    Returns:
        How many requests were closed.
    """
    now = utcnow()
    stmt = (
        select(Approval, Job, Project)
        .outerjoin(Job, Job.id == Approval.job_id)
        .outerjoin(Project, Project.id == func.coalesce(Approval.project_id, Job.project_id))
        .where(Approval.status == "pending")
        .where(or_(
            and_(Approval.kind.in_(JOB_KINDS), or_(Job.id.is_(None), Job.phase.in_(_TERMINAL))),  # type: ignore[union-attr]
            and_(Approval.kind == "large_job", Job.phase != JobPhase.HELD.value),
            and_(Approval.kind == "quota", or_(Project.id.is_(None), Project.expires_at <= now)),  # type: ignore[union-attr]
        ))
        # Locked (PostgreSQL) and so still pending when updated below; a request being decided right now is
        # skipped (the decision closes it itself, or the next round does).
        .with_for_update(of=Approval, skip_locked=True)  # type: ignore[arg-type]
    )
    with ctx.session() as s:
        found = []
        for a, job, project in s.exec(stmt).all():
            why = _lost_target(a, job, project)
            if why is not None:
                target = f"project {project.name}" if a.kind == "quota" and project else (
                    job_target(job) if job is not None else f"job #{a.job_id}")
                found.append((a, why, target))
        if not found:
            return 0
        # Written in three statements whatever the number (an executemany each), so that the write transaction
        # stays short when many jobs ended at once.
        s.connection().execute(
            update(Approval.__table__).where(Approval.__table__.c.id == bindparam("b_id"))
            .values(status="closed", decided_at=now, decision_note=bindparam("b_note")),
            [{"b_id": a.id, "b_note": f"closed: {why}"} for a, why, _ in found],
        )
        notifications.add_rows(s, [_notification(a, None, "closed", f"closed: {why}", target) for a, why, target in found])
        s.connection().execute(OperationLog.__table__.insert(), [
            oplog.row(None, "approval:close", f"approval#{a.id}", details=f"kind={a.kind}; {why}")
            for a, why, _ in found])
        for a, _, _ in found:
            s.expunge(a)  # the rows were changed behind the ORM's back
    return len(found)
