"""services.approvals and services.notifications on the fake backend: each kind's effect, who may ask and decide, the
auto-approval rule's boundaries, closing orphans (row locks: also on PostgreSQL), notifications."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta

import pytest
from sqlmodel import select

from crater_app.db.models import Approval, Job, Notification, OperationLog, Project, User
from crater_app.db.types import utcnow
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, NotFound
from crater_app.services import approvals, identity, jobs, notifications, projects, quotas, sign_in, users
from crater_app.services.reconcile import LeaderLoop
from tests.conftest import USER_PASSWORD
from tests.helpers import counts, drive_until, events, job_row, spec

H = 3600


@dataclass
class Gov:
    ctx: object
    admin: object
    alice: object  # member of proj
    pat: object  # admin of proj
    vera: object  # viewer of proj
    bob: object  # member of other
    guest: object


@pytest.fixture
def gov(world) -> Gov:
    ctx, admin = world.ctx, world.admin
    for name in ("pat", "vera"):
        users.create_user(ctx, admin, name, USER_PASSWORD)
        world.tokens[name] = sign_in.login(ctx, name, USER_PASSWORD).access_token
    projects.create_project(ctx, admin, "proj")
    projects.create_project(ctx, admin, "other")
    for project, name, role in (("proj", "alice", "member"), ("proj", "pat", "admin"), ("proj", "vera", "viewer"),
                                ("other", "bob", "member")):
        projects.set_member(ctx, admin, project, name, role)
    who = {name: identity.authenticate(ctx, world.tokens[name]) for name in ("alice", "pat", "vera", "bob")}
    return Gov(ctx, admin, who["alice"], who["pat"], who["vera"], who["bob"], world.guest)


def submit(g: Gov, actor=None, max_runtime="1h", command=None, name="train") -> int:
    return jobs.submit_job(g.ctx, actor or g.alice, spec(name, command or ["sleep", "30"], project="proj",
                                                         max_runtime=max_runtime)).id


def extend(g: Gov, job_id: int, value, actor=None, reason="the run needs longer"):
    return approvals.create_request(g.ctx, actor or g.alice, "extend_runtime", reason, job_id=job_id,
                                    payload={"max_runtime": value})


def notes_of(ctx, user_id: int) -> list[Notification]:
    with ctx.session() as s:
        return list(s.exec(select(Notification).where(Notification.user_id == user_id).order_by(Notification.id)))


def oplog_actions(ctx) -> list[tuple[str, str, str]]:
    with ctx.session() as s:
        return [(r.actor, r.action, r.target) for r in s.exec(select(OperationLog).order_by(OperationLog.id))
                if r.action.startswith("approval:")]


# ---- the auto-approval rule ----------------------------------------------------------------------------------
def test_auto_rule_boundaries(gov):
    g = gov
    first, second, third, fourth = (submit(g, name=f"j{i}") for i in range(4))
    # Exactly 12 h more is not "under 12 h": pending.
    exact = extend(g, first, "13h")
    assert (exact.status, exact.auto, exact.payload, exact.current) == (
        "pending", False, {"max_runtime": 13 * H}, {"max_runtime": H})
    assert job_row(g.ctx, first).max_runtime_s == H
    # One second less is granted at once, by the rule, with no decider.
    auto = extend(g, second, 13 * H - 1)
    assert (auto.status, auto.auto, auto.decided_by) == ("approved", True, None)
    assert auto.decision_code == "approval.auto_approved" and auto.decision_args == {"max_s": 12 * H, "window_s": 48 * H}
    assert "automatically" in auto.decision_note and "12h" in auto.decision_note and "2d" in auto.decision_note
    assert job_row(g.ctx, second).max_runtime_s == 13 * H - 1
    assert [e.reason for e in events(g.ctx, second)][-1] == "RuntimeExtended"
    [note] = notes_of(g.ctx, g.alice.user_id)
    assert note.kind == "approval.approved" and note.args["id"] == auto.id and "was approved" in note.message
    assert ("system", "approval:approve", f"approval#{auto.id}") in oplog_actions(g.ctx)
    # A second small extension within 48 h waits for a decision.
    again = extend(g, third, "2h")
    assert (again.status, again.auto) == ("pending", False)
    # After the window it is automatic again.
    with g.ctx.session() as s:
        row = s.get(Approval, auto.id)
        row.decided_at = utcnow() - timedelta(hours=48, seconds=1)
        s.add(row)
    assert extend(g, fourth, "2h").auto is True


def test_auto_rule_other_users_and_settings(gov):
    g = gov
    a = submit(g, name="a")
    b = submit(g, actor=g.pat, name="b")
    assert extend(g, a, "2h").auto is True
    assert extend(g, b, "2h", actor=g.pat).auto is True  # the window is per user
    # The rule never grants beyond the user's own ceiling on max_runtime.
    with g.ctx.session() as s:
        alice = s.get(User, g.alice.user_id)
        alice.max_runtime_s = 3 * H
        s.add(alice)
        for row in s.exec(select(Approval)).all():
            row.decided_at = utcnow() - timedelta(days=3)
            s.add(row)
    c = submit(g, name="c")
    assert extend(g, c, "4h").status == "pending"
    # auto_extend_max_s = 0 turns the rule off.
    g.ctx.settings.auto_extend_max_s = 0
    d = submit(g, actor=g.pat, name="d")
    with g.ctx.session() as s:
        for row in s.exec(select(Approval)).all():
            row.decided_at = utcnow() - timedelta(days=3)
            s.add(row)
    assert extend(g, d, "2h", actor=g.pat).status == "pending"


# ---- each kind's effect ----------------------------------------------------------------------------------------
def test_extend_runtime_approved_moves_the_backend_deadline(gov):
    g = gov
    loop = LeaderLoop(g.ctx)
    job_id = submit(g, max_runtime=3)
    drive_until(loop, job_id, "Running")
    req = extend(g, job_id, "1d")  # far over the auto rule
    assert req.status == "pending"
    done = approvals.approve(g.ctx, g.pat, req.id, "ok for the deadline")
    assert (done.status, done.decided_by, done.decision_note, done.auto) == ("approved", "pat", "ok for the deadline", False)
    assert job_row(g.ctx, job_id).max_runtime_s == 86400
    # The backend's clock moves past the original 3 s (the fake enforces max_runtime against its clock).
    backend = g.ctx.backend
    backend.clock = lambda: time.time() + 4.0
    for _ in range(5):
        loop.step()
    assert job_row(g.ctx, job_id).phase == "Running"
    last = events(g.ctx, job_id)[-1]
    assert last.reason == "RuntimeExtended" and "by pat" in last.message and "to 1d" in last.message
    assert (last.code, last.args["after"], last.args["by"]) == ("approval.runtime_extended", 86400, "pat")
    jobs.cancel_job(g.ctx, g.alice, job_id)
    drive_until(loop, job_id, "Cancelled")


def test_quota_request_is_decided_by_platform_admins_only(gov):
    g = gov
    payload = {"capability": {"nvidia.com/gpu": 8, "nvidia.com/gpu:NVIDIA-A100-SXM4-80GB": "4", "cpu": "64",
                              "memory": "512Gi"},
               "deserved": {"nvidia.com/gpu": "4"}}
    req = approvals.create_request(g.ctx, g.alice, "quota", "a new experiment series", project="proj", payload=payload)
    assert (req.kind, req.project, req.job_id, req.status) == ("quota", "proj", None, "pending")
    assert req.payload["capability"]["nvidia.com/gpu"] == 8 and req.payload["deserved"] == {"nvidia.com/gpu": 4}
    assert req.current == {"guarantee": {}, "deserved": {}, "capability": {}}
    with pytest.raises(Forbidden, match="platform admins"):
        approvals.approve(g.ctx, g.pat, req.id)
    assert approvals.get_approval(g.ctx, g.pat, req.id).can_decide is False
    assert approvals.get_approval(g.ctx, g.admin, req.id).can_decide is True
    done = approvals.approve(g.ctx, g.admin, req.id)
    assert done.status == "approved" and done.decided_by == "admin"
    with g.ctx.session() as s:
        p = s.exec(select(Project).where(Project.name == "proj")).one()
        # Stored in canonical form, as a quota set by hand (services.quotas.set_quota) is.
        assert p.capability == {"nvidia.com/gpu": "8", "nvidia.com/gpu:NVIDIA-A100-SXM4-80GB": "4", "cpu": "64",
                                "memory": str(512 * 2**30)}
        assert p.deserved == {"nvidia.com/gpu": "4"} and p.guarantee == {}
    assert quotas.get_quota(g.ctx, g.admin, "proj").capability["nvidia.com/gpu"] == "8"  # was a 500 (int stored)
    # A later request changes only the entries it names.
    more = approvals.create_request(g.ctx, g.pat, "quota", "more", project="proj",
                                    payload={"capability": {"nvidia.com/gpu": 16}})
    approvals.approve(g.ctx, g.admin, more.id)
    with g.ctx.session() as s:
        p = s.exec(select(Project).where(Project.name == "proj")).one()
        assert p.capability["nvidia.com/gpu"] == "16" and p.capability["cpu"] == "64"
    # Asking for what the project has (in another spelling) is refused.
    with pytest.raises(InvalidInput, match="already has"):
        approvals.create_request(g.ctx, g.alice, "quota", "same", project="proj",
                                 payload={"capability": {"nvidia.com/gpu": "16", "memory": "512Gi"}})


def test_approved_quota_brings_an_admission_pass(gov):
    """Approving a quota request re-decides held jobs at the loop's next round, as set_quota does."""
    g = gov
    quotas.set_quota(g.ctx, g.admin, "proj", {"capability": {"cpu": "1"}})
    loop = LeaderLoop(g.ctx)
    first = jobs.submit_job(g.ctx, g.alice, spec("first", ["sleep", "30"], project="proj", resources={"cpu": "1"}))
    second = jobs.submit_job(g.ctx, g.alice, spec("second", ["sleep", "30"], project="proj", resources={"cpu": "1"}))
    assert second.phase == "Held"
    drive_until(loop, first.id, "Running")
    for _ in range(3):
        loop.step()
    assert job_row(g.ctx, second.id).phase == "Held"
    req = approvals.create_request(g.ctx, g.alice, "quota", "two at once", project="proj",
                                   payload={"capability": {"cpu": "2"}})
    approvals.approve(g.ctx, g.admin, req.id)
    loop.step()  # one round: without a fresh pass it would wait for the periodic full pass
    assert job_row(g.ctx, second.id).phase in ("Queued", "Running")
    for job_id in (first.id, second.id):
        jobs.cancel_job(g.ctx, g.alice, job_id)
        drive_until(loop, job_id, "Cancelled")


