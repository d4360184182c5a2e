"""services.approvals closes requests whose target is gone (the job ended, the project expired, a held large job
went on some other way), in the leader loop and when someone decides one; row locks: also on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import select

from crater_app.db.models import Job, Project
from crater_app.db.types import utcnow
from crater_app.domain.errors import Conflict
from crater_app.services import approvals, jobs
from crater_app.services.reconcile import LeaderLoop
from tests.helpers import drive_until, job_row
from tests.service.approvals_world import extend, gov, held_large_job, notes_of, oplog_actions, submit  # noqa: F401


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
