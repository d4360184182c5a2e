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
    "a job placed ahead in the same round holds its GPU until its bound: a longer one behind the head waits": Case(
        free=(0, 1), running=[],
        queue=[req("a", 1, runtime_min=60), req("head", 2, minute=1), req("long", 1, minute=2, runtime_min=600)],
        placed={"a": (0,)}, codes={"head": "placement.waiting", "long": "placement.queued"}),
    "several pending jobs in one round: only those ending by the shadow time pass the head": Case(
        free=(0, 1, 2, 3), running=[],
        queue=[req("a", 1, runtime_min=30), req("b", 1, minute=1, runtime_min=60), req("head", 4, minute=2),
               req("short", 1, minute=3, runtime_min=20), req("long", 1, minute=4, runtime_min=90),
               req("open", 1, minute=5)],
        placed={"a": (0,), "b": (1,), "short": (2,)},
        codes={"head": "placement.waiting", "long": "placement.queued", "open": "placement.queued"}),
    "an unbounded job placed ahead in the same round leaves the head without an estimate": Case(
        free=(0, 1, 2), running=[((3,), 30)],
        queue=[req("open", 1), req("head", 4, minute=1), req("bounded", 1, minute=2, runtime_min=600),
               req("open-2", 1, minute=3)],
        placed={"open": (0,), "bounded": (1,)},
        codes={"head": "placement.waiting_unbounded", "open-2": "placement.queued_unbounded"}),
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


def test_the_heads_shadow_time_counts_the_jobs_placed_ahead_of_it_in_the_same_round():
    case = CASES["several pending jobs in one round: only those ending by the shadow time pass the head"]
    capacity, running = _node(case)
    decision = place(case.queue, capacity, running, NOW)
    assert decision.reasons["head"] == ("placement.waiting", {
        "request": {GPU: 4}, "free": {GPU: 2}, "expected_at": at(60).isoformat(), "wait": 60 * MIN})
    assert decision.reasons["long"][1]["expected_at"] == at(60).isoformat()


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


# -- admission: a later job of a project passes its blocked head only when it cannot delay it ----------------------

from crater_app.domain.admission import Demand, ProjectQuota, UserLimits, decide, render  # noqa: E402

A100_KEY, H100_KEY = f"{GPU}:{A100}", f"{GPU}:{H100}"


def demand(key, gpus=1, minute=0.0, project=1, user=10, priority=0, ends_min=None, bound_min=None, admitted=False,
           usage=None) -> Demand:
    return Demand(key, project, user, priority, NOW + timedelta(minutes=minute - 60), usage or {GPU: gpus},
                  admitted=admitted, ends_at=None if ends_min is None else at(ends_min),
                  bound_s=None if bound_min is None else int(bound_min * 60))


FAIR = {1: ProjectQuota(1, "vision", deserved={GPU: 2}), 2: ProjectQuota(2, "speech", deserved={GPU: 1})}
QUOTA = {1: ProjectQuota(1, "vision", capability={GPU: 2})}
#: three projects: vision's 2-GPU head borrows (it would take vision above its deserved 2)
THREE = FAIR | {3: ProjectQuota(3, "nlp", deserved={GPU: 2})}
#: vision deserves the head it waits for (an entitled head: ``fairshare``); nlp has a guarantee of 2
ENTITLED = {1: ProjectQuota(1, "vision", deserved={GPU: 4}), 2: ProjectQuota(2, "speech", deserved={GPU: 2}),
            3: ProjectQuota(3, "nlp", guarantee={GPU: 2})}
#: the machine head of a pass: vision's borrowing 2-GPU job, waiting for its own 1-hour job on a 4-GPU machine
#: where speech holds 2 GPUs without a bound
ACROSS = [demand("ra", project=1, ends_min=60, admitted=True), demand("rb", 2, project=2, admitted=True),
          demand("head", 2, 1)]

