"""What the approvals service says: how a request's target and the reason a request was closed are named (nested
messages, :func:`crater_app.i18n.part`), the notifications to requesters and deciders, and the notes Crater writes
on a request itself (closed, approved by the rule), each a code with arguments read in the reader's language."""

from __future__ import annotations

from sqlmodel import Session, select

from crater_app import i18n
from crater_app.db.models import Approval, Job, Project, ProjectMember, User
from crater_app.domain.jobs import JobPhase
from crater_app.domain.policy import Actor
from crater_app.schemas import ApprovalPublic
from crater_app.services import notifications
from crater_app.services.projects import project_expired

#: the most people one new request notifies
MAX_DECIDERS_NOTIFIED = 50
#: catalogue keys of the notes Crater writes on a request are ``decision.<code>``
DECISION_PREFIX = "decision."
#: the catalogue prefix of the reasons Crater writes for the requests it makes itself (``reason_code``)
REQUEST_PREFIX = "request."


def job_target(job_id: int, name: str) -> dict:
    """A job as a request's target: ``job train (#12)`` / ``作业 train（#12）``."""
    return i18n.part("approval.target.job", job_id=job_id, job_name=name)


def project_target(name: str) -> dict:
    """A project as a request's target: ``project vision`` / ``项目 vision``."""
    return i18n.part("approval.target.project", project=name)


def target_of(a: Approval, job: Job | None, project: Project | None) -> dict:
    """The target of request ``a``: its project (``quota``), its job, or the job's id when the job is gone."""
    if a.kind == "quota" and project is not None:
        return project_target(project.name)
    if job is not None:
        return job_target(job.id, job.name)
    return i18n.part("approval.target.job_id", job_id=a.job_id)


def lost_target(a: Approval, job: Job | None, project: Project | None) -> dict | None:
    """Why the request's target is gone (a nested message), or ``None`` when it is still there: the project no
    longer exists or has expired (``quota``); the job no longer exists or ended; a large job no longer waits."""
    if a.kind == "quota":
        if project is None:
            return i18n.part("approval.why.project_gone")
        if project_expired(project):
            return i18n.part("approval.why.project_expired", project=project.name)
        return None
    if job is None:
        return i18n.part("approval.why.job_gone", job_id=a.job_id)
    if JobPhase(job.phase).terminal:
        return i18n.part("approval.why.job_ended", job_id=job.id, job_name=job.name, phase=job.phase)
    if a.kind == "large_job" and job.phase != JobPhase.HELD.value:
        return i18n.part("approval.why.job_not_held", job_id=job.id, job_name=job.name, phase=job.phase)
    return None


def by_whom(actor: Actor | None) -> object:
    """Who decided, for event messages: the user's name, or the auto-approval rule (a nested message)."""
    return actor.username if actor is not None else i18n.part("approval.by_rule")


def via(approval_id: int, note: str) -> dict:
    """The end of a decision's job event: ``approval #12`` or ``approval #12: the decider's note``."""
    if note:
        return i18n.part("approval.via_note", approval_id=approval_id, note=note)
    return i18n.part("approval.via", approval_id=approval_id)


def decision(code: str, args: dict) -> tuple[str, dict, str]:
    """``(decision_code, decision_args, decision_note)`` of a note Crater writes itself: the note is its English
    text (``decision.<code>``)."""
    return code, args, i18n.render(i18n.DEFAULT_LANGUAGE, DECISION_PREFIX + code, args, fallback=code)


def closed_note(why: dict) -> tuple[str, dict, str]:
    """The note of a request closed because its target is gone (``why``: :func:`lost_target`)."""
    return decision("approval.closed", {"why": why})


def auto_note(max_s: int, window_s: int) -> tuple[str, dict, str]:
    """The note of a request approved by the auto rule (an extension under ``max_s``, once per ``window_s``)."""
    return decision("approval.auto_approved", {"max_s": max_s, "window_s": window_s})


