"""The job events, job reasons, notifications, operation-log details and decision notes services.approvals writes,
produced through the service, render from their codes in Simplified Chinese (state.messages.event_rows,
services.notifications.text, services.oplog.details_text, state.approvals.note_text): no English sentence is left
but the names, numbers and a decider's own note; in English each reads as the service stored it."""

from __future__ import annotations

import re
from sqlmodel import select

from crater_app.db.models import Approval, Job, JobEvent, Notification, OperationLog
from crater_app.schemas import JobEventPublic, NotificationPublic
from crater_app.services import approvals, notifications, oplog
from crater_app.state import messages, views
from crater_app.state.approvals import approval_row, note_text
from crater_app.state.notifications import notification_text
from tests.helpers import job_row
from tests.service.test_approvals import extend, gov, held_large_job, submit  # noqa: F401 - gov is a fixture

ZH = "zh-CN"
ENGLISH = re.compile(r"\b[A-Za-z]{2,}[ ,;:]+[A-Za-z]{2,}\b")
CJK = re.compile(r"[\u4e00-\u9fff]")
# people's own words (notes, reasons) stay as written
NOTES = ("go ahead", "use eight GPUs", "fine by me", "the run needs longer", "a week-long run",
         "submitted above the threshold")


def _clean(text: str) -> str:
    for note in NOTES:
        text = text.replace(note, "")
    return text


def _all_events(ctx, reasons: set[str]) -> list[JobEvent]:
    with ctx.session() as s:
        return list(s.exec(select(JobEvent).where(JobEvent.reason.in_(reasons)).order_by(JobEvent.id)))