ADMISSION = {
    # name: (quotas, capacity, demands, admitted keys, {held key: code}, shares)
    "machine: a bounded 1-GPU job starts on the idle GPU ahead of a blocked 2-GPU job": (
        FAIR, {GPU: 2}, [demand("r", project=2, ends_min=14, admitted=True), demand("head", 2, 1),
                         demand("small", 1, 2, bound_min=10)],
        ["small"], {"head": "fairshare"}, {}),
    "machine: an unbounded 1-GPU job waits behind it": (
        FAIR, {GPU: 2}, [demand("r", project=2, ends_min=14, admitted=True), demand("head", 2, 1),
                         demand("small", 1, 2)],
        [], {"head": "fairshare", "small": "queue"}, {}),
    "machine: a job that would end after the shadow time waits": (
        FAIR, {GPU: 2}, [demand("r", project=2, ends_min=14, admitted=True), demand("head", 2, 1),
                         demand("small", 1, 2, bound_min=30)],
        [], {"head": "fairshare", "small": "queue"}, {}),
    "quota: the project's capability is the reservation's pool": (
        QUOTA, {GPU: 8}, [demand("r", ends_min=14, admitted=True), demand("head", 2, 1),
                          demand("short", 1, 2, bound_min=10), demand("long", 1, 3, bound_min=60)],
        ["short"], {"head": "quota", "long": "quota"}, {}),
    "priority: the urgent job is the head, an older one passes it": (
        QUOTA, {GPU: 8}, [demand("r", ends_min=5, admitted=True), demand("old", 1, 0, bound_min=4),
                          demand("urgent", 2, 3, priority=5)],
        ["old"], {"urgent": "quota"}, {}),
    "models: a job of another model takes what the head does not need": (
        FAIR, {GPU: 4, A100_KEY: 2, H100_KEY: 2},
        [demand("r", project=2, usage={GPU: 2, A100_KEY: 2}, ends_min=30, admitted=True),
         demand("head", usage={GPU: 2, A100_KEY: 2}, minute=1), demand("h100", usage={GPU: 1, H100_KEY: 1}, minute=2),
         demand("a100", usage={GPU: 1, A100_KEY: 1}, minute=3)],
        ["h100"], {"head": "fairshare", "a100": "queue"}, {}),
    "cpu and memory: what the head does not need is lent, once": (
        {1: ProjectQuota(1, "vision", deserved={"cpu": 1000})}, {"cpu": 8000, "memory": 64 * GiB},
        [demand("r", project=2, usage={"cpu": 5000, "memory": 8 * GiB}, ends_min=20, admitted=True),
         demand("r2", project=2, usage={"cpu": 1000}, admitted=True),
         demand("head", usage={"cpu": 6000, "memory": 8 * GiB}, minute=1),
         demand("mem", usage={"cpu": 1000, "memory": 40 * GiB}, minute=2),
         demand("cpu", usage={"cpu": 1000, "memory": GiB}, minute=3)],
        ["mem"], {"head": "capacity", "cpu": "queue"}, {}),
    "across projects: an unbounded job of another borrowing project waits for the machine head": (
        THREE, {GPU: 4}, ACROSS + [demand("late", 1, 2, project=2)],
        [], {"head": "capacity", "late": "queue"}, {}),
    "across projects: a job of another project that ends by the shadow time passes": (
        THREE, {GPU: 4}, ACROSS + [demand("late", 1, 2, project=2, bound_min=30)],
        ["late"], {"head": "capacity"}, {}),
    "across projects: a job within its project's deserved share passes a borrowing head": (
        THREE, {GPU: 4}, ACROSS + [demand("nlp", 1, 2, project=3)],
        ["nlp"], {"head": "capacity"}, {}),
    "across projects: an entitled head holds back even a job within its own deserved share": (
        {1: ProjectQuota(1, "vision", deserved={GPU: 4}), 2: ProjectQuota(2, "speech", deserved={GPU: 4})}, {GPU: 3},
        [demand("rb", 2, project=2, ends_min=30, admitted=True), demand("head", 3, 1),
         demand("speech", 1, 2, project=2, user=11)],
        [], {"head": "fairshare", "speech": "queue"}, {}),
    "across projects: a job that would reclaim its deserved share waits for an entitled head too": (
        {1: ProjectQuota(1, "vision", deserved={GPU: 4}), 2: ProjectQuota(2, "speech", deserved={GPU: 2}),
         3: ProjectQuota(3, "nlp")}, {GPU: 4},
        [demand("rn", 3, project=3, ends_min=30, admitted=True), demand("rp", 1, project=3, admitted=True),
         demand("head", 3, 1), demand("speech", 1, 2, project=2)],
        [], {"head": "fairshare", "speech": "queue"}, {}),
    "across projects: what a job takes from its own project's unused guarantee was never the head's": (
        ENTITLED, {GPU: 4}, [demand("rb", 2, project=2, ends_min=30, admitted=True), demand("head", 2, 1),
                             demand("guaranteed", 2, 2, project=3)],
        ["guaranteed"], {"head": "fairshare"}, {}),
    "across projects: a head the empty machine could not hold is no machine head": (
        THREE, {GPU: 4}, [demand("rb", 2, project=2, admitted=True), demand("huge", 8, 1), demand("late", 1, 2, project=2)],
        ["late"], {"huge": "capacity"}, {}),
    "across projects: a head without an estimate holds nobody back": (
        THREE, {GPU: 4}, [demand("ra", project=1, admitted=True), demand("rb", 2, project=2, admitted=True),
                          demand("head", 2, 1), demand("late", 1, 2, project=2)],
        ["late"], {"head": "capacity"}, {}),
    "across projects: behind its own head, a job must not delay the machine head either": (
        {1: ProjectQuota(1, "vision", deserved={GPU: 4}), 2: ProjectQuota(2, "speech", deserved={GPU: 2},
                                                                          capability={GPU: 2})},
        {GPU: 4}, [demand("ra", project=1, ends_min=3, admitted=True), demand("rb", project=2, ends_min=10, admitted=True),
                   demand("vh", 3, 1), demand("sh", 2, 2, project=2), demand("small", 1, 3, project=2, bound_min=5)],
        [], {"vh": "fairshare", "sh": "quota", "small": "queue"}, {}),
    "across projects: behind its own head, a job that ends before both shadow times passes": (
        {1: ProjectQuota(1, "vision", deserved={GPU: 4}), 2: ProjectQuota(2, "speech", deserved={GPU: 2},
                                                                          capability={GPU: 2})},
        {GPU: 4}, [demand("ra", project=1, ends_min=3, admitted=True), demand("rb", project=2, ends_min=10, admitted=True),
                   demand("vh", 3, 1), demand("sh", 2, 2, project=2), demand("small", 1, 3, project=2, bound_min=2)],
        ["small"], {"vh": "fairshare", "sh": "quota"}, {}),
    "hard limits stay: a member over its share waits with its own reason": (
        QUOTA, {GPU: 8}, [demand("r", ends_min=14, admitted=True), demand("head", 2, 1),
                          demand("mine", 1, 2, bound_min=10, user=11)],
        [], {"head": "quota", "mine": "share"}, {(1, 11): {GPU: 0}}),
}