@pytest.mark.parametrize("payload, words", [
    ({"guarantee": {"nvidia.com/gpu": 4}, "capability": {"nvidia.com/gpu": 2}}, "must not exceed capability"),
    ({"guarantee": {"nvidia.com/gpu": 4}, "deserved": {"nvidia.com/gpu": 2}}, "must not exceed deserved"),
    ({"capability": {"nvidia.com/gpu": "1.5"}}, "whole number"),
    ({"capability": {"nvidia.com/gpu:": 1}}, "model"),
    ({"capability": {"cpu:fast": 1}}, "only accelerator"),
    ({"capability": {"disk": 1}}, "unknown resource"),
    ({"capability": {"memory": "lots"}}, "not a Kubernetes quantity"),
    ({"capability": {}}, "non-empty"),
    ({"limits": {"cpu": 1}}, "unknown key"),
    (None, "payload must be"),
    ({}, "payload must be"),
])
def test_quota_payload_checks_write_nothing(gov, payload, words):
    before = counts(gov.ctx)
    with pytest.raises(InvalidInput) as err:
        approvals.create_request(gov.ctx, gov.alice, "quota", "why", project="proj", payload=payload)
    assert words in err.value.message and err.value.field.startswith("payload")
    assert counts(gov.ctx) == before


def test_reclaim_lock(gov):
    g = gov
    job_id = submit(g)
    req = approvals.create_request(g.ctx, g.alice, "reclaim_lock", "a week-long run", job_id=job_id)
    assert req.current == {"reclaim_lock": False} and req.project == "proj" and req.job_name == "train"
    approvals.approve(g.ctx, g.pat, req.id)
    assert job_row(g.ctx, job_id).reclaim_lock is True
    assert events(g.ctx, job_id)[-1].reason == "ReclaimLocked"
    with pytest.raises(Conflict, match="already holds"):
        approvals.create_request(g.ctx, g.alice, "reclaim_lock", "again", job_id=job_id)


