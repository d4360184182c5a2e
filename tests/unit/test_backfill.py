"""domain.backfill (EASY backfill: shadow time and extra capacity) and its use by domain.placement: a job that fits
now starts ahead of a blocked earlier one only when it cannot delay it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import pytest

from crater_app import i18n
from crater_app.domain import backfill
from crater_app.domain.backfill import Holding, Reservation
from crater_app.domain.placement import Capacity, FreeDevice, Request, Running, place

GPU = "nvidia.com/gpu"
A100, H100 = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
GiB = 1024**3
MIN = 60


def at(minutes: float) -> datetime:
    return NOW + timedelta(minutes=minutes)


# -- the reservation itself ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("need", "free", "holdings", "start_at", "extra"), [
    pytest.param({GPU: 2}, {GPU: 1}, [Holding({GPU: 1}, at(14))], at(14), {},
                 id="one-device-back-in-14-min"),
    pytest.param({GPU: 2}, {GPU: 0}, [Holding({GPU: 1}, at(30)), Holding({GPU: 1}, at(10)), Holding({GPU: 2}, at(20))],
                 at(20), {GPU: 1}, id="ends-taken-in-time-order-with-the-leftover"),
    pytest.param({GPU: 2}, {GPU: 1}, [Holding({GPU: 1}, None)], None, {},
                 id="unbounded-holder-no-estimate"),
    pytest.param({GPU: 2}, {GPU: 1}, [Holding({GPU: 1}, None), Holding({GPU: 1, "cpu": 4000}, at(5))], at(5),
                 {"cpu": 4000}, id="a-bounded-holder-is-enough"),
    pytest.param({GPU: 4, "cpu": 2000}, {GPU: 1, "cpu": 8000}, [Holding({GPU: 2}, None), Holding({GPU: 1}, at(3))],
                 None, {"cpu": 6000}, id="no-estimate-extra-is-what-the-head-does-not-lack"),
    pytest.param({GPU: 1}, {GPU: 1}, [], NOW, {}, id="fits-now"),
    pytest.param({GPU: 1}, {GPU: 0}, [Holding({GPU: 1}, at(-5))], NOW, {},
                 id="overdue-holder-ends-any-moment"),
])
def test_reserve(need, free, holdings, start_at, extra):
    reservation = backfill.reserve(need, free, holdings, NOW)
    assert (reservation.start_at, reservation.extra) == (start_at, extra)


@pytest.mark.parametrize(("reservation", "usage", "ends_at", "may"), [
    pytest.param(Reservation(at(14)), {GPU: 1}, at(10), True, id="ends-before-the-shadow-time"),
    pytest.param(Reservation(at(14)), {GPU: 1}, at(14), True, id="ends-at-the-shadow-time"),
    pytest.param(Reservation(at(14)), {GPU: 1}, at(15), False, id="would-delay-the-head"),
    pytest.param(Reservation(at(14)), {GPU: 1}, None, False, id="unbounded-without-extra"),
    pytest.param(Reservation(at(14), {GPU: 1}), {GPU: 1}, None, True, id="unbounded-onto-extra"),
    pytest.param(Reservation(at(14), {GPU: 1}), {GPU: 2}, at(20), False, id="more-than-the-extra"),
    pytest.param(Reservation(None), {GPU: 1}, at(600), True, id="no-estimate-bounded-ends-first"),
    pytest.param(Reservation(None), {GPU: 1}, None, False, id="no-estimate-unbounded"),
    pytest.param(Reservation(None, {"cpu": 4000}), {"cpu": 2000, "memory": 0}, None, True,
                 id="no-estimate-unbounded-cpu-only-onto-extra"),
])
def test_may_start(reservation, usage, ends_at, may):
    assert backfill.may_start(reservation, usage, ends_at) is may


def test_admit_takes_extra_only_from_jobs_running_past_the_shadow_time():
    reservation = Reservation(at(14), {GPU: 2, "cpu": 1000})
    assert backfill.admit(reservation, {GPU: 1}, at(10)) == reservation
    after = backfill.admit(reservation, {GPU: 1, "cpu": 1000}, None)
    assert after.extra == {GPU: 1} and not backfill.may_start(after, {GPU: 2}, None)


@pytest.mark.parametrize(("own", "user", "default", "bound"), [
    (3600, 7200, 86400, 3600), (None, 7200, 86400, 7200), (None, None, 86400, 86400), (None, None, None, None)])
def test_effective_bound(own, user, default, bound):
    assert backfill.effective_bound(own, user, default) == bound


def test_expected_end_and_wait():
    assert backfill.expected_end(at(-10), 3600, NOW) == at(50)
    assert backfill.expected_end(None, 600, NOW) == at(10), "not started yet: from now"
    assert backfill.expected_end(at(-120), 3600, NOW) == NOW, "past its bound: ends any moment"
    assert backfill.expected_end(at(-10), None, NOW) is None
    assert backfill.wait_s(at(13.5), NOW) == 14 * MIN and backfill.wait_s(NOW, NOW) == MIN


# -- placement on one node: the local backend's queue ----------------------------------------------------------

@dataclass
class Case:
    """A node (free devices, CPU, memory), what runs there (device indices, ends in minutes or None), and the
    queue; ``placed`` what starts (uid -> devices) and ``codes`` the reason code of each waiting request."""

    free: tuple[int, ...]
    running: list[tuple[tuple[int, ...], float | None]]
    queue: list[Request]
    placed: dict[str, tuple[int, ...]]
    codes: dict[str, str]
    models: dict[int, str] = field(default_factory=dict)
    cpu_m: int = 16_000
    memory_bytes: int = 64 * GiB
    running_cpu: int = 0


def req(uid, gpus=0, minute=0.0, priority=0, runtime_min=None, cpu_m=0, mem=0, model=None) -> Request:
    return Request(uid=uid, priority=priority, created_at=NOW + timedelta(seconds=minute * 60), cpu_m=cpu_m,
                   memory_bytes=mem, accelerators={GPU: gpus} if gpus else {}, model=model,
                   max_runtime_s=None if runtime_min is None else int(runtime_min * 60))


CASES = {
    "a bounded 1-GPU job starts on the idle GPU ahead of a blocked 2-GPU job": Case(
        free=(1,), running=[((0,), 14)],
        queue=[req("head", 2), req("small", 1, minute=1, runtime_min=10)],
        placed={"small": (1,)}, codes={"head": "placement.waiting"}),
    "an unbounded 1-GPU job waits: it would hold the GPU the head needs": Case(
        free=(1,), running=[((0,), 14)],
        queue=[req("head", 2), req("small", 1, minute=1)],
        placed={}, codes={"head": "placement.waiting", "small": "placement.queued"}),
    "a bounded job that would end after the shadow time waits": Case(
        free=(1,), running=[((0,), 14)],
        queue=[req("head", 2), req("small", 1, minute=1, runtime_min=20)],
        placed={}, codes={"head": "placement.waiting", "small": "placement.queued"}),
    "a head waiting for an unbounded job has no estimate; a bounded job still goes first": Case(
        free=(1,), running=[((0,), None)],
        queue=[req("head", 2), req("small", 1, minute=1, runtime_min=600), req("open", 1, minute=2)],
        placed={"small": (1,)}, codes={"head": "placement.waiting_unbounded", "open": "placement.queued_unbounded"}),
    "an unbounded job takes only the devices the head leaves at its shadow time": Case(
        free=(2, 3), running=[((0,), 14), ((1,), 14)],
        queue=[req("head", 3), req("open-1", 1, minute=1), req("open-2", 1, minute=2)],
        placed={"open-1": (3,)}, codes={"head": "placement.waiting", "open-2": "placement.queued"}),
    "priority decides the head; the older low-priority job backfills": Case(
        free=(1,), running=[((0,), 5)],
        queue=[req("old-low", 1, runtime_min=4), req("urgent", 2, minute=3, priority=10)],
        placed={"old-low": (1,)}, codes={"urgent": "placement.waiting"}),
    "a job of another model uses a device the head cannot take": Case(
        free=(2,), running=[((0,), 30), ((1,), 30)], models={0: A100, 1: A100, 2: H100},
        queue=[req("head", 2, model=A100), req("h100", 1, minute=1, model=H100)],
        placed={"h100": (2,)}, codes={"head": "placement.waiting"}),
    "a job without a model is not given the head's model device": Case(
        free=(1, 2), running=[((0,), 30)], models={0: A100, 1: A100, 2: H100},
        queue=[req("head", 2, model=A100), req("any", 1, minute=1)],
        placed={"any": (2,)}, codes={"head": "placement.waiting"}),
    "CPU the head does not need is lent to an unbounded CPU job": Case(
        free=(), running=[((0, 1), 30)], cpu_m=8000, running_cpu=0,
        queue=[req("head", 2, cpu_m=4000), req("cpu-job", cpu_m=4000, minute=1), req("cpu-more", cpu_m=1000, minute=2)],
        placed={"cpu-job": ()}, codes={"head": "placement.waiting", "cpu-more": "placement.queued"}),
    "a memory head: a bounded job that ends in time uses the memory meanwhile": Case(
        free=(0, 1), running=[((), 10)], memory_bytes=16 * GiB, running_cpu=0,
        queue=[req("big-mem", mem=32 * GiB), req("short", mem=16 * GiB, minute=1, runtime_min=5)],
        placed={"short": ()}, codes={"big-mem": "placement.waiting"}),
    "nothing is lent when everything fits": Case(
        free=(0, 1), running=[], queue=[req("a", 1), req("b", 1, minute=1)],
        placed={"a": (0,), "b": (1,)}, codes={}),
}


def _node(case: Case) -> tuple[Capacity, list[Running]]:
    def device(i):
        return FreeDevice(i, GPU, case.models.get(i, A100))

    running = []
    for n, (indices, ends) in enumerate(case.running):
        held_mem = 16 * GiB if not indices else 0  # a device-less holder holds memory (the memory case)
        running.append(Running(f"run-{n}", case.running_cpu, held_mem, tuple(device(i) for i in indices),
                               None if ends is None else at(ends)))
    return Capacity(case.cpu_m, case.memory_bytes, tuple(device(i) for i in case.free)), running


@pytest.mark.parametrize("name", list(CASES))
def test_placement_backfill(name):
    case = CASES[name]
    capacity, running = _node(case)
    decision = place(case.queue, capacity, running, NOW)
    assert decision.placed == case.placed
    assert {uid: code for uid, (code, _) in decision.reasons.items()} == case.codes
    assert set(decision.waiting) == set(case.codes)


def test_reasons_name_the_head_what_it_waits_for_and_when():
    capacity, running = _node(CASES["an unbounded 1-GPU job waits: it would hold the GPU the head needs"])
    decision = place([req("head", 2), req("small", 1, minute=1)], capacity, running, NOW)
    code, args = decision.reasons["head"]
    assert args == {"request": {GPU: 2}, "free": {GPU: 1}, "expected_at": at(14).isoformat(), "wait": 14 * MIN}
    assert decision.waiting["head"] == ("waiting for 2 × nvidia.com/gpu; 1 × nvidia.com/gpu free; expected start "
                                        "within 14m")
    code, args = decision.reasons["small"]
    assert args == {"position": 2, "blocker": "head", "blocker_request": {GPU: 2},
                    "expected_at": at(14).isoformat(), "wait": 14 * MIN}
    assert decision.waiting["small"] == "position 2: behind job head (2 × nvidia.com/gpu), expected start within 14m"
    assert i18n.render("zh-CN", f"event.{code}", args) == "排第 2 位：在作业 head（2 × nvidia.com/gpu）之后，预计 14分钟内启动"


def test_without_a_clock_nothing_is_known_to_end_in_time():
    capacity, running = _node(CASES["a bounded 1-GPU job starts on the idle GPU ahead of a blocked 2-GPU job"])
    decision = place([req("head", 2), req("small", 1, minute=1, runtime_min=10)], capacity, running)
    assert decision.placed == {} and decision.reasons["small"][0] == "placement.queued_unbounded"


def test_a_stream_of_short_jobs_never_delays_the_head():
    """Each round lends the idle GPU to a job that ends before the head's shadow time; at that time the head has
    its two devices."""
    capacity, running = _node(CASES["a bounded 1-GPU job starts on the idle GPU ahead of a blocked 2-GPU job"])
    for minute in (0, 4, 8):
        now = at(minute)
        decision = place([req("head", 2), req(f"short-{minute}", 1, minute=minute + 0.5, runtime_min=4)],
                         capacity, running, now)
        assert decision.placed == {f"short-{minute}": (1,)}
    decision = place([req("head", 2), req("late", 1, minute=12.5, runtime_min=4)], capacity, running, at(12))
    assert decision.placed == {}, "it would still run at minute 14, when the head starts"
