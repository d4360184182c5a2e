"""The job events and notifications services.approvals writes, produced through the service, render in Simplified
Chinese in the console (state.messages.message_text, state.approvals.notification_text): no English sentence is
left but the names, numbers and a decider's own note."""

from __future__ import annotations

import re
from sqlmodel import select

from crater_app.db.models import Approval, Job, JobEvent, Notification
from crater_app.schemas import NotificationPublic
from crater_app.services import approvals
from crater_app.state import messages
from crater_app.state.approvals import NOTIFY_KEYS, notification_text
from tests.helpers import job_row
from tests.service.test_approvals import extend, gov, held_large_job, submit  # noqa: F401 - gov is a fixture

ZH = "zh-CN"
ENGLISH = re.compile(r"\b[A-Za-z]{2,}[ ,;:]+[A-Za-z]{2,}\b")
CJK = re.compile(r"[\u4e00-\u9fff]")
NOTES = ("go ahead", "use eight GPUs", "fine by me")  # the deciders' own words stay as written


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
    assert any("auto-approval rule" in e.message for e in written)
    assert messages.duration_text(ZH, "none") == "无"  # a job had no max_runtime (services.approvals._fmt_s)
    assert any(e.message.endswith(")") and ": go ahead)" in e.message for e in written)
    for e in written:
        zh = messages.message_text(ZH, e.message)
        assert zh != e.message and CJK.search(zh), e.message
        assert not ENGLISH.findall(_clean(zh)), (e.message, zh)
        assert messages.message_text("en", e.message) == e.message
        assert messages.reason_text(ZH, e.reason) != e.reason
    approved_big = [e for e in written if e.job_id == big]
    assert messages.message_text(ZH, job_row(g.ctx, big).reason) == "等待准入（已批准）"
    assert any("fine by me" in messages.message_text(ZH, e.message) for e in approved_big)

    # The notifications of every kind the service writes (requested, approved, rejected, closed)
    with g.ctx.session(read_only=True) as s:
        rows = list(s.exec(select(Notification).order_by(Notification.id)))
    kinds = {n.kind for n in rows}
    assert {"approval.requested", "approval.approved", "approval.rejected", "approval.closed"} <= kinds
    assert kinds <= set(NOTIFY_KEYS), kinds - set(NOTIFY_KEYS)
    for n in rows:
        public = NotificationPublic(id=n.id, at=n.at, kind=n.kind, args=n.args, message=n.message,
                                    read=False)
        zh = notification_text(ZH, public)
        assert CJK.search(zh), (n.message, zh)
        assert not ENGLISH.findall(_clean(zh)), (n.message, zh)
        assert notification_text("en", public).strip(), n.message


def test_notification_targets_and_close_reasons():
    assert messages.target_text(ZH, "job train (#12)") == "作业 train（#12）"
    assert messages.target_text(ZH, "job #12") == "作业 #12"
    assert messages.target_text(ZH, "project lab") == "项目 lab"
    assert messages.target_text(ZH, "something else") == "something else"
    assert messages.message_text(ZH, "job train (#3) is Cancelled") == "作业 train（#3）的状态为“已取消”"
    assert messages.message_text(ZH, "project 'lab' has expired") == "项目“lab”已过期"
    assert messages.message_text(ZH, "its project no longer exists") == "其项目已不存在"
    assert messages.message_text(ZH, "job #9 no longer exists") == "作业 #9 已不存在"