def note_text(lang: object, a: ApprovalPublic) -> str:
    """A request's decision note in ``lang``: a note Crater wrote (``decision_code``) from the catalogue, a
    decider's own note as written."""
    if not a.decision_code:
        return a.decision_note
    return i18n.render(lang, DECISION_PREFIX + a.decision_code, a.decision_args, fallback=a.decision_note)


def reason_text(lang: object, a: ApprovalPublic) -> str:
    """A request's reason in ``lang``: a reason Crater wrote (``reason_code``, a large job) from the catalogue, a
    requester's own words as written."""
    if not a.reason_code:
        return a.reason
    return i18n.render(lang, REQUEST_PREFIX + a.reason_code, a.reason_args, fallback=a.reason)


def reason_arg(a: Approval) -> object:
    """A request's reason as a message argument (``{reason:message}``): the requester's own words, or the nested
    message of a reason Crater wrote, so that each reader gets it in their language."""
    if not a.reason_code:
        return a.reason
    return {"key": REQUEST_PREFIX + a.reason_code, "args": dict(a.reason_args or {})}  # an i18n.part


def outcome_row(a: Approval, by: Actor | None, outcome: str, target: dict, note: str = "",
                why: dict | None = None) -> dict:
    """The ``notifications`` row telling the requester of ``a`` that it was ``outcome`` (``approved``,
    ``rejected``, ``closed``): by ``by`` (``None``: the auto rule, or nobody for ``closed``), with the decider's
    ``note``, or ``why`` it was closed."""
    if outcome == "closed":
        return notifications.row(a.requester_id, "approval.closed",
                                 {"id": a.id, "kind": a.kind, "target": target, "why": why})
    decider = i18n.part("approval.by_user", name=by.username) if by is not None else i18n.part("approval.by_rule_suffix")
    suffix = i18n.part("approval.note_suffix", note=note) if note else ""
    if outcome == "approved":
        return notifications.row(a.requester_id, "approval.approved",
                                 {"id": a.id, "kind": a.kind, "target": target, "by": decider, "note": suffix})
    return notifications.row(a.requester_id, "approval.rejected",
                             {"id": a.id, "kind": a.kind, "target": target, "by": decider, "note": suffix})


def notify_outcome(s: Session, a: Approval, by: Actor | None, outcome: str, target: dict, note: str = "",
                   why: dict | None = None) -> None:
    """Write :func:`outcome_row` in ``s``'s transaction."""
    notifications.add_rows(s, [outcome_row(a, by, outcome, target, note, why)])


def notify_deciders(s: Session, actor: Actor, a: Approval, target: dict | None = None) -> None:
    """Notify who may decide the new request ``a`` (``approval.requested``): the active platform admins and,
    except for ``quota``, the admins of its project; never the requester (``actor``); at most 50 people. Call it
    in the transaction that writes ``a`` (``a.id`` and ``a.project_id`` set); ``target`` is the request's target
    (:func:`job_target`; read from ``a`` when not given). The submission path does so for ``large_job`` requests."""
    admins = select(User.id).where(User.role == "admin", User.status == "active")
    recipients = set(s.exec(admins.limit(MAX_DECIDERS_NOTIFIED)).all())
    if a.kind != "quota" and a.project_id is not None:
        recipients |= set(s.exec(
            select(ProjectMember.user_id).join(User, User.id == ProjectMember.user_id)
            .where(ProjectMember.project_id == a.project_id, ProjectMember.role == "admin", User.status == "active",
                   User.role != "guest").limit(MAX_DECIDERS_NOTIFIED)).all())
    recipients.discard(actor.user_id)
    if not recipients:
        return
    if target is None:
        job = s.get(Job, a.job_id) if a.job_id is not None else None
        project = s.get(Project, a.project_id) if a.project_id is not None else None
        target = target_of(a, job, project)
    notifications.add_rows(s, [
        notifications.row(user_id, "approval.requested",
                          {"id": a.id, "kind": a.kind, "target": target, "by": actor.username,
                           "reason": reason_arg(a)})
        for user_id in sorted(recipients)[:MAX_DECIDERS_NOTIFIED]
    ])
