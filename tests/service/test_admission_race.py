"""Admission cannot over-admit under concurrency: 200 concurrent submissions from several replicas (ServiceContexts
over the same database, each with its own group commit and writer lock) plus the leader loop admitting held jobs
as others finish, against a project capability of 8 GPUs - on PostgreSQL (row lock) and on SQLite
(``BEGIN IMMEDIATE``). And under fair share, where every project's usage is read against the machine's capacity,
two submissions into different projects cannot both take the machine's last device (the machine-wide lock).

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
from crater_app.db.queries import admission as admission_queries
from crater_app.services import identity, jobs, projects, quotas
from crater_app.services.admission import admission_round
from crater_app.services.reconcile import LeaderLoop, Reconciler
from tests.conftest import gpu_devices, populate
from tests.fakes import FakeBackend
from tests.helpers import spec, wait_for

pytestmark = pytest.mark.both_databases  # concurrent admission: row locks (FOR UPDATE) vs SQLite's writer lock

GPU = "nvidia.com/gpu"
CAPABILITY = 8
SUBMISSIONS = 200
REPLICAS = 4


def _admitted_gpus(ctx) -> int:
    """The GPUs of every admitted job (``Queued``/``Running``, and ``Stopping``: it holds its devices until its
    last process has exited)."""
    with ctx.session(read_only=True) as s:
        return s.exec(select(func.coalesce(func.sum(Job.gpus), 0))
                      .where(Job.phase.in_(admission_queries.ACTIVE_PHASES))).one()


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


def _two_deserving_projects(make_ctx, tmp_path):
    """A 1-GPU machine and two projects that each deserve it; two replicas and the members' actors."""
    fake = FakeBackend(gpu_devices(1))
    first = make_ctx(backend=fake, data_dir=tmp_path / "r0")
    world = populate(first)
    for name, user in (("team-a", "alice"), ("team-b", "bob")):
        projects.create_project(first, world.admin, name)
        projects.set_member(first, world.admin, name, user, "member")
        quotas.set_quota(first, world.admin, name, {"deserved": {GPU: 1}})
    second = make_ctx(backend=fake, data_dir=tmp_path / "r1")
    first.identities.clear()
    alice, bob = (identity.authenticate(first, world.tokens[n]) for n in ("alice", "bob"))
    return fake, first, second, alice, bob


def _interleaved(monkeypatch, *calls) -> None:
    """Run ``calls`` in threads, each held right after it read the admitted usage until the other has read it too
    (as a busy machine may interleave two transactions): what the machine-wide lock must make impossible."""
    barrier = threading.Barrier(len(calls), timeout=2)
    read_admitted = admission_queries.read_admitted

    def read_then_wait(*args, **kwargs):
        read_admitted(*args, **kwargs)
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            pass  # the other transaction waits for the lock (or SQLite's writer lock) and cannot read yet

    monkeypatch.setattr(admission_queries, "read_admitted", read_then_wait)
    threads = [threading.Thread(target=call) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)


def _held(ctx) -> list[Job]:
    with ctx.session(read_only=True) as s:
        return list(s.exec(select(Job).where(Job.phase == "Held")).all())


def test_fair_share_submissions_into_two_projects_never_take_the_last_device_twice(make_ctx, tmp_path, monkeypatch):
    """Two replicas submit a job each into two projects at once: one is admitted, the other waits for its share."""
    _fake, first, second, alice, bob = _two_deserving_projects(make_ctx, tmp_path)
    phases: dict[str, str] = {}

    def submit(ctx, actor, project):
        phases[project] = jobs.submit_job(ctx, actor, spec(f"{project}-job", ["sleep", "60"], project=project,
                                                           resources={GPU: 1})).phase

    _interleaved(monkeypatch, lambda: submit(first, alice, "team-a"), lambda: submit(second, bob, "team-b"))
    assert sorted(phases.values()) == ["Held", "Queued"], phases
    assert _admitted_gpus(first) == 1
    [held] = _held(first)
    assert held.reason_code == "fairshare", held.reason  # it waits for its deserved share of the machine


def test_the_admission_round_and_a_submission_never_take_the_last_device_twice(make_ctx, tmp_path, monkeypatch):
    """The leader's admission round (a held job of team-a may start: the GPU was just freed) and a submission into
    team-b on another replica decide at once: one of them gets the GPU. (The new job's priority puts it first in
    the submission's own decision, so that each transaction, alone, would admit its job.)"""
    fake, first, second, alice, bob = _two_deserving_projects(make_ctx, tmp_path)
    running = jobs.submit_job(first, alice, spec("first", ["sleep", "60"], project="team-a", resources={GPU: 1}))
    waiting = jobs.submit_job(first, alice, spec("second", ["sleep", "60"], project="team-a", resources={GPU: 1}))
    assert (running.phase, waiting.phase) == ("Queued", "Held")
    reconciler = Reconciler(first)
    fake.tick()
    reconciler.sync()
    jobs.cancel_job(first, alice, running.id)
    fake.tick()  # its processes have exited
    reconciler.sync()
    assert _admitted_gpus(first) == 0 and [j.id for j in _held(first)] == [waiting.id]
    outcome: dict[str, object] = {}
    _interleaved(
        monkeypatch,
        lambda: outcome.__setitem__("round", admission_round(first).admitted),
        lambda: outcome.__setitem__("submitted", jobs.submit_job(second, bob, spec(
            "b-job", ["sleep", "60"], project="team-b", resources={GPU: 1}, priority=10)).phase))
    assert (outcome["round"], outcome["submitted"]) in (([waiting.id], "Held"), ([], "Queued")), outcome
    assert _admitted_gpus(first) == 1
