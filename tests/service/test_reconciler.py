"""services.reconcile against the in-memory fake backend: every transition becomes an event, unknown backend
states are kept verbatim, impossible transitions are recorded and ignored."""

from __future__ import annotations

import pytest

from crater_app.services import jobs
from crater_app.services.reconcile import LeaderLoop, Reconciler
from tests.conftest import gpu_devices, populate
from tests.fakes import FakeBackend
from tests.helpers import drive_until, events, job_row, spec, workload


@pytest.fixture
def fake_world(make_ctx):
    fake = FakeBackend(gpu_devices(4))
    ctx = make_ctx(backend=fake)
    return populate(ctx), fake


def test_unknown_backend_state_is_kept_verbatim(fake_world):
    world, fake = fake_world
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("evictee", ["sleep", "60"]))
    drive_until(loop, job.id, "Running")
    fake.set_state(job.uid, "Evicted", reason="NodeDrain", message="node fake-node is being drained")
    loop.step()
    row = job_row(ctx, job.id)
    assert row.phase == "Running", "an unknown state does not move the phase"
    last = events(ctx, job.id)[-1]
    assert last.reason == "BackendState" and last.phase == "Running"
    assert last.message == "backend reports state 'Evicted' (NodeDrain): node fake-node is being drained"
    fake.set_state(job.uid, "Failed", reason="Evicted", message="evicted from fake-node")
    row = drive_until(loop, job.id, "Failed")
    assert row.reason == "evicted from fake-node" and events(ctx, job.id)[-1].reason == "Evicted"


def test_a_cursor_the_backend_no_longer_honours_is_followed_by_a_relist(fake_world):
    """The backend's history restarted (a replaced store, a new fake): the reconciler applies its whole list and goes
    on from the cursor it gave."""
    world, fake = fake_world
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("relisted", ["sleep", "60"]))
    loop.step()
    fake.tick()  # Running now; the reconciler has not seen it
    loop.reconciler.cursor = "a-cursor-of-another-backend:7"
    assert loop.reconciler.sync() >= 1
    assert job_row(ctx, job.id).phase == "Running"
    assert not fake.changes(loop.reconciler.cursor).relist and fake.changes(loop.reconciler.cursor).statuses == ()


def test_every_transition_is_an_event(fake_world):
    world, fake = fake_world
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("steps", ["sh", "-c", "echo hi; sleep 0.2; exit 0"],
                                                 resources={"nvidia.com/gpu": 2}))
    drive_until(loop, job.id, "Running")
    row = drive_until(loop, job.id, "Succeeded")
    evs = events(ctx, job.id)
    assert [(e.phase, e.reason) for e in evs] == [
        ("Queued", "Submitted"), ("Running", "Started"), ("Succeeded", "Completed")]
    assert evs[1].at == row.started_at and evs[2].at == row.finished_at
    assert row.devices == [0, 1] and row.exit_code == 0
    assert jobs.job_logs(ctx, world.alice, job.id) == "hi\n"
    assert fake.adopted == 1, "adopt runs once, when the process becomes leader"


def test_start_and_finish_between_two_syncs_still_records_running(fake_world):
    world, fake = fake_world
    ctx = world.ctx
    job = jobs.submit_job(ctx, world.alice, spec("fast", ["sh", "-c", "exit 4"]))
    fake.tick()  # placed and started
    fake.tick()  # finished
    Reconciler(ctx).sync()
    row = job_row(ctx, job.id)
    assert row.phase == "Failed" and row.exit_code == 4 and row.started_at is not None
    assert [e.phase for e in events(ctx, job.id)] == ["Queued", "Running", "Failed"]


def test_impossible_transition_is_recorded_and_ignored(fake_world):
    world, fake = fake_world
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("back", ["sleep", "60"]))
    drive_until(loop, job.id, "Running")
    fake.set_state(job.uid, "Pending", reason="Requeued", message="back in the queue")
    loop.reconciler.sync()
    assert job_row(ctx, job.id).phase == "Running"
    assert events(ctx, job.id)[-1].reason == "IgnoredTransition"


