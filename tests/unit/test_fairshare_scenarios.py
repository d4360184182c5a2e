"""Fair share across three projects on a contended machine, as table-driven scenarios.

Each scenario is a machine (8 devices by default), three projects ``a``/``b``/``c`` (deserved 4/2/2 unless the
scenario says otherwise) and a sequence of steps. A step submits or finishes jobs, then runs one admission pass
(:func:`decide`) and applies its plan the way the services do (admitted jobs start, victims stop). After each
step the table gives the expected devices per project and the expected preemptions ``(victim, beneficiary)`` in
order, and optionally the hold codes of given jobs. Every step also checks that the machine is never over-admitted
and that a second pass on the result changes nothing (the decision is stable, no flapping).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone

import pytest

from crater_app.domain.admission import Demand, ProjectQuota, decide
from crater_app.domain.quota import model_key

GPU = "nvidia.com/gpu"
A100 = model_key(GPU, "A100")
H100 = model_key(GPU, "H100")
T0 = datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc)
PROJECTS = {"a": 1, "b": 2, "c": 3}
NAMES = {v: k for k, v in PROJECTS.items()}


@dataclass(frozen=True)
class Submit:
    """Submit jobs ``keys`` (``"c1-c8"`` expands to c1..c8) of ``project``, each asking ``gpus`` devices."""

    keys: str
    project: str
    gpus: int
    priority: int = 0
    preemptible: bool = False
    lock: bool = False
    model: str | None = None


@dataclass(frozen=True)
class Finish:
    """Jobs ``keys`` end (they stop holding their devices)."""

    keys: str


@dataclass(frozen=True)
class Step:
    events: tuple
    alloc: dict  # project -> devices admitted after the step
    preempt: list = field(default_factory=list)  # [(victim, beneficiary)] in plan order
    holds: dict = field(default_factory=dict)  # job -> expected hold code
    alloc_key: str = GPU


@dataclass(frozen=True)
class Scenario:
    name: str
    steps: list
    quotas: dict = field(default_factory=dict)  # project -> ProjectQuota overrides (guarantee/deserved/capability)
    capacity: dict = field(default_factory=lambda: {GPU: 8})


def _expand(keys: str) -> list[str]:
    if "-" not in keys:
        return keys.split()
    first, last = keys.split("-")
    prefix = first.rstrip("0123456789")
    return [f"{prefix}{i}" for i in range(int(first[len(prefix):]), int(last[len(prefix):]) + 1)]


def _quotas(overrides: dict) -> dict[int, ProjectQuota]:
    deserved = {"a": 4, "b": 2, "c": 2}
    out = {}
    for name, pid in PROJECTS.items():
        spec = {"deserved": {GPU: deserved[name]}} | overrides.get(name, {})
        out[pid] = ProjectQuota(pid, name, **spec)
    return out


SCENARIOS = [
    Scenario("lend idle devices, then reclaim most recent first", [
        Step((Submit("c1-c8", "c", 1, preemptible=True),), {"a": 0, "b": 0, "c": 8}),
        Step((Submit("a1", "a", 4),), {"a": 4, "b": 0, "c": 4},
             [("c8", "a1"), ("c7", "a1"), ("c6", "a1"), ("c5", "a1")]),
        Step((Submit("b1", "b", 2),), {"a": 4, "b": 2, "c": 2}, [("c4", "b1"), ("c3", "b1")]),
        # b is at its deserved share: a further job of b waits, nothing more is reclaimed from c (at deserved).
        Step((Submit("b2", "b", 1),), {"a": 4, "b": 2, "c": 2}, holds={"b2": "capacity"}),
        Step((Finish("a1"),), {"a": 0, "b": 3, "c": 2}),
    ]),
    Scenario("lowest priority first, then most recent", [
        Step((Submit("hi", "c", 2, priority=10, preemptible=True), Submit("lo1", "c", 2, preemptible=True),
              Submit("lo2", "c", 2, preemptible=True), Submit("mid", "c", 2, priority=5, preemptible=True)),
             {"a": 0, "b": 0, "c": 8}),
        Step((Submit("a1", "a", 4),), {"a": 4, "b": 0, "c": 4}, [("lo2", "a1"), ("lo1", "a1")]),
        Step((Submit("b1", "b", 2),), {"a": 4, "b": 2, "c": 2}, [("mid", "b1")]),
    ]),
    Scenario("non-preemptible jobs are never stopped", [
        Step((Submit("c1-c6", "c", 1), Submit("p1-p2", "c", 1, preemptible=True)), {"a": 0, "b": 0, "c": 8}),
        Step((Submit("a1", "a", 4),), {"a": 0, "b": 0, "c": 8}, holds={"a1": "fairshare"}),
        Step((Finish("c1"),), {"a": 0, "b": 0, "c": 7}, holds={"a1": "fairshare"}),
        Step((Finish("c2"),), {"a": 4, "b": 0, "c": 4}, [("p2", "a1"), ("p1", "a1")]),
    ]),
    Scenario("a guarantee is not lent", [
        Step((Submit("c1-c8", "c", 1, preemptible=True),), {"a": 0, "b": 0, "c": 6},
             holds={"c7": "capacity", "c8": "queue"}),
        Step((Submit("b1", "b", 2),), {"a": 0, "b": 2, "c": 6}),
        # b's guarantee is now in use: c7 may take the rest of the machine.
        Step((Finish("b1"),), {"a": 0, "b": 0, "c": 6}, holds={"c7": "capacity"}),
    ], quotas={"b": {"guarantee": {GPU: 2}, "deserved": {GPU: 2}}}),
    Scenario("reclaim_lock is respected", [
        Step((Submit("c1-c4", "c", 1, preemptible=True), Submit("c5-c8", "c", 1, preemptible=True, lock=True)),
             {"a": 0, "b": 0, "c": 8}),
        Step((Submit("a1", "a", 4),), {"a": 4, "b": 0, "c": 4},
             [("c4", "a1"), ("c3", "a1"), ("c2", "a1"), ("c1", "a1")]),
        Step((Submit("b1", "b", 1),), {"a": 4, "b": 0, "c": 4}, holds={"b1": "fairshare"}),
    ]),
    Scenario("capability is a ceiling even on an idle machine", [
        Step((Submit("c1-c8", "c", 1),), {"a": 0, "b": 0, "c": 5},
             holds={"c6": "quota", "c7": "quota", "c8": "quota"}),
        Step((Submit("a1", "a", 3),), {"a": 3, "b": 0, "c": 5}),
        Step((Finish("c1 c2"),), {"a": 3, "b": 0, "c": 5}),
    ], quotas={"c": {"deserved": {GPU: 2}, "capability": {GPU: 5}}}),
    Scenario("per-model capacity: 4 × A100 + 4 × H100", [
        Step((Submit("ca1-ca4", "c", 1, preemptible=True, model="A100"),
              Submit("ch1-ch2", "c", 1, preemptible=True, model="H100")), {"a": 0, "b": 0, "c": 6}),
        Step((Submit("ah", "a", 2, model="H100"),), {"a": 2, "b": 0, "c": 6}),
        Step((Submit("aa", "a", 2, model="A100"),), {"a": 4, "b": 0, "c": 4}, [("ca4", "aa"), ("ca3", "aa")]),
        Step((Submit("bh", "b", 1, model="H100"),), {"a": 4, "b": 1, "c": 3}, [("ch2", "bh")]),
        # No A100 is free and c is at its deserved share: a model-specific job waits on the model.
        Step((Submit("b2", "b", 1, model="A100"),), {"a": 4, "b": 1, "c": 3}, holds={"b2": "fairshare"}),
    ], capacity={GPU: 8, A100: 4, H100: 4}),
    Scenario("strict order inside a project, other projects go on", [
        Step((Submit("c1-c4", "c", 1),), {"a": 0, "b": 0, "c": 4}),
        Step((Submit("big", "a", 6, priority=5), Submit("small", "a", 1)), {"a": 0, "b": 0, "c": 4},
             holds={"big": "capacity", "small": "queue"}),
        Step((Submit("b1", "b", 2),), {"a": 0, "b": 2, "c": 4}, holds={"big": "capacity", "small": "queue"}),
        Step((Finish("c1-c4"),), {"a": 6, "b": 2, "c": 0}, holds={"small": "capacity"}),
    ]),
    Scenario("the project furthest below its deserved share goes first", [
        Step((Submit("c1-c4", "c", 1), Submit("a1-a3", "a", 1)), {"a": 3, "b": 0, "c": 4}),
        # One device left: b (share 0) goes before a (share 3/4), though a's job is older and ranks higher.
        Step((Submit("a4", "a", 1, priority=100), Submit("b1", "b", 1)), {"a": 3, "b": 1, "c": 4},
             holds={"a4": "fairshare"}),
    ]),
    Scenario("a victim project is never brought below its deserved share", [
        Step((Submit("a1-a3", "a", 1), Submit("b1", "b", 2), Submit("c1", "c", 3, preemptible=True)),
             {"a": 3, "b": 2, "c": 3}),
        # c holds 3 with 2 deserved, but its only job is 3 devices: stopping it would leave c at 0.
        Step((Submit("a4", "a", 1),), {"a": 3, "b": 2, "c": 3}, holds={"a4": "fairshare"}),
        Step((Finish("c1"), Submit("c2", "c", 2, preemptible=True), Submit("c3", "c", 1, preemptible=True)),
             {"a": 4, "b": 2, "c": 2}, holds={"c3": "capacity"}),
    ]),
    Scenario("a borrowing project is reclaimed on cpu when cpu is deserved", [
        Step((Submit("c1-c2", "c", 0, preemptible=True),), {"a": 0, "b": 0, "c": 32_000}, alloc_key="cpu"),
        Step((Submit("a1", "a", 0),), {"a": 16_000, "b": 0, "c": 16_000}, [("c2", "a1")], alloc_key="cpu"),
    ], quotas={"a": {"deserved": {"cpu": 16_000}}, "c": {"deserved": {"cpu": 8_000}}},
        capacity={GPU: 8, "cpu": 32_000}),
]


class _Machine:
    """The jobs of one scenario and what the services would do with a plan."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.quotas = _quotas(scenario.quotas)
        self.jobs: dict[str, Demand] = {}
        self.seq = 0

    def submit(self, event: Submit) -> None:
        for key in _expand(event.keys):
            self.seq += 1
            usage = {GPU: event.gpus} if event.gpus else {"cpu": 16_000}
            if event.model:
                usage[model_key(GPU, event.model)] = event.gpus
            self.jobs[key] = Demand(
                key, PROJECTS[event.project], 100 + self.seq % 3, event.priority, T0 + timedelta(minutes=self.seq),
                usage, preemptible=event.preemptible, reclaim_lock=event.lock,
            )

    def finish(self, event: Finish) -> None:
        for key in _expand(event.keys):
            assert self.jobs.pop(key).admitted, f"{key} finished but was never admitted"

    def decide(self):
        return decide(list(self.jobs.values()), self.quotas, {}, {}, self.scenario.capacity)

    def apply(self, plan) -> None:
        for preemption in plan.preempt:
            del self.jobs[preemption.victim]
        for key in plan.admit:
            self.jobs[key] = replace(self.jobs[key], admitted=True)

    def alloc(self, key: str) -> dict[str, int]:
        out = dict.fromkeys(PROJECTS, 0)
        for job in self.jobs.values():
            if job.admitted:
                out[NAMES[job.project_id]] += job.usage.get(key, 0)
        return out


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(scenario: Scenario):
    machine = _Machine(scenario)
    for number, step in enumerate(scenario.steps, 1):
        for event in step.events:
            machine.submit(event) if isinstance(event, Submit) else machine.finish(event)
        plan = machine.decide()
        assert [(p.victim, p.beneficiary) for p in plan.preempt] == step.preempt, f"step {number}: preemptions"
        for victim in (p.victim for p in plan.preempt):
            job = machine.jobs[victim]
            assert job.admitted and job.preemptible and not job.reclaim_lock
        machine.apply(plan)
        assert machine.alloc(step.alloc_key) == step.alloc, f"step {number}: allocation"
        for job, code in step.holds.items():
            assert plan.hold[job].code == code, f"step {number}: {job} {plan.hold[job].sentence}"
        held = {k for k, j in machine.jobs.items() if not j.admitted}
        assert set(plan.hold) == held, f"step {number}: every held job has a reason"
        for key, limit in scenario.capacity.items():
            assert sum(j.usage.get(key, 0) for j in machine.jobs.values() if j.admitted) <= limit
        again = machine.decide()
        assert again.admit == [] and again.preempt == [], f"step {number}: a second pass changes nothing"
        assert {k: h.code for k, h in again.hold.items()} == {k: h.code for k, h in plan.hold.items()}


def test_at_least_eight_scenarios():
    assert len(SCENARIOS) >= 8
