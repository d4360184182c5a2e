"""Deciding a request: who may, approving (its effect on the project's quota or the job, in the decision's
transaction), rejecting (a large job is cancelled), and closing a request whose target is gone."""

from __future__ import annotations

from sqlmodel import Session, select

from crater_app import i18n
from crater_app.db.models import Approval, Job, Project
from crater_app.db.types import utcnow
from crater_app.domain import quota as quota_lists
from crater_app.domain.approvals import check_note, merged_quota
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput
from crater_app.domain.jobs import JobPhase
from crater_app.domain.policy import Actor, can_decide_approval
from crater_app.schemas import ApprovalPublic
from crater_app.services import admission, oplog
from crater_app.services.approvals import notices
from crater_app.services.approvals.reading import publics, stored_quota, visible
from crater_app.services.context import ServiceContext
from crater_app.services.job_events import EVENTS, event_row

#: phases in which the backend knows the job (its deadline moves with an extension)
BACKEND_PHASES = (JobPhase.QUEUED.value, JobPhase.RUNNING.value)
#: ``reason_code`` of a large job approved and waiting for admission, and of one whose request was rejected
#: (their sentences are ``hold.approved`` and ``hold.rejected`` in the catalogues)
APPROVED, REJECTED = "approved", "rejected"


def close(s: Session, a: Approval, job: Job | None, why: dict, target: dict) -> None:
    """Close pending request ``a`` (its target is gone, ``why``): status, note, notification, operation-log row."""
    a.decision_code, a.decision_args, a.decision_note = notices.closed_note(why)
    a.status, a.decided_at = "closed", utcnow()
    s.add(a)
    notices.notify_outcome(s, a, None, "closed", target, why=why)
    oplog.record(s, None, "approval:close", f"approval#{a.id}", code="approval.closed",
                 args={"kind": a.kind, "why": why})


def apply(s: Session, actor: Actor | None, a: Approval, job: Job | None, note: str) -> None:
    """Carry out approved request ``a`` on its target (in the decision's transaction); ``actor`` ``None`` is the
    auto-approval rule, ``note`` the decider's.

    Raises:
        Conflict: the change no longer fits: ``approval.quota_changed`` (the quota changed since the request and
        the result breaks a rule: ``why``, that rule's message), ``approval.runtime_not_longer_now`` (the job's
        ``max_runtime`` is already at least the one asked).
    """
    by, end = notices.by_whom(actor), notices.via(a.id, note)
    if a.kind == "quota":
        project = s.exec(select(Project).where(Project.id == a.project_id).with_for_update()).one()
        try:
            merged = merged_quota(stored_quota(project), a.payload)
        except InvalidInput as exc:
            why = {"key": "error." + exc.code, "args": exc.params}  # the rule the merged quota breaks
            raise Conflict("approval.quota_changed", "id", project=project.name, why=why) from None
        # Stored in canonical form, as services.quotas.set_quota stores it (ProjectQuotaPublic reads strings).
        for section in quota_lists.SECTIONS:
            setattr(project, section, quota_lists.render_quota_list(getattr(merged, section)))
        s.add(project)
        return
    assert job is not None
    if a.kind == "extend_runtime":
        new = a.payload["max_runtime"]
        if job.max_runtime_s is not None and new <= job.max_runtime_s:
            raise Conflict("approval.runtime_not_longer_now", "id", job_id=job.id, current=job.max_runtime_s,
                           asked=new)
        s.execute(EVENTS.insert(), [event_row(job.id, job.phase, "RuntimeExtended", "approval.runtime_extended",
                                              {"before": job.max_runtime_s, "after": new, "by": by, "via": end})])
        job.max_runtime_s = new
    elif a.kind == "reclaim_lock":
        job.reclaim_lock = True
        s.execute(EVENTS.insert(), [event_row(job.id, job.phase, "ReclaimLocked", "approval.reclaim_locked",
                                              {"by": by, "via": end})])
    else:  # large_job: on to admission (the admission loop admits it when its quota has room)
        job.reason_code, job.reason_args = APPROVED, {}
        job.reason = i18n.render(i18n.DEFAULT_LANGUAGE, "hold.approved", {})
        s.execute(EVENTS.insert(), [event_row(job.id, job.phase, "Approved", "approval.large_job_approved",
                                              {"gpus": job.gpus, "by": by, "via": end})])
    s.add(job)