@pytest.mark.parametrize("name", list(ADMISSION))
def test_admission_backfill(name):
    quotas, capacity, demands, admit, codes, shares = ADMISSION[name]
    plan = decide(demands, quotas, shares, {10: UserLimits(), 11: UserLimits()}, capacity, now=NOW)
    assert plan.admit == admit
    assert {k: h.code for k, h in plan.hold.items()} == codes


def test_admission_reasons_name_the_head_and_its_expected_start():
    _, capacity, demands, *_ = ADMISSION["machine: an unbounded 1-GPU job waits behind it"]
    demands = demands + [demand("third", 1, 3)]
    plan = decide(demands, FAIR, {}, {}, capacity, now=NOW)
    head, behind = plan.hold["head"], plan.hold["small"]
    assert (head.args["expected_at"], head.args["wait"]) == (at(14).isoformat(), 14 * MIN)
    assert head.sentence.endswith("Expected start within 14m.")
    assert behind.args | {} == {"project": "vision", "position": 2, "held": 3, "ahead": 1, "blocker": "fairshare",
                                "blocker_id": "head", "blocker_request": {GPU: 2},
                                "expected_at": at(14).isoformat(), "wait": 14 * MIN}
    assert behind.sentence == (
        "Position 2 of 3 in the queue of project vision: behind job #head (2 × nvidia.com/gpu), held by the fair "
        "share; a later job starts first only when it cannot delay that one. Expected start within 14m.")
    zh = i18n.render("zh-CN", "hold.queue", {**behind.args, "blocker": i18n.translate("zh-CN", "holdcode.fairshare")})
    assert "在作业 #head（2 × nvidia.com/gpu，因公平份额挂起）之后" in zh