def test_terminal_jobs_stay_terminal(fake_world):
    world, fake = fake_world
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("done", ["sh", "-c", "exit 0"]))
    drive_until(loop, job.id, "Succeeded")
    n = len(events(ctx, job.id))
    fake.set_state(job.uid, "Running", reason="Zombie", message="?")
    loop.reconciler.sync()
    assert job_row(ctx, job.id).phase == "Succeeded" and len(events(ctx, job.id)) == n


def test_waiting_reason_follows_the_backend(fake_world):
    world, fake = fake_world
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    blocker = jobs.submit_job(ctx, world.alice, spec("blocker", ["sleep", "60"], resources={"nvidia.com/gpu": 4}))
    drive_until(loop, blocker.id, "Running")
    waiting = jobs.submit_job(ctx, world.bob, spec("waiting", ["sleep", "60"], resources={"nvidia.com/gpu": 1}))
    loop.step()
    text = "waiting for 1 × nvidia.com/gpu; 0 × nvidia.com/gpu free; no estimate of its start"
    row = job_row(ctx, waiting.id)
    assert (row.reason, row.reason_code) == (text, "placement.waiting_unbounded")
    assert jobs.get_job(ctx, world.bob, waiting.id).reason == text


def test_sync_reads_every_change_in_batches_and_ignores_strangers(fake_world):
    world, fake = fake_world
    ctx = world.ctx
    ids = [jobs.submit_job(ctx, world.alice, spec(f"b-{i}", ["sh", "-c", "exit 0"])).id for i in range(5)]
    fake.create(workload(uid="stranger"))  # a workload Crater's DB does not know (another tool, a leftover)
    for _ in range(3):
        fake.tick()
    rec = Reconciler(ctx)
    assert rec.sync(batch=2) >= 6
    assert all(job_row(ctx, i).phase == "Succeeded" for i in ids)
    assert rec.sync() == 0, "nothing new"


def test_cancel_through_the_fake(fake_world):
    world, fake = fake_world
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("stop", ["sleep", "60"]))
    drive_until(loop, job.id, "Running")
    jobs.cancel_job(ctx, world.alice, job.id)
    row = drive_until(loop, job.id, "Cancelled")
    assert row.exit_code == 143 and "cancelled by alice" in row.reason


def test_long_backend_codes_are_kept_on_the_job_and_its_events():
    """A backend status code as long as the local backend's longest (``local.started_isolated_with_devices``, 35
    characters) stays a code, so the job's reason and its event read in the viewer's language."""
    from datetime import datetime, timezone

    from crater_app.cluster.base import Placement, WorkloadStatus
    from crater_app.domain.jobs import JobPhase
    from crater_app.services.reconcile import status_reason

    code = "local.started_isolated_with_devices"
    status = WorkloadStatus(uid="u", phase=JobPhase.RUNNING, raw_state="Running", reason="Started",
                            message="started on node1", placements=(Placement("main", 0, "node1", (0,)),),
                            started_at=datetime.now(timezone.utc), code=code, args={"node": "node1", "devices": "0"})
    assert status_reason(status, {}) == ("started on node1", code, {"node": "node1", "devices": "0"})
    too_long = WorkloadStatus(**{**status.__dict__, "code": "x." + "y" * 63})
    assert status_reason(too_long, {})[1:] == ("", {})  # wider than jobs.reason_code: the text alone


def test_a_new_leader_ends_a_stopping_job_the_backend_does_not_know_only_once_it_has_settled(clock, make_ctx):
    """A job cancelled while its create is still on its way from a web worker is Stopping and unknown to the
    backend: a leader taking over then must not end it (the create may land a moment later and run untracked);
    the periodic repair ends it once REPAIR_GRACE_S has passed and the backend still lacks it."""
    fake = FakeBackend(gpu_devices(4))
    world = populate(make_ctx(backend=fake))
    ctx = world.ctx
    fake.create = lambda workload: None  # the hand-over has not landed yet
    job = jobs.submit_job(ctx, world.alice, spec("in-flight", ["sleep", "60"]))
    jobs.cancel_job(ctx, world.alice, job.id)
    assert job_row(ctx, job.id).phase == "Stopping" and fake.status(job.uid) is None
    loop = LeaderLoop(ctx)
    loop.step()  # takes over: its repair leaves the young job alone
    assert job_row(ctx, job.id).phase == "Stopping"
    clock.advance(seconds=LeaderLoop.REPAIR_GRACE_S + 1)
    loop._repair_at = -1e18
    loop.step()
    row = job_row(ctx, job.id)
    assert (row.phase, row.reason_code) == ("Cancelled", "job.lost_stopping")


