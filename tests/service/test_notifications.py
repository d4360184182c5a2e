"""services.notifications: listing, marking read and counting a user's notifications, in both languages, and who is
told of a new approval request (those who may decide it)."""

from __future__ import annotations

import pytest
from sqlmodel import select

from crater_app.db.models import OperationLog
from crater_app.domain.errors import InvalidInput
from crater_app.services import approvals, notifications
from tests.service.approvals_world import extend, gov, notes_of, submit  # noqa: F401


def test_notifications_list_mark_read_and_count(gov):
    g = gov
    ids = []
    for name in ("a", "b", "c"):
        req = approvals.create_request(g.ctx, g.alice, "reclaim_lock", "r", job_id=submit(g, name=name))
        approvals.approve(g.ctx, g.pat, req.id) if name != "b" else approvals.reject(g.ctx, g.pat, req.id, "no")
        ids.append(req.id)
    listed = notifications.list_notifications(g.ctx, g.alice)
    assert listed.unread == 3 and [n.args["id"] for n in listed.items] == ids[::-1]
    assert [n.kind for n in listed.items] == ["approval.approved", "approval.rejected", "approval.approved"]
    assert listed.items[1].message == "Your request #%d (Reclaim lock) for job b (#%d) was rejected by pat: no." % (
        ids[1], approvals.get_approval(g.ctx, g.alice, ids[1]).job_id)
    in_chinese = notifications.localized(listed, "zh-CN").items[1].message
    assert in_chinese.startswith("你针对作业 b（#") and in_chinese.endswith("已由 pat 驳回：no。")
    newest = listed.items[0].id
    assert notifications.mark_read(g.ctx, g.alice, [newest]) == 1
    assert notifications.mark_read(g.ctx, g.alice, [newest]) == 0  # already read
    again = notifications.list_notifications(g.ctx, g.alice)
    assert again.unread == 2 and again.items[-1].id == newest and again.items[-1].read  # read ones last
    assert [n.id for n in notifications.list_notifications(g.ctx, g.alice, unread_only=True).items] == [
        n.id for n in again.items[:2]]
    # Someone else's ids are not theirs to mark.
    assert notifications.mark_read(g.ctx, g.bob, [n.id for n in again.items]) == 0
    assert notifications.unread_count(g.ctx, g.alice) == 2
    for bad in ("all", [1, "2"], [True], list(range(501))):
        with pytest.raises(InvalidInput) as err:
            notifications.mark_read(g.ctx, g.alice, bad)
        assert err.value.field == "ids"
    with pytest.raises(InvalidInput):
        notifications.list_notifications(g.ctx, g.alice, limit=0)
    assert notifications.mark_read(g.ctx, g.alice) == 2
    assert notifications.unread_count(g.ctx, g.alice) == 0
    with g.ctx.session() as s:
        rows = s.exec(select(OperationLog).where(OperationLog.action == "notification:read")).all()
        assert [r.actor for r in rows] == ["alice", "alice"]
    assert notifications.list_notifications(g.ctx, g.bob).items == []


def test_new_requests_notify_who_may_decide(gov):
    g = gov
    job_req = approvals.create_request(g.ctx, g.alice, "reclaim_lock", "a long run", job_id=submit(g))
    quota_req = approvals.create_request(g.ctx, g.alice, "quota", "more", project="proj",
                                         payload={"capability": {"cpu": 8}})
    told = lambda user_id: [(n.kind, n.args["id"]) for n in notes_of(g.ctx, user_id)]  # noqa: E731
    assert told(g.admin.user_id) == [("approval.requested", job_req.id), ("approval.requested", quota_req.id)]
    assert told(g.pat.user_id) == [("approval.requested", job_req.id)]  # quota is a platform decision
    assert told(g.alice.user_id) == [] and told(g.vera.user_id) == [] and told(g.bob.user_id) == []
    note = notes_of(g.ctx, g.pat.user_id)[0]
    assert note.args["by"] == "alice" and "a long run" in note.message
    # An automatic approval asks nobody.
    assert extend(g, submit(g, name="short"), "2h").auto is True
    assert len(told(g.pat.user_id)) == 1
