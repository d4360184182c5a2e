"""services.approvals on the fake backend: each kind's effect, who may ask and decide, the auto-approval rule's
boundaries (closing orphans: test_approval_orphans.py; notifications: test_notifications.py)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from sqlmodel import select

from crater_app.db.models import Approval, Project, User
from crater_app.db.types import utcnow
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, NotFound
from crater_app.services import approvals, jobs, quotas
from crater_app.services.reconcile import LeaderLoop
from tests.helpers import counts, drive_until, events, job_row, spec
from tests.service.approvals_world import (  # noqa: F401 - gov is a fixture
    extend, gov, held_large_job, notes_of, oplog_actions, submit,
)

H = 3600


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