def test_a_job_held_for_another_projects_head_names_that_head_and_its_project():
    quotas, capacity, demands, *_ = ADMISSION[
        "across projects: an unbounded job of another borrowing project waits for the machine head"]
    hold = decide(demands, quotas, {}, {}, capacity, now=NOW).hold["late"]
    assert hold.args | {} == {"project": "speech", "position": 1, "held": 1, "ahead": 1, "blocker": "capacity",
                              "blocker_id": "head", "blocker_project": "vision", "blocker_request": {GPU: 2},
                              "expected_at": at(60).isoformat(), "wait": 60 * MIN}
    assert hold.sentence == (
        "Position 1 of 1 in the queue of project speech: starting now would delay job #head of project vision "
        "(2 × nvidia.com/gpu, held by the machine capacity), which has the first claim on the machine; a job starts "
        "ahead of it only when it cannot delay it. Expected start within 1h.")
    zh = render("zh-CN", hold.code, hold.args)
    assert zh.startswith("在项目 speech 的队列中排第 1 位（共 1 个）：现在启动会推迟项目 vision 的作业 #head（2 × nvidia.com/gpu，因集群容量挂起）")


def test_admission_backfill_without_a_clock_lends_only_what_the_head_does_not_need():
    _, capacity, demands, *_ = ADMISSION["machine: a bounded 1-GPU job starts on the idle GPU ahead of a blocked 2-GPU job"]
    plan = decide(demands, FAIR, {}, {}, capacity)
    assert plan.admit == [] and plan.hold["small"].code == "queue" and plan.hold["head"].args["expected_at"] is None


def test_admission_backfill_holdings_come_from_the_caller_when_given():
    _, capacity, demands, *_ = ADMISSION["machine: a bounded 1-GPU job starts on the idle GPU ahead of a blocked 2-GPU job"]
    # The caller says the running job ends in 5 minutes only, so a 10-minute job would delay the head.
    holdings = {None: [Holding({GPU: 1}, at(5), "r")], 2: [Holding({GPU: 1}, at(5), "r")]}
    plan = decide(demands, FAIR, {}, {}, capacity, now=NOW, holdings=holdings)
    assert plan.admit == [] and plan.hold["head"].args["wait"] == 5 * MIN


def test_admission_reserves_only_for_the_projects_asked_for():
    _, capacity, demands, *_ = ADMISSION["machine: a bounded 1-GPU job starts on the idle GPU ahead of a blocked 2-GPU job"]
    plan = decide(demands, FAIR, {}, {}, capacity, now=NOW, reserve_for={2})
    assert plan.admit == [] and plan.hold["small"].code == "queue", "no reservation for project 1: it waits in order"
    assert decide(demands, FAIR, {}, {}, capacity, now=NOW, reserve_for={1}).admit == ["small"]