def held_large_job(g: Gov, gpus: int = 16) -> tuple[int, int]:
    """A job as the submission path writes one above the threshold: Held with reason_code 'approval', and its
    large_job request (without project_id, as that path may leave it)."""
    with g.ctx.session() as s:
        job = Job(uid=f"uid-large-{gpus}-{time.monotonic_ns()}", name="big", project_id=_project_id(s, "proj"), user_id=g.alice.user_id, image="local/host",
                  command=["true"], resources={"nvidia.com/gpu": gpus}, gpus=gpus, phase="Held",
                  reason=f"waiting for approval: {gpus} accelerators is above the threshold of 8",
                  reason_code="approval", reason_args={"gpus": gpus, "threshold": 8})
        s.add(job)
        s.flush()
        a = Approval(kind="large_job", requester_id=g.alice.user_id, job_id=job.id, payload={"gpus": gpus},
                     reason="submitted above the threshold")
        s.add(a)
        s.flush()
        return job.id, a.id


def _project_id(s, name: str) -> int:
    return s.exec(select(Project.id).where(Project.name == name)).one()


def test_large_job_approved_goes_on_to_admission(gov):
    g = gov
    job_id, approval_id = held_large_job(g)
    page = approvals.list_approvals(g.ctx, g.pat, status="pending")
    assert [a.id for a in page.items] == [approval_id] and page.items[0].project == "proj"
    assert page.items[0].can_decide is True
    g.ctx.kick.clear()
    done = approvals.approve(g.ctx, g.pat, approval_id, "go ahead")
    assert done.status == "approved" and g.ctx.kick.is_set()
    job = job_row(g.ctx, job_id)
    assert (job.phase, job.reason_code, job.reason) == ("Held", "approved", "waiting for admission (approved)")
    last = events(g.ctx, job_id)[-1]
    assert last.reason == "Approved" and "go ahead" in last.message


