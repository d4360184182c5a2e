"""Admission at submission and in the leader loop (services.admission + services.jobs + services.reconcile), on
SQLite and PostgreSQL, with the in-memory FakeBackend (the ClusterBackend boundary) or the local backend."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlmodel import select

from crater_app.db.models import Approval, Job, OperationLog, Project, User
from crater_app.db.types import utcnow
from crater_app.domain.errors import Forbidden
from crater_app.services import admission, approvals, jobs, notifications, projects, quotas, users
from crater_app.services.admission import AdmissionRefused
from crater_app.services.reconcile import LeaderLoop, Reconciler
from tests.conftest import gpu_devices, populate
from tests.fakes import FakeBackend
from tests.helpers import counts, drive_until, events, job_row, signed_in, spec, two_teams, wait_for

pytestmark = pytest.mark.both_databases  # admission locks project rows (FOR UPDATE) and sums usage in SQL

GPU = "nvidia.com/gpu"


@pytest.fixture
def lab(make_ctx):
    """A world on a FakeBackend with 8 GPUs; project ``lab`` (alice and bob members) with a capability of 2 GPUs."""
    fake = FakeBackend(gpu_devices(8))
    world = populate(make_ctx(backend=fake))
    projects.create_project(world.ctx, world.admin, "lab")
    for name in ("alice", "bob"):
        projects.set_member(world.ctx, world.admin, "lab", name, "member")
    quotas.set_quota(world.ctx, world.admin, "lab", {"capability": {GPU: 2}})
    world.alice = signed_in(world, "alice")
    world.bob = signed_in(world, "bob")
    return world, fake


def _job(name, gpus, command=None, **fields):
    return spec(name, command or ["sleep", "60"], project="lab", resources={GPU: gpus}, **fields)


def test_held_with_a_sentence_then_admitted_when_a_job_finishes(lab):
    world, fake = lab
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    first = jobs.submit_job(ctx, world.alice, _job("first", 2, ["sleep", "0.3"]))
    assert first.phase == "Queued" and first.admitted_at is not None and first.reason_code == "placement.pending"
    assert first.reason == "waiting for placement"
    second = jobs.submit_job(ctx, world.bob, _job("second", 1, ["sleep", "0.1"]))
    assert second.phase == "Held" and second.reason_code == "quota" and second.admitted_at is None
    assert second.reason == (
        "Held by the quota of project lab: its capability is 2 × nvidia.com/gpu, 2 × nvidia.com/gpu in use by 1 job "
        "of 1 user, and this job asks for 1 × nvidia.com/gpu. Position 1 of 1 held in the project. No estimate of "
        "its start: the jobs it waits for set no max_runtime.")
    assert second.reason_args["limit"] == {GPU: 2} and second.reason_args["position"] == 1
    assert fake.status(second.uid) is None, "a held job is not given to the backend"
    assert [e.reason for e in events(ctx, second.id)][-1] == "Held"
    third = jobs.submit_job(ctx, world.alice, _job("third", 1, ["sleep", "0.1"]))
    assert third.phase == "Held" and third.reason_code == "quota" and third.reason_args["position"] == 2
    # The public read carries the reason fields; the first job runs, finishes, and the held ones are admitted.
    assert jobs.get_job(ctx, world.bob, second.id).reason_code == "quota"
    row = drive_until(loop, second.id, {"Running", "Succeeded"}, timeout=10)
    assert row.admitted_at is not None and job_row(ctx, first.id).phase == "Succeeded"
    assert row.admitted_at >= job_row(ctx, first.id).finished_at
    evs = [e.reason for e in events(ctx, second.id)]
    assert evs[:2] == ["Submitted", "Held"] and "Admitted" in evs
    drive_until(loop, third.id, "Succeeded", timeout=10)
    assert job_row(ctx, second.id).reason_code == "" and job_row(ctx, third.id).reason_args == {}


def test_hold_sentences_follow_the_queue_and_only_change_when_needed(lab):
    world, _ = lab
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    blocker = jobs.submit_job(ctx, world.alice, _job("blocker", 2))
    held = [jobs.submit_job(ctx, world.bob, _job(f"held-{i}", 1)) for i in range(3)]
    assert [j.reason_args["position"] for j in held] == [1, 2, 3]
    assert [j.reason_args["held"] for j in held] == [1, 2, 3], "each saw the queue as it was when submitted"
    result = loop.admission.step(changed=True)
    assert result.updated == 0, "only the queue's length changed: no held row is rewritten for that alone"
    assert [job_row(ctx, j.id).reason_args["position"] for j in held] == [1, 2, 3]
    assert loop.admission.step(changed=False).skipped, "nothing moved: the round is one query"
    jobs.cancel_job(ctx, world.alice, blocker.id)
    drive_until(loop, held[0].id, "Running")
    assert job_row(ctx, held[1].id).phase == "Running"  # 1 + 1 of 2
    last = job_row(ctx, held[2].id)  # its position changed: its sentence is rewritten, with the queue's length
    assert (last.reason_args["position"], last.reason_args["held"]) == (1, 1)
    assert "Position 1 of 1 held in the project." in last.reason


def test_never_admissible_is_refused_with_the_numbers_and_nothing_is_written(lab):
    world, fake = lab
    ctx = world.ctx
    before = counts(ctx)
    with pytest.raises(AdmissionRefused) as err:
        jobs.submit_job(ctx, world.alice, _job("huge", 4))
    assert err.value.http_status == 422 and err.value.kind == "never_admissible"
    assert err.value.field == f"resources.{GPU}"
    assert "4 × nvidia.com/gpu" in err.value.message and "at most 2 × nvidia.com/gpu" in err.value.message
    assert err.value.code == "admission.over_capability" and err.value.params["limit"] == {GPU: 2}
    # Over the member's share (set by the project's admin path) and over the user's limits.
    projects.set_member(ctx, world.admin, "lab", "alice", None, share={GPU: 1})
    before = counts(ctx)
    with pytest.raises(AdmissionRefused, match="your share in project lab is 1 × nvidia.com/gpu"):
        jobs.submit_job(ctx, world.alice, _job("over-share", 2))
    with ctx.session() as s:
        s.exec(update(User).where(User.username == "bob").values(max_runtime_s=3600, max_accelerators_per_job=1))
    assert counts(ctx) == before
    with pytest.raises(AdmissionRefused) as err:
        jobs.submit_job(ctx, world.bob, _job("too-long", 1, max_runtime="2h"))
    assert err.value.field == "max_runtime" and "your limit is 1h (3600 s)" in err.value.message
    with pytest.raises(AdmissionRefused, match="your limit is 1 per job"):
        jobs.submit_job(ctx, world.bob, _job("too-wide", 2))
    assert counts(ctx) == before and fake.created == []
    # The user's max_runtime is also the default of a job that gives none.
    ok = jobs.submit_job(ctx, world.bob, _job("default-runtime", 1))
    assert ok.max_runtime == 3600 and job_row(ctx, ok.id).max_runtime_s == 3600


def test_an_expired_project_refuses_submissions_with_the_date(lab):
    world, _ = lab
    ctx = world.ctx
    expired = utcnow() - timedelta(days=1)
    with ctx.session() as s:
        s.exec(update(Project).where(Project.name == "lab").values(expires_at=expired))
    before = counts(ctx)
    with pytest.raises(Forbidden) as err:
        jobs.submit_job(ctx, world.alice, _job("late", 1))
    assert err.value.field == "project" and expired.strftime("%Y-%m-%d") in err.value.message
    assert "expired" in err.value.message and counts(ctx) == before


def test_the_loop_does_not_admit_held_jobs_of_a_project_that_has_expired(lab):
    world, fake = lab
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    first = jobs.submit_job(ctx, world.alice, _job("first", 2, ["sleep", "0.1"]))
    held = jobs.submit_job(ctx, world.bob, _job("held", 1, ["sleep", "0.1"]))
    assert first.phase == "Queued" and held.phase == "Held"
    with ctx.session() as s:
        s.exec(update(Project).where(Project.name == "lab").values(expires_at=utcnow() - timedelta(seconds=1)))
    drive_until(loop, first.id, "Succeeded")  # room appears, but the project has expired
    for _ in range(3):
        loop.step()
    assert job_row(ctx, held.id).phase == "Held" and fake.status(held.uid) is None
    assert admission.admission_round(ctx).admitted == []
    with ctx.session() as s:
        s.exec(update(Project).where(Project.name == "lab").values(expires_at=None))
    assert admission.admission_round(ctx).admitted == [held.id]


def test_a_job_above_the_approval_threshold_waits_for_approval_and_is_never_admitted_by_the_loop(make_ctx):
    fake = FakeBackend(gpu_devices(16))
    world = populate(make_ctx(backend=fake))
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    assert ctx.settings.approval_gpu_threshold == 8
    big = jobs.submit_job(ctx, world.alice, spec("big", ["sleep", "60"], resources={GPU: 10}))
    assert big.phase == "Held" and big.reason_code == "approval"
    assert big.reason_args["requested"] == 10 and big.reason_args["threshold"] == 8
    assert "waiting for approval" in big.reason.lower()
    with ctx.session() as s:
        approval = s.exec(select(Approval).where(Approval.job_id == big.id)).one()
        op = s.exec(select(OperationLog).where(OperationLog.action == "job:create")).one()
    assert (approval.kind, approval.status, approval.requester_id) == ("large_job", "pending", world.alice.user_id)
    assert "held (approval)" in op.details and op.code == "job.created_held"
    # Its reason is Crater's own, as a code: the approvals table and the deciders' notification read it in their
    # language.
    assert (approval.reason_code, approval.reason_args) == (
        "approval.large_job", {"job": "big", "accelerators": 10, "threshold": 8})
    assert approval.reason == ("job 'big' asks for 10 accelerators, more than the 8 a job may use without an "
                               "administrator's approval")
    [public] = approvals.list_approvals(ctx, world.admin).items
    assert (public.reason_code, public.reason_args) == (approval.reason_code, approval.reason_args)
    assert approvals.notices.reason_text("zh-CN", public) == "作业“big”申请 10 个加速器，超过了无需管理员审批即可使用的 8 个"
    [notice] = notifications.list_notifications(ctx, world.admin).items
    assert notice.kind == "approval.requested" and notice.message.endswith(approval.reason)
    assert notifications.text("zh-CN", notice.kind, notice.args).endswith("超过了无需管理员审批即可使用的 8 个")
    for _ in range(5):
        loop.step()
    assert job_row(ctx, big.id).phase == "Held" and fake.status(big.uid) is None
    # A platform admin's large job needs no approval.
    mine = jobs.submit_job(ctx, world.admin, spec("admins", ["sleep", "0.1"], resources={GPU: 10}))
    assert mine.phase == "Queued"
    drive_until(loop, mine.id, "Succeeded")
    assert job_row(ctx, big.id).phase == "Held"
    # What the approvals service does on approval: another reason code, and a kick; the loop admits it.
    with ctx.session() as s:
        s.exec(update(Job).where(Job.id == big.id).values(reason_code="quota"))
    drive_until(loop, big.id, "Running")


def test_a_held_job_is_cancelled_without_the_backend(lab):
    world, fake = lab
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    jobs.submit_job(ctx, world.alice, _job("blocker", 2))
    held = jobs.submit_job(ctx, world.alice, _job("held", 1))
    assert held.phase == "Held"
    out = jobs.cancel_job(ctx, world.alice, held.id)
    assert out.phase == "Cancelled" and out.finished_at is not None and out.reason == "cancelled by alice"
    assert held.uid not in fake.created
    assert [e.reason for e in events(ctx, held.id)][-1] == "Cancelled"
    loop.step()
    assert job_row(ctx, held.id).phase == "Cancelled"


def test_interactive_sessions_are_limited_per_user(lab):
    world, _ = lab
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    with ctx.session() as s:
        s.exec(update(User).where(User.username == "alice").values(max_sessions=1))
    one = jobs.submit_job(ctx, world.alice, _job("nb-1", 0, kind="interactive"))
    two = jobs.submit_job(ctx, world.alice, _job("nb-2", 0, kind="interactive"))
    batch = jobs.submit_job(ctx, world.alice, _job("batch", 0))
    assert (one.phase, two.phase, batch.phase) == ("Queued", "Held", "Queued")
    assert two.reason_code == "sessions" and two.reason_args["limit"] == 1 and two.kind == "interactive"
    jobs.cancel_job(ctx, world.alice, one.id)
    drive_until(loop, two.id, "Running")


def test_a_session_limit_of_zero_refuses_sessions_at_submission(lab):
    """A session that could never start is refused with the numbers instead of waiting Held forever."""
    world, _ = lab
    ctx = world.ctx
    users.update_user(ctx, world.admin, "alice", {"max_sessions": 0})
    before = counts(ctx)
    with pytest.raises(AdmissionRefused) as info:
        jobs.submit_job(ctx, world.alice, _job("nb", 0, kind="interactive"))
    assert (info.value.code, info.value.field, info.value.params, info.value.http_status) == (
        "admission.no_sessions", "kind", {"limit": 0}, 422)
    assert "limit is 0" in info.value.message and "0 个会话" in info.value.message_in("zh-CN")
    assert counts(ctx) == before, "nothing written"
    assert jobs.submit_job(ctx, world.alice, _job("batch", 0)).phase == "Queued", "batch jobs are not sessions"


def test_member_share_holds_one_member_not_the_others(lab):
    world, _ = lab
    ctx = world.ctx
    projects.set_member(ctx, world.admin, "lab", "alice", None, share={GPU: 1})
    first = jobs.submit_job(ctx, world.alice, _job("a1", 1))
    second = jobs.submit_job(ctx, world.alice, _job("a2", 1))
    other = jobs.submit_job(ctx, world.bob, _job("b1", 1))
    assert (first.phase, second.phase, other.phase) == ("Queued", "Held", "Queued")
    assert second.reason_code == "share" and "your share in project lab" in second.reason


def test_preemption_reclaims_for_a_project_below_its_deserved_share(make_ctx):
    fake = FakeBackend(gpu_devices(4))
    world = populate(make_ctx(backend=fake))
    ctx, admin = world.ctx, world.admin
    alice, bob = two_teams(world, 2)
    loop = LeaderLoop(ctx)
    # team-b borrows the idle machine with preemptible jobs; the last one asks not to be requeued.
    borrowed = [jobs.submit_job(ctx, bob, spec(f"fill-{i}", ["sleep", "60"], project="team-b", resources={GPU: 1},
                                               preemptible=True, requeue_on_preemption=i != 3)) for i in range(4)]
    assert {j.phase for j in borrowed} == {"Queued"}
    assert [j.requeue_on_preemption for j in borrowed] == [True, True, True, False]
    for j in borrowed:
        drive_until(loop, j.id, "Running")
    # team-a, below its deserved share, asks for 2: the two most recent backfill jobs of team-b are preempted.
    want = jobs.submit_job(ctx, alice, spec("want", ["sleep", "60"], project="team-a", resources={GPU: 2}))
    assert want.phase == "Held" and want.reason_code == "reclaim" and "team-b" in want.reason
    row = drive_until(loop, want.id, "Running", timeout=10)
    assert row.reason_code == ""
    requeued, failed = job_row(ctx, borrowed[2].id), job_row(ctx, borrowed[3].id)
    # fill-2 is back in Crater's queue for its second attempt, keeping its id; fill-3 asked not to be: Failed.
    assert (requeued.phase, requeued.attempt, requeued.devices) == ("Held", 2, [])
    assert requeued.finished_at is not None, "the end of its first run"
    assert (failed.phase, failed.attempt, failed.reason_code) == ("Failed", 1, "preempted_final")
    assert "team-a" in failed.reason and "requeue_on_preemption is off" in failed.reason
    for victim in (requeued, failed):
        reasons = [(e.phase, e.reason, e.message) for e in events(ctx, victim.id)]
        assert any(r == "Preempted" and p == "Stopping" and f"#{want.id}" in m and "team-a" in m
                   for p, r, m in reasons), reasons
    last = events(ctx, requeued.id)[-1]
    assert (last.phase, last.reason, last.code, last.args["attempt"]) == ("Held", "Requeued", "hold.requeued", 2)
    assert events(ctx, failed.id)[-1].reason == "Preempted" and events(ctx, failed.id)[-1].phase == "Failed"
    mine = [(e.reason, e.message) for e in events(ctx, want.id)]
    assert sum(1 for r, _ in mine if r == "Reclaiming") == 2 and any(r == "Admitted" for r, _ in mine)
    assert all("team-b" in m for r, m in mine if r == "Reclaiming")
    with ctx.session() as s:
        ops = s.exec(select(OperationLog).where(OperationLog.action == "job:preempt")).all()
    assert len(ops) == 2 and all(o.actor == "system" for o in ops) and ops[0].code == "job.preempted_for"
    assert [job_row(ctx, j.id).phase for j in borrowed[:2]] == ["Running", "Running"]
    # When team-a's job ends there is room again: fill-2 runs its second attempt under the same id and uid.
    jobs.cancel_job(ctx, alice, want.id)
    again = drive_until(loop, requeued.id, "Running", timeout=10)
    assert again.attempt == 2 and again.uid == requeued.uid and again.started_at > requeued.finished_at
    assert again.finished_at is None and fake.status(again.uid).attempt == 2


def test_preempted_jobs_end_failed_after_their_last_attempt(make_ctx):
    fake = FakeBackend(gpu_devices(2))
    world = populate(make_ctx(backend=fake))
    ctx, admin = world.ctx, world.admin
    ctx.settings.max_attempts = 1
    alice, bob = two_teams(world, 1)
    loop = LeaderLoop(ctx)
    fills = [jobs.submit_job(ctx, bob, spec(f"fill-{i}", ["sleep", "60"], project="team-b", resources={GPU: 1},
                                            preemptible=True)) for i in range(2)]
    for j in fills:
        drive_until(loop, j.id, "Running")
    want = jobs.submit_job(ctx, alice, spec("want", ["sleep", "60"], project="team-a", resources={GPU: 1}))
    drive_until(loop, want.id, "Running")
    victim = job_row(ctx, fills[1].id)
    assert (victim.phase, victim.reason_code, victim.attempt) == ("Failed", "preempted_exhausted", 1)
    assert "all 1 attempts" in victim.reason


def test_a_job_admitted_but_not_started_is_no_preemption_victim(make_ctx):
    """Preempting a job that has not run yet would spend one of its attempts without a run (with ``max_attempts``
    1 it would end Failed having never run): the beneficiary waits until the job runs, and then reclaims it."""
    fake = FakeBackend(gpu_devices(2))
    world = populate(make_ctx(backend=fake))
    ctx, admin = world.ctx, world.admin
    ctx.settings.max_attempts = 1
    for name, user in (("team-a", "alice"), ("team-b", "bob")):
        projects.create_project(ctx, admin, name)
        projects.set_member(ctx, admin, name, user, "member")
        quotas.set_quota(ctx, admin, name, {"deserved": {GPU: 1}})
    alice, bob = signed_in(world, "alice"), signed_in(world, "bob")
    fills = [jobs.submit_job(ctx, bob, spec(f"fill-{i}", ["sleep", "60"], project="team-b", resources={GPU: 1},
                                            preemptible=True)) for i in range(2)]
    assert [j.phase for j in fills] == ["Queued", "Queued"]  # admitted; the backend has not started them yet
    want = jobs.submit_job(ctx, alice, spec("want", ["sleep", "60"], project="team-a", resources={GPU: 1}))
    assert (want.phase, want.reason_code) == ("Held", "fairshare")
    assert job_row(ctx, want.id).reason_args["reclaimable"] == {GPU: 0}
    result = admission.admission_round(ctx)
    assert (result.admitted, result.preempted) == ([], [])
    assert [(job_row(ctx, j.id).phase, job_row(ctx, j.id).attempt) for j in fills] == [("Queued", 1), ("Queued", 1)]
    fake.tick()  # they start
    Reconciler(ctx).sync()
    result = admission.admission_round(ctx)
    assert result.admitted == [want.id] and [uid for uid, _ in result.preempted] == [fills[1].uid]


def test_non_preemptible_jobs_are_never_stopped(make_ctx):
    fake = FakeBackend(gpu_devices(2))
    world = populate(make_ctx(backend=fake))
    ctx, admin = world.ctx, world.admin
    alice, bob = two_teams(world, 1)
    loop = LeaderLoop(ctx)
    hogs = [jobs.submit_job(ctx, bob, spec(f"hog-{i}", ["sleep", "60"], project="team-b", resources={GPU: 1}))
            for i in range(2)]
    waiting = jobs.submit_job(ctx, alice, spec("waits", ["sleep", "60"], project="team-a", resources={GPU: 1}))
    assert waiting.phase == "Held" and waiting.reason_code == "fairshare"
    for _ in range(3):
        loop.step()
    assert {job_row(ctx, j.id).phase for j in hogs} == {"Running"}
    assert job_row(ctx, waiting.id).phase == "Held"
    # Translated for a Chinese reader, with the same numbers.
    zh = admission.reason_text("zh-CN", waiting.reason_code, waiting.reason_args, waiting.reason)
    assert "应得份额" in zh and "team-a" in zh


@pytest.mark.local_backend
def test_admission_with_the_local_backend(world):
    """The local backend (real processes): a held job starts when the job before it exits."""
    ctx, admin = world.ctx, world.admin
    quotas.set_quota(ctx, admin, "default", {"capability": {GPU: 1}})
    loop = LeaderLoop(ctx)
    first = jobs.submit_job(ctx, world.alice, spec("first", ["sh", "-c", "sleep 0.2"], resources={GPU: 1}))
    second = jobs.submit_job(ctx, world.alice, spec("second", ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES"],
                                                    resources={GPU: 1}))
    assert (first.phase, second.phase) == ("Queued", "Held")
    row = drive_until(loop, second.id, "Succeeded", timeout=15)
    assert row.admitted_at >= job_row(ctx, first.id).finished_at
    assert wait_for(lambda: jobs.job_logs(ctx, world.alice, second.id).strip(), 5) in {"0", "1", "2", "3"}


def test_resubmit_keeps_kind_and_preemptible(lab):
    world, _ = lab
    ctx = world.ctx
    job = jobs.submit_job(ctx, world.alice, _job("nb", 0, kind="interactive", preemptible=True))
    again = jobs.resubmit_job(ctx, world.alice, job.id)
    assert (again.kind, again.preemptible, again.resubmitted_from) == ("interactive", True, job.id)
