"""Asking for an approval: checking the request, the one-pending-request rule, the auto-approval rule for short
extensions, and telling who may decide it."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func
from sqlmodel import Session, select

from crater_app.db.models import Approval, Job, Project, User
from crater_app.db.types import utcnow
from crater_app.domain import quota as quota_lists
from crater_app.domain.approvals import KINDS, REQUESTABLE_KINDS, AutoRule, check_quota_payload, check_reason, merged_quota
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, NotFound
from crater_app.domain.jobs import JobPhase, parse_duration
from crater_app.domain.naming import check_dns1123_label
from crater_app.domain.policy import Actor, can_read_job, can_read_project, can_request_approval
from crater_app.domain.resource_names import Offered, check_offered_keys
from crater_app.schemas import ApprovalPublic
from crater_app.services import oplog
from crater_app.services.approvals import decisions, notices
from crater_app.services.approvals.reading import publics, stored_quota
from crater_app.services.context import ServiceContext
from crater_app.services.projects import project_expired
from crater_app.services.quotas import offered_resources


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
        raise InvalidInput("approval.kind_required", "kind", kinds=list(REQUESTABLE_KINDS))
    if kind not in REQUESTABLE_KINDS:
        raise InvalidInput("approval.kind_large_job", "kind", kinds=list(REQUESTABLE_KINDS))
    reason_text = check_reason(reason)
    if project is not None:
        check_dns1123_label(project, "project")
    if kind == "quota":
        if job_id is not None:
            raise InvalidInput("approval.quota_job_id", "job_id")
        if project is None:
            raise InvalidInput("approval.quota_project_required", "project")
        return _Prepared(kind, reason_text, project=project, payload=check_quota_payload(payload))  # type: ignore[arg-type]
    if job_id is None:
        raise InvalidInput("approval.job_id_required", "job_id", kind=kind)
    if isinstance(job_id, bool) or not isinstance(job_id, int) or not 0 < job_id < 2**63:
        raise InvalidInput("approval.job_id", "job_id")
    if kind == "extend_runtime":
        if not isinstance(payload, dict) or set(payload) != {"max_runtime"}:
            raise InvalidInput("approval.extend_payload", "payload")
        seconds = parse_duration(payload["max_runtime"], "payload.max_runtime")
        return _Prepared(kind, reason_text, project=project, job_id=job_id, payload={"max_runtime": seconds})  # type: ignore[arg-type]
    if payload not in (None, {}):
        raise InvalidInput("approval.lock_payload", "payload")
    return _Prepared(kind, reason_text, project=project, job_id=job_id, payload={})  # type: ignore[arg-type]


def _user_limit(s: Session, ctx: ServiceContext, user_id: int) -> int | None:
    """The user's ceiling on ``max_runtime`` (their own, else the platform default; ``None`` = none)."""
    # Locked (PostgreSQL): two requests of one user are checked against the auto rule one after the other.
    user = s.exec(select(User).where(User.id == user_id).with_for_update()).one()
    return user.max_runtime_s if user.max_runtime_s is not None else ctx.settings.default_max_runtime_s


def _quota_target(s: Session, actor: Actor, req: _Prepared, offered: Offered) -> Project:
    """The project of a ``quota`` request, checked: visible, the caller may ask, not expired, only resources and
    models some node offers (``offered``), a real change."""
    proj = s.exec(select(Project).where(Project.name == req.project)).first()
    if proj is None or not can_read_project(actor, proj.id):
        raise NotFound("project.not_found", "project", name=req.project)
    if not can_request_approval(actor, "quota", proj.id):
        raise Forbidden("approval.quota_forbidden", "project", project=proj.name)
    if project_expired(proj):
        raise Conflict("approval.project_expired", "project", project=proj.name)
    current = stored_quota(proj)
    for section, entries in (req.payload or {}).items():  # only what some node offers (stored keys stay accepted)
        check_offered_keys(entries, offered, f"payload.{section}", accepted=current.get(section) or {})
    try:
        merged = merged_quota(current, req.payload or {})
    except InvalidInput as exc:  # the request would break guarantee <= deserved <= capability: its own field
        exc.field = f"payload.{exc.field}"
        raise
    if merged == quota_lists.parse_quota(current):
        raise InvalidInput("approval.quota_unchanged", "payload")
    return proj