def test_large_job_rejected_is_cancelled_with_the_note(gov):
    g = gov
    job_id, approval_id = held_large_job(g)
    done = approvals.reject(g.ctx, g.admin, approval_id, "use 8 GPUs")
    assert (done.status, done.decision_note) == ("rejected", "use 8 GPUs")
    job = job_row(g.ctx, job_id)
    assert job.phase == "Cancelled" and job.finished_at is not None and "use 8 GPUs" in job.reason
    last = events(g.ctx, job_id)[-1]
    assert (last.phase, last.reason) == ("Cancelled", "Rejected") and "use 8 GPUs" in last.message
    [note] = notes_of(g.ctx, g.alice.user_id)
    assert note.kind == "approval.rejected" and note.message.endswith("was rejected by admin: use 8 GPUs.")
    assert note.args["note"] == {"key": "approval.note_suffix", "args": {"note": "use 8 GPUs"}}
    assert ("admin", "approval:reject", f"approval#{approval_id}") in oplog_actions(g.ctx)
    with pytest.raises(InvalidInput, match="large_job"):
        approvals.create_request(g.ctx, g.alice, "large_job", "please", job_id=job_id)


# ---- permissions ---------------------------------------------------------------------------------------------
def test_who_may_ask(gov):
    g = gov
    job_id = submit(g)
    before = counts(g.ctx)
    with pytest.raises(Forbidden):
        approvals.create_request(g.ctx, g.vera, "reclaim_lock", "r", job_id=job_id)  # viewer: reads, may not ask
    with pytest.raises(Forbidden):
        approvals.create_request(g.ctx, g.vera, "quota", "r", project="proj", payload={"capability": {"cpu": 1}})
    for outsider in (g.bob, g.guest):
        with pytest.raises(NotFound):
            approvals.create_request(g.ctx, outsider, "reclaim_lock", "r", job_id=job_id)
        with pytest.raises(NotFound):
            approvals.create_request(g.ctx, outsider, "quota", "r", project="proj", payload={"capability": {"cpu": 1}})
    with pytest.raises(NotFound, match="job 999999"):
        approvals.create_request(g.ctx, g.alice, "reclaim_lock", "r", job_id=999999)
    assert counts(g.ctx) == before
    # The owner and the project's admin may; a duplicate pending request of the same requester is refused.
    approvals.create_request(g.ctx, g.alice, "reclaim_lock", "r", job_id=job_id)
    with pytest.raises(Conflict, match="pending"):
        approvals.create_request(g.ctx, g.alice, "reclaim_lock", "r", job_id=job_id)
    approvals.create_request(g.ctx, g.pat, "reclaim_lock", "r", job_id=job_id)


def test_who_may_decide_and_read(gov):
    g = gov
    mine = approvals.create_request(g.ctx, g.alice, "reclaim_lock", "r", job_id=submit(g, name="a"))
    pats = approvals.create_request(g.ctx, g.pat, "reclaim_lock", "r", job_id=submit(g, actor=g.pat, name="b"))
    before = counts(g.ctx)
    with pytest.raises(Forbidden, match="own request"):
        approvals.approve(g.ctx, g.alice, mine.id)
    with pytest.raises(Forbidden, match="own request"):
        approvals.approve(g.ctx, g.pat, pats.id)  # a project admin does not approve their own request
    for outsider in (g.vera, g.bob, g.guest):
        with pytest.raises(NotFound):
            approvals.reject(g.ctx, outsider, mine.id)
        with pytest.raises(NotFound):
            approvals.get_approval(g.ctx, outsider, mine.id)
    assert counts(g.ctx) == before
    assert {a.id for a in approvals.list_approvals(g.ctx, g.alice).items} == {mine.id}
    assert {a.id for a in approvals.list_approvals(g.ctx, g.pat).items} == {mine.id, pats.id}
    assert {a.id for a in approvals.list_approvals(g.ctx, g.pat, mine=True).items} == {pats.id}
    assert approvals.list_approvals(g.ctx, g.bob).items == []
    assert approvals.list_approvals(g.ctx, g.admin).total == 2
    assert approvals.approve(g.ctx, g.admin, pats.id).status == "approved"
    assert approvals.approve(g.ctx, g.pat, mine.id).status == "approved"
    assert [a.id for a in approvals.list_approvals(g.ctx, g.admin, status="pending").items] == []
    assert approvals.list_approvals(g.ctx, g.admin, kind="quota").total == 0
    with pytest.raises(InvalidInput):
        approvals.list_approvals(g.ctx, g.admin, status="done")


