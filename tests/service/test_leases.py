"""Leader lease: with several processes on one database only one runs the loops; another takes over when the
leader releases the lease or stops renewing it."""

from __future__ import annotations

import threading
import time

import pytest

from crater_app.services import jobs, leases
from crater_app.services.reconcile import LEASE_NAME, LeaderLoop
from tests.conftest import populate
from tests.helpers import drive_until, spec, wait_for, within

pytestmark = pytest.mark.both_databases  # the lease row: insert races (unique key) and expiry under concurrency


def test_only_one_leader_and_takeover_after_release(make_ctx, tmp_path):
    data = tmp_path / "data"
    a, b = LeaderLoop(make_ctx(data_dir=data)), LeaderLoop(make_ctx(data_dir=data))
    a.step()
    b.step()
    assert a.leader and not b.leader
    for _ in range(3):
        a.step()
        b.step()
    assert a.leader and not b.leader, "the holder renews; the other keeps out"
    leases.release(a.ctx, LEASE_NAME, a.holder)
    b.step()
    assert b.leader
    a.step()
    assert not a.leader, "the old leader does not come back while the new one renews"


def test_takeover_after_expiry(clock, make_ctx, tmp_path):
    data = tmp_path / "data"
    a = LeaderLoop(make_ctx(data_dir=data, lease_ttl_s=0.3))
    b = LeaderLoop(make_ctx(data_dir=data, lease_ttl_s=0.3))
    a.step()
    b.step()  # the pinned clock: however long a loaded machine takes between the steps, a's lease holds
    assert a.leader and not b.leader
    clock.advance(0.4)  # a hangs or dies: no renewal
    b.step()
    assert b.leader
    a.step()
    assert not a.leader


def test_lease_functions(make_ctx):
    ctx = make_ctx()
    assert leases.try_acquire(ctx, "x", "one", 10)
    assert leases.try_acquire(ctx, "x", "one", 10), "renewal"
    assert not leases.try_acquire(ctx, "x", "two", 10)
    assert leases.try_acquire(ctx, "y", "two", 10), "leases are per name"
    leases.release(ctx, "x", "two")  # not the holder: no effect
    assert not leases.try_acquire(ctx, "x", "two", 10)
    leases.release(ctx, "x", "one")
    assert leases.try_acquire(ctx, "x", "two", 10)


def test_running_loops_in_threads_have_one_leader_and_fail_over(make_ctx, tmp_path):
    data = tmp_path / "data"
    # A lease that outlives a starved thread on a loaded machine: the failover below is a clean release, not expiry.
    ctxs = [make_ctx(data_dir=data, lease_ttl_s=5.0) for _ in range(3)]
    world = populate(ctxs[0])
    loops = [LeaderLoop(c) for c in ctxs]
    threads = [threading.Thread(target=lp.run, daemon=True) for lp in loops]
    for t in threads:
        t.start()
    try:
        first = wait_for(lambda: [lp for lp in loops if lp.leader], 5, what="a leader")
        assert len(first) == 1
        samples = []
        for _ in range(20):
            samples.append(sum(lp.leader for lp in loops))
            time.sleep(0.02)
        assert max(samples) == 1
        # The followers serve requests; the leader runs the job.
        job = jobs.submit_job(ctxs[2], world.alice, spec("led", ["sh", "-c", "exit 0"]))
        wait_for(lambda: jobs.get_job(ctxs[1], world.alice, job.id).phase == "Succeeded", 10, what="job done")

        old = first[0]
        old.stop()  # clean shutdown releases the lease
        threads[loops.index(old)].join(5)
        t0 = time.monotonic()
        new = wait_for(lambda: [lp for lp in loops if lp.leader and lp is not old], 5, what="a new leader")
        assert len(new) == 1 and time.monotonic() - t0 < within(2)
        job2 = jobs.submit_job(ctxs[0], world.alice, spec("led-again", ["sh", "-c", "exit 0"]))
        wait_for(lambda: jobs.get_job(ctxs[0], world.alice, job2.id).phase == "Succeeded", 10, what="job done")
    finally:
        for lp in loops:
            lp.stop()
        for t in threads:
            t.join(5)


def test_follower_does_not_run_placement(make_ctx, tmp_path):
    data = tmp_path / "data"
    leader_ctx, follower_ctx = make_ctx(data_dir=data), make_ctx(data_dir=data)
    world = populate(leader_ctx)
    leader, follower = LeaderLoop(leader_ctx), LeaderLoop(follower_ctx)
    leader.step()
    job = jobs.submit_job(follower_ctx, world.alice, spec("wait", ["sh", "-c", "exit 0"]))
    for _ in range(5):
        follower.step()
    assert not follower.leader
    assert follower_ctx.backend.status(job.uid).raw_state == "Pending", "only the leader places workloads"
    drive_until(leader, job.id, "Succeeded")