def _job_target(s: Session, actor: Actor, req: _Prepared) -> tuple[Job, Project]:
    """The job of a job request (locked), checked: visible, of the named project, the caller may ask, not
    finished, and the change is possible (a longer ``max_runtime``; not locked already)."""
    job = s.exec(select(Job).where(Job.id == req.job_id).with_for_update()).first()
    if job is None or not can_read_job(actor, job.user_id, job.project_id):
        raise NotFound("approval.job_not_found", "job_id", job_id=req.job_id)
    proj = s.get(Project, job.project_id)
    if req.project is not None and req.project != proj.name:
        raise InvalidInput("approval.job_project_mismatch", "project", job_id=job.id, project=proj.name,
                           asked=req.project)
    if not can_request_approval(actor, req.kind, job.project_id, job.user_id):
        raise Forbidden("approval.job_forbidden", "job_id", project=proj.name)
    if JobPhase(job.phase).terminal:
        raise Conflict("approval.job_finished", "job_id", job_id=job.id, phase=job.phase)
    if req.kind == "extend_runtime":
        new = (req.payload or {})["max_runtime"]
        if job.max_runtime_s is None:
            raise Conflict("approval.no_max_runtime", "job_id", job_id=job.id)
        if new <= job.max_runtime_s:
            raise InvalidInput("approval.runtime_not_longer", "payload.max_runtime", asked=new,
                               current=job.max_runtime_s)
    elif job.reclaim_lock:
        raise Conflict("approval.already_locked", "job_id", job_id=job.id)
    return job, proj


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
        InvalidInput: a field breaks its rule (``approval.kind_required``, ``approval.reason_*``,
        ``approval.quota_*``, ``approval.runtime_not_longer``, a quota resource or model no node offers
        (``resource.*``, field ``payload.<section>.<key>``), ...; the field named, with the limit). NotFound:
        ``project.not_found``/``approval.job_not_found`` (missing or not visible). Forbidden:
        ``approval.quota_forbidden``/``approval.job_forbidden``. Conflict: the target cannot take it
        (``approval.job_finished``, ``approval.no_max_runtime``, ``approval.already_locked``,
        ``approval.project_expired``) or ``approval.duplicate`` (a pending request of this kind for it already).
    """
    req = _prepare(kind, reason, project, job_id, payload)
    extend_uid: str | None = None
    offered = offered_resources(ctx) if req.kind == "quota" else None
    with ctx.session() as s:
        job: Job | None = None
        if req.kind == "quota":
            proj = _quota_target(s, actor, req, offered)  # type: ignore[arg-type]
            project_id, target = proj.id, notices.project_target(proj.name)
        else:
            job, proj = _job_target(s, actor, req)
            project_id, target = job.project_id, notices.job_target(job.id, job.name)
        duplicate = s.exec(select(Approval.id).where(
            Approval.status == "pending", Approval.kind == req.kind, Approval.requester_id == actor.user_id,
            (Approval.job_id == job.id) if job is not None else (Approval.project_id == project_id),
        )).first()
        if duplicate is not None:
            raise Conflict("approval.duplicate", "kind", kind=req.kind, target=target, id=duplicate)
        a = Approval(kind=req.kind, requester_id=actor.user_id, project_id=project_id,
                     job_id=job.id if job is not None else None, payload=req.payload or {}, reason=req.reason)
        s.add(a)
        s.flush()
        oplog.record(s, actor, "approval:create", f"approval#{a.id}", code="approval.created",
                     args={"kind": a.kind, "target": target})
        if job is not None and req.kind == "extend_runtime" and _maybe_auto(ctx, s, actor, a, job, target):
            if job.phase in decisions.BACKEND_PHASES:
                extend_uid = job.uid
        if a.status == "pending":
            notices.notify_deciders(s, actor, a, target)
        result = publics(s, actor, [a])[0]
    if extend_uid is not None:
        decisions.extend_backend(ctx, extend_uid, a.payload["max_runtime"])
    return result


def _maybe_auto(ctx: ServiceContext, s: Session, actor: Actor, a: Approval, job: Job, target: dict) -> bool:
    """Approve ``a`` (an ``extend_runtime`` request) by the auto rule when it applies; whether it did."""
    rule = AutoRule(ctx.settings.auto_extend_max_s, ctx.settings.auto_extend_window_s)
    new = a.payload["max_runtime"]
    before = job.max_runtime_s
    added = new - (before or 0)
    limit = _user_limit(s, ctx, actor.user_id)
    last = s.exec(select(func.max(Approval.decided_at)).where(
        Approval.requester_id == actor.user_id, Approval.auto == True)).one()  # noqa: E712 - SQL expression
    now = utcnow()
    if not rule.applies(added, last, now, new, limit):
        return False
    a.decision_code, a.decision_args, a.decision_note = notices.auto_note(rule.max_s, rule.window_s)
    a.status, a.auto, a.decided_at = "approved", True, now
    s.add(a)
    decisions.apply(s, None, a, job, "")
    notices.notify_outcome(s, a, None, "approved", target)
    oplog.record(s, None, "approval:approve", f"approval#{a.id}", code="approval.approved_auto",
                 args={"target": target, "before": before, "after": new})
    return True