def test_approval_events_and_notifications_render_in_chinese(gov):  # noqa: F811
    g = gov
    # RuntimeExtended by the rule (its note is not in the event), by a decider with a note and without one
    auto_job, manual_job, lock_job = submit(g, name="auto"), submit(g, name="manual"), submit(g, name="locked")
    assert extend(g, auto_job, "2h").auto is True
    req = extend(g, manual_job, "30h")
    approvals.approve(g.ctx, g.pat, req.id, "go ahead")
    again = extend(g, lock_job, "40h")
    approvals.approve(g.ctx, g.admin, again.id)
    # ReclaimLocked without a note; a large job approved with a note, one rejected with and one without
    lock = approvals.create_request(g.ctx, g.alice, "reclaim_lock", "a week-long run", job_id=lock_job)
    approvals.approve(g.ctx, g.pat, lock.id)
    big, big_req = held_large_job(g, 16)
    approvals.approve(g.ctx, g.pat, big_req, "fine by me")
    _, no1 = held_large_job(g, 12)
    approvals.reject(g.ctx, g.admin, no1, "use eight GPUs")
    _, no2 = held_large_job(g, 10)
    approvals.reject(g.ctx, g.admin, no2)
    # closed requests: the job ended; the job no longer waits for approval
    ended = submit(g, name="ended")
    closing = approvals.create_request(g.ctx, g.alice, "reclaim_lock", "r", job_id=ended)
    moved, moved_req = held_large_job(g, 9)
    with g.ctx.session() as s:  # as the reconciler and the admission loop would leave them
        for job_id, phase in ((ended, "Succeeded"), (moved, "Queued")):
            row = s.get(Job, job_id)
            row.phase = phase
            s.add(row)
    assert approvals.close_orphans(g.ctx) == 2
    with g.ctx.session(read_only=True) as s:
        assert s.get(Approval, closing.id).status == "closed" and s.get(Approval, moved_req).status == "closed"

    written = _all_events(g.ctx, {"RuntimeExtended", "ReclaimLocked", "Approved", "Rejected"})
    assert {e.reason for e in written} == {"RuntimeExtended", "ReclaimLocked", "Approved", "Rejected"}
    assert any("auto-approval rule" in e.message for e in written) and all(e.code for e in written)
    assert any(e.message.endswith(")") and ": go ahead)" in e.message for e in written)
    rows = [views.event_row(JobEventPublic(id=e.id, at=e.at, phase=e.phase, reason=e.reason, message=e.message,
                                           code=e.code, args=e.args)) for e in written]
    for e, zh, en in zip(written, messages.event_rows(ZH, rows), messages.event_rows("en", rows)):
        assert zh["message_text"] != e.message and CJK.search(zh["message_text"]), e.message
        assert not ENGLISH.findall(_clean(zh["message_text"])), (e.message, zh["message_text"])
        assert en["message_text"] == e.message
        assert zh["reason_text"] != e.reason
    approved_big = [zh for e, zh in zip(written, messages.event_rows(ZH, rows)) if e.job_id == big]
    held = job_row(g.ctx, big)
    big_row = {"reason": held.reason, "reason_code": held.reason_code, "reason_args": "{}"}
    assert messages.job_reason_text(ZH, big_row) == "等待准入（已批准）"
    assert any("fine by me" in e["message_text"] for e in approved_big)

    # The notifications of every kind the service writes (requested, approved, rejected, closed)
    with g.ctx.session(read_only=True) as s:
        rows = list(s.exec(select(Notification).order_by(Notification.id)))
        logged = list(s.exec(select(OperationLog).where(OperationLog.action.like("approval:%"))))
        requests = list(s.exec(select(Approval)))
    assert {n.kind for n in rows} == {"approval.requested", "approval.approved", "approval.rejected", "approval.closed"}
    for n in rows:
        public = NotificationPublic(id=n.id, at=n.at, kind=n.kind, args=n.args, message=n.message, read=False)
        zh = notification_text(ZH, public)
        assert CJK.search(zh), (n.message, zh)
        assert not ENGLISH.findall(_clean(zh)), (n.message, zh)
        assert notification_text("en", public) == n.message == notifications.text("en", n.kind, n.args)

    # The operation log's details of every approval action, and the notes the service wrote on the requests
    assert {r.action for r in logged} == {"approval:create", "approval:approve", "approval:reject", "approval:close"}
    for r in logged:
        zh = oplog.details_text(ZH, r.code, r.args, r.details)
        assert r.code and CJK.search(zh) and not ENGLISH.findall(_clean(zh)), (r.details, zh)
        assert oplog.details_text("en", r.code, r.args, r.details) == r.details
    written_notes = [a for a in requests if a.decision_code]
    assert {a.decision_code for a in written_notes} == {"approval.auto_approved", "approval.closed"}
    for a in written_notes:
        public = approvals.get_approval(g.ctx, g.admin, a.id)
        zh = note_text(ZH, approval_row(public))
        assert CJK.search(zh) and not ENGLISH.findall(zh), (a.decision_note, zh)
        assert note_text("en", approval_row(public)) == a.decision_note


def test_targets_and_close_reasons_read_in_both_languages():
    from crater_app import i18n

    def text(lang, part):
        return i18n.render(lang, "error.approval.closed_now", {"id": 1, "why": part})

    assert text(ZH, approvals.job_target(12, "train")) == "审批申请 1 已关闭：作业 train（#12）"
    assert text(ZH, approvals.project_target("lab")) == "审批申请 1 已关闭：项目 lab"
    assert text("en", i18n.part("approval.why.job_ended", job_id=3, job_name="train", phase="Cancelled")) == (
        "approval request 1 was closed: job train (#3) is Cancelled")
    assert text(ZH, i18n.part("approval.why.job_ended", job_id=3, job_name="train", phase="Cancelled")) == (
        "审批申请 1 已关闭：作业 train（#3）的状态为“已取消”")
    assert text(ZH, i18n.part("approval.why.project_expired", project="lab")) == "审批申请 1 已关闭：项目“lab”已过期"
    assert text(ZH, i18n.part("approval.why.project_gone")) == "审批申请 1 已关闭：其项目已不存在"
    assert text(ZH, i18n.part("approval.why.job_gone", job_id=9)) == "审批申请 1 已关闭：作业 #9 已不存在"
