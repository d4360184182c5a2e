"""Restarts of the web process: jobs survive and are re-adopted, or are marked Failed with the reason; the
reconciler repairs a crash between the job's commit and the backend's create."""

from __future__ import annotations

import os
import signal

import pytest
from sqlalchemy import func
from sqlmodel import select

from crater_app.cluster.local import LocalBackend
from crater_app.db.models import Job
from crater_app.services import jobs
from crater_app.services.reconcile import LeaderLoop, Reconciler
from tests.conftest import gpu_devices, populate
from tests.helpers import backend_pid, drive_until, events, job_row, process_gone, spec, wait_for

pytestmark = pytest.mark.local_backend  # re-adoption of real processes after a restart


def _crash(ctx, loop) -> None:
    """Drop a process's Crater objects without any clean shutdown (no lease release, no cancel)."""
    loop.ctx = None
    ctx.engine.dispose()
    ctx.backend._conn.close()
    ctx.backend._supervisor.children.clear()


def test_running_job_is_readopted_after_a_restart(make_ctx, tmp_path):
    data = tmp_path / "data"
    ctx1 = make_ctx(data_dir=data, lease_ttl_s=0.3)
    world = populate(ctx1)
    loop1 = LeaderLoop(ctx1)
    job = jobs.submit_job(ctx1, world.alice, spec("survivor", ["sh", "-c", "sleep 1.5; echo finished; exit 0"]))
    drive_until(loop1, job.id, "Running")
    pid = backend_pid(ctx1.backend, job.uid)
    _crash(ctx1, loop1)
    del ctx1, loop1

    ctx2 = make_ctx(data_dir=data, lease_ttl_s=0.3)
    loop2 = LeaderLoop(ctx2)
    wait_for(lambda: loop2.leader, 3, step=loop2.step, what="the new process to take the lease over")
    assert job_row(ctx2, job.id).phase == "Running", "re-adopted, not failed"
    assert not process_gone(pid), "the job kept running across the restart"
    row = drive_until(loop2, job.id, "Succeeded", timeout=10)
    assert row.exit_code == 0
    assert jobs.job_logs(ctx2, world.alice, job.id) == "finished\n"
    reasons = [e.reason for e in events(ctx2, job.id)]
    assert reasons.index("Started") < reasons.index("Adopted") < reasons.index("Completed"), reasons
    assert loop2.holder in next(e.message for e in events(ctx2, job.id) if e.reason == "Adopted")


def test_readopted_job_keeps_its_exit_code(make_ctx, tmp_path):
    data = tmp_path / "data"
    ctx1 = make_ctx(data_dir=data, lease_ttl_s=0.3)
    world = populate(ctx1)
    loop1 = LeaderLoop(ctx1)
    job = jobs.submit_job(ctx1, world.alice, spec("exit5", ["sh", "-c", "sleep 1; exit 5"]))
    drive_until(loop1, job.id, "Running")
    _crash(ctx1, loop1)

    ctx2 = make_ctx(data_dir=data, lease_ttl_s=0.3)
    row = drive_until(LeaderLoop(ctx2), job.id, "Failed", timeout=10)
    assert row.exit_code == 5 and "exited with code 5" in row.reason


def test_job_killed_while_crater_was_down_is_failed_with_process_lost(make_ctx, tmp_path):
    data = tmp_path / "data"
    ctx1 = make_ctx(data_dir=data, lease_ttl_s=0.3)
    world = populate(ctx1)
    loop1 = LeaderLoop(ctx1)
    job = jobs.submit_job(ctx1, world.alice, spec("victim", ["sleep", "60"], resources={"nvidia.com/gpu": 2}))
    drive_until(loop1, job.id, "Running")
    pid = backend_pid(ctx1.backend, job.uid)
    _crash(ctx1, loop1)
    os.killpg(pid, signal.SIGKILL)  # the machine's OOM killer, an operator, ...
    wait_for(lambda: process_gone(pid), 3, what="the job to die")

    ctx2 = make_ctx(data_dir=data, lease_ttl_s=0.3)
    loop2 = LeaderLoop(ctx2)
    row = drive_until(loop2, job.id, "Failed", timeout=5)
    assert row.exit_code is None and row.finished_at is not None
    assert "Crater was not running" in row.reason
    assert events(ctx2, job.id)[-1].reason == "ProcessLost"
    assert ctx2.backend.inventory()[0].allocations == {}, "its devices are free again"
    follower = jobs.submit_job(ctx2, world.alice, spec("next", ["sh", "-c", "exit 0"], resources={"nvidia.com/gpu": 4}))
    assert drive_until(loop2, follower.id, "Succeeded").devices == [0, 1, 2, 3]


class CrashingBackend(LocalBackend):
    """A local backend whose process dies right after the job row is committed (before create)."""

    def create(self, workload):
        raise RuntimeError("crashed before the backend heard of the job")


def test_crash_between_commit_and_create_is_repaired(make_ctx, tmp_path):
    data = tmp_path / "data"
    broken = make_ctx(data_dir=data, backend=CrashingBackend(data, devices=gpu_devices(4)))
    world = populate(broken)
    # the job is written before the hand-over fails: the submission answers it (a retry would duplicate it)
    submitted = jobs.submit_job(broken, world.alice, spec("orphan", ["sh", "-c", "echo repaired"]))
    assert submitted.phase == "Queued"
    with broken.session() as s:
        [job] = s.exec(select(Job)).all()
    assert job.phase == "Queued" and broken.backend.status(job.uid) is None

    ctx = make_ctx(data_dir=data)
    assert Reconciler(ctx).repair() == 1
    assert ctx.backend.status(job.uid).raw_state == "Pending", "handed to the backend with the same uid"
    assert Reconciler(ctx).repair() == 0, "repair is idempotent"
    row = drive_until(LeaderLoop(ctx), job.id, "Succeeded")
    assert row.uid == job.uid
    assert "Resubmitted" in [e.reason for e in events(ctx, job.id)]
    assert jobs.job_logs(ctx, world.alice, job.id) == "repaired\n"
    with ctx.session() as s:
        assert s.exec(select(func.count()).select_from(Job)).one() == 1, "repaired, never a second job"


def test_a_new_leader_repairs_on_takeover(make_ctx, tmp_path):
    data = tmp_path / "data"
    ctx = make_ctx(data_dir=data)
    world = populate(ctx)
    job = jobs.submit_job(ctx, world.alice, spec("lost", ["sh", "-c", "exit 0"]))
    with ctx.backend._tx() as conn:  # the backend's state file lost the row (restored from an old backup)
        conn.execute("DELETE FROM workloads WHERE uid = ?", (job.uid,))
    assert drive_until(LeaderLoop(ctx), job.id, "Succeeded").exit_code == 0


def test_running_job_unknown_to_the_backend_is_failed(make_ctx, tmp_path):
    ctx = make_ctx()
    world = populate(ctx)
    loop = LeaderLoop(ctx)
    job = jobs.submit_job(ctx, world.alice, spec("gone", ["sleep", "60"]))
    drive_until(loop, job.id, "Running")
    pid = backend_pid(ctx.backend, job.uid)
    os.killpg(pid, signal.SIGKILL)
    with ctx.backend._tx() as conn:
        conn.execute("DELETE FROM workloads WHERE uid = ?", (job.uid,))
    assert Reconciler(ctx).repair() == 1
    row = job_row(ctx, job.id)
    assert row.phase == "Failed" and row.reason == "the backend lost this job" and row.finished_at is not None
    assert events(ctx, job.id)[-1].reason == "Lost"
