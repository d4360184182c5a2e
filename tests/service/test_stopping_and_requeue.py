"""``Stopping`` between a stop (cancel, deadline, preemption) and the last process's exit, with the job's devices and
quota still counted; a preempted job back in the queue for its next attempt, under the same id and uid, on the
FakeBackend boundary and once end to end on the local backend (real processes)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from crater_app.cluster.base import WorkloadStatus
from crater_app.services import identity, job_reasons, jobs, nodes, projects, quotas
from crater_app.services.reconcile import LeaderLoop, Reconciler
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
    assert fake.status(running.uid).state == "Stopping"
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
    Reconciler._started(job, WorkloadStatus(uid="u", state="Running", reason="", message="", exit_code=None,
                                            devices=(), started_at=restart, finished_at=None, rev=1, attempt=2))
    # 10 minutes of the first run were not charged yet: they come before the restart; the 90-minute wait is free.
    assert job.charged_until == restart - timedelta(minutes=10)
    assert (job.started_at, job.finished_at) == (restart, None)
    settled = SimpleNamespace(attempt=2, started_at=t0, finished_at=t0 + timedelta(minutes=30),
                              charged_until=t0 + timedelta(minutes=30))
    Reconciler._started(settled, WorkloadStatus(uid="u", state="Running", reason="", message="", exit_code=None,
                                                devices=(), started_at=restart, finished_at=None, rev=1, attempt=2))
    assert settled.charged_until == restart


def test_requeue_and_stopping_end_to_end_on_the_local_backend(make_ctx):
    """Real processes: a preempted job is Stopping until its process has exited, goes back to Crater's queue for
    its second attempt, and runs again under the same uid (same folder: its log goes on) when room appears."""
    world = populate(make_ctx(gpus=2, cancel_grace_s=0.5))
    ctx, admin = world.ctx, world.admin
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
