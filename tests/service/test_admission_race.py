"""Admission cannot over-admit under concurrency: 200 concurrent submissions from several replicas (ServiceContexts
over the same database, each with its own group commit and writer lock) plus the leader loop admitting held jobs
as others finish, against a project capability of 8 GPUs - on PostgreSQL (row lock) and on SQLite
(``BEGIN IMMEDIATE``).

Checked three ways: a monitor samples the admitted GPUs during the run; the final state; and the most GPUs ever
admitted at once, computed from every job's ``[admitted_at, finished_at)`` interval (a job's room is given to the
next one only after its end was committed, so a correct run never has more than 8 in any instant).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func
from sqlmodel import select

from crater_app.db.models import Job
from crater_app.services import identity, jobs, projects, quotas
from crater_app.services.reconcile import LeaderLoop
from tests.conftest import gpu_devices, populate
from tests.fakes import FakeBackend
from tests.helpers import spec, wait_for

pytestmark = pytest.mark.both_databases  # concurrent admission: row locks (FOR UPDATE) vs SQLite's writer lock

GPU = "nvidia.com/gpu"
CAPABILITY = 8
SUBMISSIONS = 200
REPLICAS = 4


def _admitted_gpus(ctx) -> int:
    with ctx.session(read_only=True) as s:
        return s.exec(select(func.coalesce(func.sum(Job.gpus), 0)).where(Job.phase.in_(("Queued", "Running")))).one()


def _max_overlap(rows) -> int:
    """The most GPUs admitted at one instant, from ``(admitted_at, finished_at, gpus)`` intervals (an end and a
    start at the same instant: the end first)."""
    points = []
    for admitted_at, finished_at, gpus in rows:
        points.append((admitted_at, 1, gpus))
        points.append((finished_at, 0, -gpus))
    level = peak = 0
    for _, _, delta in sorted(points):
        level += delta
        peak = max(peak, level)
    return peak


def test_concurrent_submissions_from_replicas_never_over_admit(make_ctx, tmp_path):
    fake = FakeBackend(gpu_devices(32))  # the machine is not the limit: the project's capability is
    first = make_ctx(backend=fake, data_dir=tmp_path / "r0")
    world = populate(first)
    projects.create_project(first, world.admin, "race")
    names = ["alice", "bob"]
    for name in names:
        projects.set_member(first, world.admin, "race", name, "member")
    quotas.set_quota(first, world.admin, "race", {"capability": {GPU: CAPABILITY}})
    replicas = [first] + [make_ctx(backend=fake, data_dir=tmp_path / f"r{i}") for i in range(1, REPLICAS)]
    first.identities.clear()
    actors = [identity.authenticate(first, world.tokens[n]) for n in names] + [world.admin]

    loops = [LeaderLoop(ctx) for ctx in replicas[:2]]  # two replicas compete for the lease; one leads
    runners = [threading.Thread(target=loop.run, daemon=True) for loop in loops]
    stop = threading.Event()
    peak_seen = [0]

    def monitor():
        while not stop.is_set():
            peak_seen[0] = max(peak_seen[0], _admitted_gpus(first))
            stop.wait(0.005)

    watcher = threading.Thread(target=monitor, daemon=True)
    barrier = threading.Barrier(32)

    def submit(i: int):
        if i < 32:
            barrier.wait()
        gpus = 1 + (i % 3 == 0)  # 1 or 2 devices
        job = jobs.submit_job(replicas[i % REPLICAS], actors[i % len(actors)], spec(
            f"race-{i}", ["sleep", "0.03"], project="race", resources={GPU: gpus}))
        return job.phase

    for t in (*runners, watcher):
        t.start()
    try:
        with ThreadPoolExecutor(max_workers=32) as pool:
            phases = list(pool.map(submit, range(SUBMISSIONS)))
        assert "Held" in phases and "Queued" in phases
        assert _admitted_gpus(first) <= CAPABILITY

        def all_done():
            with first.session(read_only=True) as s:
                left = s.exec(select(func.count()).select_from(Job).where(Job.phase.not_in(("Succeeded",)))).one()
            return left == 0

        wait_for(all_done, timeout=120, interval=0.1, what="every job to succeed")
    finally:
        stop.set()
        for loop in loops:
            loop.stop()
        for t in (*runners, watcher):
            t.join(10)
    with first.session(read_only=True) as s:
        rows = s.exec(select(Job.admitted_at, Job.finished_at, Job.gpus)).all()
    assert len(rows) == SUBMISSIONS and all(a is not None and f is not None and a <= f for a, f, _ in rows)
    assert peak_seen[0] <= CAPABILITY, f"the monitor saw {peak_seen[0]} GPUs admitted at once"
    peak = _max_overlap(rows)
    assert peak <= CAPABILITY, f"{peak} GPUs were admitted at the same time; the capability is {CAPABILITY}"
    assert peak >= CAPABILITY - 1, "the capability was actually used (jobs ran side by side)"
