"""``Stopping`` between a stop (cancel, deadline, preemption) and the last process's exit, with the job's devices and
quota still counted; a preempted job back in the queue for its next attempt, under the same id and uid, on the
FakeBackend boundary and once end to end on the local backend (real processes)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from crater_app.cluster.base import WorkloadStatus
from crater_app.domain.jobs import JobPhase
from crater_app.services import job_reasons, jobs, leases, nodes, quotas, stops
from crater_app.services.reconcile import LEASE_NAME, LeaderLoop, Reconciler
from tests.conftest import gpu_devices, populate
from tests.fakes import FakeBackend
from tests.helpers import drive_until, events, job_row, spec, two_teams, wait_for

GPU = "nvidia.com/gpu"


def _phases(ctx, job_id):
    return [e.phase for e in events(ctx, job_id)]


def test_a_cancelled_job_is_stopping_and_holds_its_devices_and_quota_until_it_has_stopped(make_ctx):
    fake = FakeBackend(gpu_devices(2))
    world = populate(make_ctx(backend=fake))
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    quotas.set_quota(ctx, world.admin, "default", {"capability": {GPU: 1}})
    running = jobs.submit_job(ctx, world.alice, spec("running", ["sleep", "60"], resources={GPU: 1}))
    drive_until(loop, running.id, "Running")
    waiting = jobs.submit_job(ctx, world.alice, spec("waiting", ["sleep", "60"], resources={GPU: 1}))
    assert waiting.phase == "Held"
    stopping = jobs.cancel_job(ctx, world.alice, running.id)
    assert (stopping.phase, stopping.reason_code) == ("Stopping", "job.stopping_cancelled")
    assert stopping.stop_requested_at is not None and stopping.devices == [0]
    # While it stops: the backend still holds its device, admission still counts it, the node view names it.
    loop.reconciler.sync()
    loop.admit()
    assert job_row(ctx, running.id).phase == "Stopping" and job_row(ctx, waiting.id).phase == "Held"
    assert fake.status(running.uid).raw_state == "Stopping"
    [node] = nodes.list_nodes(ctx, world.alice)
    assert [(d.index, d.job_id) for d in node.devices if d.busy] == [(0, running.id)]
    assert jobs.cancel_job(ctx, world.alice, running.id).stop_requested_at == stopping.stop_requested_at
    # Once it has stopped: Cancelled, and the held job takes the quota.
    row = drive_until(loop, running.id, "Cancelled")
    assert row.exit_code == 143 and row.exit_signal == 15 and row.reason == "cancelled by alice"
    assert (row.reason_code, row.reason_args) == ("job.cancelled_by", {"user": "alice"})
    assert _phases(ctx, running.id)[-3:] == ["Running", "Stopping", "Cancelled"]
    assert [e.reason for e in events(ctx, running.id)].count("CancelRequested") == 1
    drive_until(loop, waiting.id, "Running")


def test_a_job_past_its_deadline_is_stopping_then_failed(make_ctx):
    clock = SimpleNamespace(t=1_000_000.0)
    fake = FakeBackend(gpu_devices(1), clock=lambda: clock.t)
    world = populate(make_ctx(backend=fake))
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("late", ["sleep", "600"], resources={GPU: 1}, max_runtime=60))
    drive_until(loop, job.id, "Running")
    clock.t += 61
    loop.step()
    row = job_row(ctx, job.id)
    assert row.phase == "Stopping" and row.devices == [0] and "max_runtime of 60 s exceeded" in row.reason
    row = drive_until(loop, job.id, "Failed")
    assert "max_runtime" in row.reason and events(ctx, job.id)[-1].reason == "DeadlineExceeded"


class FlakyCancel:
    """``backend.cancel`` failing for the uids in ``failing`` (each as many times as given), as a backend that is
    unreachable for a moment; ``calls`` every uid asked to stop, in order."""

    def __init__(self, backend, failing: dict[str, int]):
        self.real, self.failing, self.calls = backend.cancel, dict(failing), []

    def __call__(self, uid: str, reason: str, **codes) -> None:
        self.calls.append(uid)
        if self.failing.get(uid, 0) > 0:
            self.failing[uid] -= 1
            raise RuntimeError("backend unavailable for a moment")
        self.real(uid, reason, **codes)


def _reclaim_world(make_ctx):
    """Two GPUs held by two preemptible jobs of team-b (which deserves none); team-a deserves both."""
    fake = FakeBackend(gpu_devices(2))
    world = populate(make_ctx(backend=fake))
    ctx = world.ctx
    alice, bob = two_teams(world, (2, 0))
    ctx.bob = bob  # the owner of the preemptible jobs, for the tests that cancel one
    loop = LeaderLoop(ctx)
    fills = [jobs.submit_job(ctx, bob, spec(f"fill-{i}", ["sleep", "60"], project="team-b", resources={GPU: 1},
                                            preemptible=True)) for i in range(2)]
    for job in fills:
        drive_until(loop, job.id, "Running")
    return fake, ctx, loop, alice, fills


def test_a_preemption_whose_stop_fails_is_sent_again_and_the_other_victims_are_stopped(clock, make_ctx):
    fake, ctx, loop, alice, fills = _reclaim_world(make_ctx)
    flaky = fake.cancel = FlakyCancel(fake, {fills[1].uid: 1})
    want = jobs.submit_job(ctx, alice, spec("want", ["sleep", "60"], project="team-a", resources={GPU: 2}))
    loop.step()  # the round preempts both: the first stop fails, the second still goes out
    assert sorted(flaky.calls) == sorted(f.uid for f in fills)
    assert [job_row(ctx, f.id).phase for f in fills] == ["Stopping", "Stopping"]
    assert (fake.status(fills[0].uid).raw_state, fake.status(fills[1].uid).raw_state) in (
        ("Cancelled", "Running"), ("Stopping", "Running"))
    for _ in range(3):  # not again before stops.RESEND_AFTER_S
        loop.step()
    assert flaky.calls.count(fills[1].uid) == 1 and fake.status(fills[1].uid).raw_state == "Running"
    clock.advance(stops.RESEND_AFTER_S + 1)
    loop.step()
    assert flaky.calls.count(fills[1].uid) == 2
    assert [e.reason for e in events(ctx, fills[1].id)].count("StopResent") == 1
    assert [e.reason for e in events(ctx, fills[0].id)].count("StopResent") == 0
    assert drive_until(loop, fills[1].id, "Held").attempt == 2  # requeued for its next attempt
    drive_until(loop, want.id, "Running")


def test_a_job_cancelled_while_a_preemption_stops_it_ends_cancelled_and_its_room_is_counted_once(make_ctx):
    fake, ctx, loop, alice, fills = _reclaim_world(make_ctx)
    want = jobs.submit_job(ctx, alice, spec("want", ["sleep", "60"], project="team-a", resources={GPU: 2}))
    ticks, fake.tick = fake.tick, lambda: None  # the victims' processes take their time to exit
    loop.step()  # the round preempts both for "want"
    assert [job_row(ctx, f.id).reason_code for f in fills] == [job_reasons.PREEMPTED] * 2
    jobs.cancel_job(ctx, ctx.bob, fills[0].id)
    row = job_row(ctx, fills[0].id)
    # Still stopped for the preemption (admission leaves it out: its room is want's), with the cancel recorded.
    assert (row.phase, row.reason_code, row.reason_args["cancelled_by"]) == ("Stopping", "preempted", "bob")
    assert [e.reason for e in events(ctx, fills[0].id)].count("CancelRequested") == 1
    jobs.cancel_job(ctx, ctx.bob, fills[0].id)  # again: nothing more to record
    assert [e.reason for e in events(ctx, fills[0].id)].count("CancelRequested") == 1
    fake.tick = ticks
    cancelled = drive_until(loop, fills[0].id, "Cancelled")
    assert (cancelled.attempt, cancelled.reason_code, cancelled.reason_args) == (1, "job.cancelled_by", {"user": "bob"})
    assert events(ctx, fills[0].id)[-1].reason == "Cancelled"
    assert drive_until(loop, fills[1].id, "Held").attempt == 2  # the other victim is requeued as before
    drive_until(loop, want.id, "Running")


def _running_with_a_flaky_cancel(make_ctx, failures: int):
    """A running 1-GPU job of alice on a FakeBackend whose ``cancel`` fails ``failures`` times for it."""
    fake = FakeBackend(gpu_devices(1))
    world = populate(make_ctx(backend=fake))
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("stop-me", ["sleep", "600"], resources={GPU: 1}))
    drive_until(loop, job.id, "Running")
    flaky = fake.cancel = FlakyCancel(fake, {job.uid: failures})
    return fake, world, ctx, loop, job, flaky


def test_a_cancel_that_does_not_reach_the_backend_is_sent_again_with_a_growing_wait(clock, make_ctx):
    fake, world, ctx, loop, job, flaky = _running_with_a_flaky_cancel(make_ctx, 3)
    assert jobs.cancel_job(ctx, world.alice, job.id).phase == "Stopping"  # the failure is not the caller's error
    after = stops.RESEND_AFTER_S
    for wait, calls in ((after - 1, 1), (2, 2), (after, 3), (2 * after - 1, 3), (1, 4)):
        clock.advance(wait)
        loop.step()
        assert len(flaky.calls) == calls, f"after {wait} s more"  # waits: 5 s, then 5 s, then 10 s
    assert fake.status(job.uid).raw_state in ("Stopping", "Cancelled")
    assert [e.reason for e in events(ctx, job.id)].count("StopResent") == 1
    row = drive_until(loop, job.id, "Cancelled")
    assert row.reason == "cancelled by alice"


def test_a_new_leader_sends_every_stop_the_backend_has_not_acted_on_at_once(clock, make_ctx):
    fake, world, ctx, loop, job, flaky = _running_with_a_flaky_cancel(make_ctx, 1)
    jobs.cancel_job(ctx, world.alice, job.id)  # as if the process died before the stop reached the backend
    assert fake.status(job.uid).raw_state == "Running"
    leases.release(ctx, LEASE_NAME, loop.holder)  # the old leader hands over
    clock.advance(0.5)  # well before stops.RESEND_AFTER_S
    successor = LeaderLoop(ctx)
    successor.step()  # newly leader: adopt, repair, and the stops not acted on go out without waiting
    assert flaky.calls == [job.uid, job.uid] and fake.status(job.uid).raw_state in ("Stopping", "Cancelled")
    drive_until(successor, job.id, "Cancelled")


def test_statuses_of_an_earlier_attempt_are_history(make_ctx):
    fake = FakeBackend(gpu_devices(1))
    world = populate(make_ctx(backend=fake))
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("again", ["sleep", "60"], resources={GPU: 1}))
    drive_until(loop, job.id, "Running")
    with ctx.session() as s:  # as the reconciler leaves a job it has sent back for its second attempt
        row = s.get(type(job_row(ctx, job.id)), job.id)
        row.phase, row.attempt = "Held", 2
        s.add(row)
    n = len(events(ctx, job.id))
    fake.set_state(job.uid, "Cancelled", reason="Cancelled", message="the first run's end")
    loop.reconciler.sync()
    assert (job_row(ctx, job.id).phase, len(events(ctx, job.id))) == ("Held", n)


def test_a_later_attempt_is_charged_from_its_own_start_and_keeps_what_the_first_owed():
    t0 = datetime(2026, 12, 1, 8, 0, tzinfo=timezone.utc)
    job = SimpleNamespace(attempt=2, started_at=t0, finished_at=t0 + timedelta(minutes=30),
                          charged_until=t0 + timedelta(minutes=20))
    restart = t0 + timedelta(hours=2)
    Reconciler._started(job, WorkloadStatus(uid="u", phase=JobPhase.RUNNING, raw_state="Running", reason="",
                                            message="", started_at=restart, attempt=2))
    # 10 minutes of the first run were not charged yet: they come before the restart; the 90-minute wait is free.
    assert job.charged_until == restart - timedelta(minutes=10)
    assert (job.started_at, job.finished_at) == (restart, None)
    settled = SimpleNamespace(attempt=2, started_at=t0, finished_at=t0 + timedelta(minutes=30),
                              charged_until=t0 + timedelta(minutes=30))
    Reconciler._started(settled, WorkloadStatus(uid="u", phase=JobPhase.RUNNING, raw_state="Running", reason="",
                                                message="", started_at=restart, attempt=2))
    assert settled.charged_until == restart


def test_requeue_and_stopping_end_to_end_on_the_local_backend(make_ctx):
    """Real processes: a preempted job is Stopping until its process has exited, goes back to Crater's queue for
    its second attempt, and runs again under the same uid (same folder: its log goes on) when room appears."""
    world = populate(make_ctx(gpus=2, cancel_grace_s=0.5))
    ctx = world.ctx
    alice, bob = two_teams(world, 1)
    loop = LeaderLoop(ctx)
    fills = [jobs.submit_job(ctx, bob, spec(f"fill-{i}", ["sh", "-c", f"echo run of fill-{i}; sleep 60"],
                                            project="team-b", resources={GPU: 1}, preemptible=True))
             for i in range(2)]
    for i, j in enumerate(fills):
        drive_until(loop, j.id, "Running", timeout=15)
        # its first run has printed before anything preempts it (a stop within milliseconds of the start may end
        # the process before it ran a line)
        wait_for(lambda: f"run of fill-{i}" in jobs.job_logs(ctx, bob, j.id), 10, what="the first run's output")
    victim = fills[1]
    want = jobs.submit_job(ctx, alice, spec("want", ["sleep", "60"], project="team-a", resources={GPU: 1}))
    wait_for(lambda: job_row(ctx, victim.id).phase in ("Stopping", "Held"), 15, step=loop.step,
             what="the victim stopping")
    requeued = drive_until(loop, victim.id, "Held", timeout=15)
    assert requeued.attempt == 2 and requeued.reason_code in ("requeued", "fairshare", "capacity", "queue")
    assert "Stopping" in _phases(ctx, victim.id)
    drive_until(loop, want.id, "Running", timeout=15)
    assert ctx.backend.status(victim.uid).attempt == 1
    # Room appears: the second attempt runs under the same uid; the log shows both runs.
    jobs.cancel_job(ctx, alice, want.id)
    again = drive_until(loop, victim.id, "Running", timeout=15)
    assert (again.attempt, again.uid) == (2, victim.uid) and ctx.backend.status(victim.uid).attempt == 2
    logs = wait_for(lambda: (text := jobs.job_logs(ctx, bob, victim.id)).count("run of fill-1") == 2 and text, 10)
    assert logs.count("run of fill-1") == 2
    reasons = [e.reason for e in events(ctx, victim.id)]
    assert reasons.count("Requeued") == 1 and "Admitted" in reasons[reasons.index("Requeued"):]
    stopping = jobs.cancel_job(ctx, bob, victim.id)
    assert stopping.phase == "Stopping"
    assert drive_until(loop, victim.id, "Cancelled", timeout=15).attempt == 2


@pytest.mark.local_backend
def test_a_cancelled_jobs_final_reason_on_the_local_backend_is_a_code(make_ctx):
    """The local backend reported a cancelled job's end as English text without a code, so it read in English
    in the Chinese console."""
    world = populate(make_ctx(gpus=1, cancel_grace_s=0.5))
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("c", ["sleep", "60"]))
    drive_until(loop, job.id, "Running", timeout=15)
    jobs.cancel_job(ctx, world.alice, job.id)
    row = drive_until(loop, job.id, "Cancelled", timeout=15)
    assert (row.reason_code, row.reason_args, row.reason) == ("job.cancelled_by", {"user": "alice"},
                                                              "cancelled by alice")
    assert job_reasons.reason_text("zh-CN", row.reason_code, row.reason_args, row.reason) == "已被 alice 取消"
    assert [(e.phase, e.code) for e in events(ctx, job.id)][-1] == ("Cancelled", "job.cancelled_by")