def _reject_target(s: Session, actor: Actor, a: Approval, job: Job | None, note: str) -> None:
    """What a rejection does to the target: a held large job is cancelled; other targets stay as they are."""
    if a.kind != "large_job" or job is None:
        return
    now = utcnow()
    args = {"gpus": job.gpus, "by": actor.username, "via": notices.via(a.id, note)}
    job.phase, job.finished_at, job.reason_code, job.reason_args = JobPhase.CANCELLED.value, now, REJECTED, args
    job.reason = i18n.render(i18n.DEFAULT_LANGUAGE, "hold.rejected", args)
    s.add(job)
    s.execute(EVENTS.insert(), [event_row(job.id, job.phase, "Rejected", "approval.large_job_rejected",
                                          {"gpus": job.gpus, "by": actor.username, "via": notices.via(a.id, note)},
                                          at=now)])


def _check_may_decide(actor: Actor, a: Approval, pid: int | None) -> None:
    if can_decide_approval(actor, a.kind, pid, a.requester_id):
        return
    if a.kind == "quota":
        raise Forbidden("approval.decide_quota_forbidden", "id")
    if a.requester_id == actor.user_id:
        raise Forbidden("approval.decide_own_forbidden", "id")
    raise Forbidden("approval.decide_forbidden", "id")


def decide(ctx: ServiceContext, actor: Actor, approval_id: int, approve: bool, note: object = None) -> ApprovalPublic:
    """Approve (``approve=True``) or reject a pending request, with an optional ``note`` (<= 1,000 characters).

    Approving carries the request out (see the package's rules); rejecting a large job cancels it. A request
    whose target is gone is closed instead, and the call fails with 409.

    Raises:
        InvalidInput: bad ``note`` (``approval.note_*``). NotFound: ``approval.not_found`` (no such request, or not
        visible to the caller). Forbidden: ``approval.decide_*_forbidden`` (the caller may read but not decide
        it). Conflict: ``approval.already_decided`` (``status``; for a closed request also ``why``),
        ``approval.closed_now`` (its target is gone: it is closed now; ``why``), or the change no longer fits
        (:func:`apply`).
    """
    note_text = check_note(note)
    closed_why: dict | None = None
    extend: tuple[str, int] | None = None
    with ctx.session() as s:
        a, job, pid = visible(s, actor, approval_id, lock=True)
        _check_may_decide(actor, a, pid)
        if a.status != "pending":
            raise Conflict("approval.already_decided", "id", id=a.id, status=a.status)
        project = s.get(Project, pid) if pid is not None else None
        target = notices.target_of(a, job, project)
        closed_why = notices.lost_target(a, job, project)
        if closed_why is not None:
            close(s, a, job, closed_why, target)
        else:
            outcome = "approved" if approve else "rejected"
            if approve:
                apply(s, actor, a, job, note_text)
                if a.kind == "extend_runtime" and job is not None and job.phase in BACKEND_PHASES:
                    extend = (job.uid, a.payload["max_runtime"])
            else:
                _reject_target(s, actor, a, job, note_text)
            a.status, a.decided_by, a.decided_at, a.decision_note = outcome, actor.user_id, utcnow(), note_text
            s.add(a)
            notices.notify_outcome(s, a, actor, outcome, target, note_text)
            action = "approval:approve" if approve else "approval:reject"
            if note_text:
                oplog.record(s, actor, action, f"approval#{a.id}", code="approval.decided_note",
                             args={"kind": a.kind, "target": target, "note": note_text})
            else:
                oplog.record(s, actor, action, f"approval#{a.id}", code="approval.decided",
                             args={"kind": a.kind, "target": target})
        result = publics(s, actor, [a])[0]
    if closed_why is not None:
        raise Conflict("approval.closed_now", "id", id=approval_id, why=closed_why)
    if extend is not None:
        extend_backend(ctx, *extend)
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


def extend_backend(ctx: ServiceContext, uid: str, max_runtime_s: int) -> None:
    """Move the backend's deadline of ``uid`` (a job it knows) after its ``max_runtime`` grew. A job the backend
    does not know yet is handed to it later with the new value (its workload is built from the job row)."""
    try:
        ctx.backend.extend(uid, max_runtime_s)
    except KeyError:
        pass