def test_a_job_whose_create_failed_reaches_the_backend_with_the_periodic_repair(clock, make_ctx):
    """An admitted job whose hand-over to the backend failed (the backend was unreachable) is not left Queued until
    the next change of leader: the leader's periodic repair hands it over again once it is REPAIR_GRACE_S old, and
    a job younger than that is left alone (it may be on its way)."""
    fake = FakeBackend(gpu_devices(4))
    world = populate(make_ctx(backend=fake))
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    loop.step()  # leader now; its take-over repair has run
    real_create = fake.create

    def unreachable(workload):
        raise RuntimeError("backend unreachable")

    fake.create = unreachable
    job = jobs.submit_job(ctx, world.alice, spec("lost-create", ["sleep", "60"]))
    fake.create = real_create
    assert fake.status(job.uid) is None and job_row(ctx, job.id).phase == "Queued"
    loop._repair_at = -1e18  # due now, but the job is younger than the grace
    loop.step()
    assert fake.status(job.uid) is None, "a job younger than the grace is left alone"
    clock.advance(seconds=LeaderLoop.REPAIR_GRACE_S + 1)
    loop._repair_at = -1e18
    loop.step()
    assert fake.status(job.uid) is not None
    assert "Resubmitted" in [e.reason for e in events(ctx, job.id)]
    drive_until(loop, job.id, "Running")


def test_a_gang_that_starts_again_says_so_on_its_timeline(fake_world):
    """restart_policy ``restart``: the phase stays Running while the gang starts again; the restart is an event."""
    world, fake = fake_world
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, {
        "name": "flaky", "tasks": [{"name": "worker", "replicas": 2, "command": ["sh", "-c", "exit 4"]}],
        "restart_policy": "restart", "max_retry": 1})
    row = drive_until(loop, job.id, "Failed")
    restarts = [e for e in events(ctx, job.id) if e.reason in ("Restarting", "Restarted")]
    assert restarts and all(e.phase == "Running" for e in restarts)
    assert any(e.code == "replicas.restarted" and e.args["restart"] == 1 and e.args["max_retry"] == 1
               for e in restarts)
    assert row.phase == "Failed"


def test_a_workload_without_a_job_row_is_reported_once_and_left_running(fake_world, caplog):
    """An object without a row (a restored database, another Crater on the same namespace): reported by the repair,
    not stopped."""
    world, fake = fake_world
    loop = LeaderLoop(world.ctx)
    stray = workload("sleep 60")
    fake.create(stray)
    fake.tick()
    with caplog.at_level("WARNING", logger="crater_app.services.reconcile"):
        loop.reconciler.repair()
        loop.reconciler.repair()
    reports = [r for r in caplog.records if "without a job row" in r.getMessage()]
    assert len(reports) == 1 and stray.uid in reports[0].getMessage()
    assert fake.status(stray.uid).phase == "Running"


def test_a_job_that_succeeded_without_a_start_seen_does_not_stay_queued(fake_world):
    """A backend that brings the end before any start (a Job's Completed before its pods' events): the job is
    Succeeded, with a Running step at its end, not left Queued."""
    world, fake = fake_world
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("quick", ["sleep", "60"]))
    assert job_row(ctx, job.id).phase == "Queued" and fake.status(job.uid).started_at is None
    fake.set_state(job.uid, "Succeeded", reason="Completed", message="completed")  # before any placement
    row = drive_until(loop, job.id, "Succeeded")
    assert row.started_at is not None and row.finished_at is not None
    assert [e.phase for e in events(ctx, job.id)][-2:] == ["Running", "Succeeded"]