@pytest.mark.both_databases
def test_double_decision_is_a_conflict_and_writes_nothing(gov):
    g = gov
    req = approvals.create_request(g.ctx, g.alice, "reclaim_lock", "r", job_id=submit(g))
    approvals.reject(g.ctx, g.pat, req.id, "not now")
    before = counts(g.ctx), len(notes_of(g.ctx, g.alice.user_id))
    for decide in (approvals.approve, approvals.reject):
        with pytest.raises(Conflict, match="already rejected"):
            decide(g.ctx, g.admin, req.id)
    assert (counts(g.ctx), len(notes_of(g.ctx, g.alice.user_id))) == before
    assert job_row(g.ctx, req.job_id).reclaim_lock is False


# ---- orphans --------------------------------------------------------------------------------------------------
@pytest.mark.both_databases
def test_requests_that_lost_their_target_are_closed_by_the_loop(gov):
    g = gov
    loop = LeaderLoop(g.ctx)
    loop.ORPHANS_EVERY_S = 0.0  # every round (the default is once a second)
    job_id = submit(g)
    req = extend(g, job_id, "1d")
    quota = approvals.create_request(g.ctx, g.alice, "quota", "r", project="proj", payload={"capability": {"cpu": 8}})
    drive_until(loop, job_id, "Running")
    assert approvals.close_orphans(g.ctx) == 0
    jobs.cancel_job(g.ctx, g.alice, job_id)
    drive_until(loop, job_id, "Cancelled")
    loop.step()
    closed = approvals.get_approval(g.ctx, g.alice, req.id)
    assert closed.status == "closed" and "Cancelled" in closed.decision_note and closed.decided_by is None
    note = notes_of(g.ctx, g.alice.user_id)[-1]
    assert note.kind == "approval.closed" and note.args["id"] == req.id
    with pytest.raises(Conflict, match="already closed"):
        approvals.approve(g.ctx, g.admin, req.id)
    # An expired project closes its quota requests.
    with g.ctx.session() as s:
        p = s.exec(select(Project).where(Project.name == "proj")).one()
        p.expires_at = utcnow() - timedelta(seconds=1)
        s.add(p)
    assert approvals.close_orphans(g.ctx) == 1
    assert approvals.close_orphans(g.ctx) == 0
    assert "expired" in approvals.get_approval(g.ctx, g.admin, quota.id).decision_note
    assert ("system", "approval:close", f"approval#{quota.id}") in oplog_actions(g.ctx)


@pytest.mark.both_databases
def test_deciding_a_request_whose_job_ended_closes_it(gov):
    g = gov
    job_id = submit(g)
    req = approvals.create_request(g.ctx, g.alice, "reclaim_lock", "r", job_id=job_id)
    with g.ctx.session() as s:  # the job ended between two rounds of the loop
        job = s.get(Job, job_id)
        job.phase, job.finished_at = "Succeeded", utcnow()
        s.add(job)
    with pytest.raises(Conflict, match="was closed: job train .* is Succeeded"):
        approvals.approve(g.ctx, g.pat, req.id)
    assert approvals.get_approval(g.ctx, g.alice, req.id).status == "closed"
    assert job_row(g.ctx, job_id).reclaim_lock is False
    # A held large job that was admitted some other way (or cancelled) no longer needs a decision.
    large_id, approval_id = held_large_job(g)
    assert job_row(g.ctx, large_id).phase == "Held"
    with g.ctx.session() as s:
        job = s.get(Job, large_id)
        job.phase = "Cancelled"
        s.add(job)
    assert approvals.close_orphans(g.ctx) == 1
    assert approvals.get_approval(g.ctx, g.admin, approval_id).status == "closed"


# ---- notifications --------------------------------------------------------------------------------------------
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
