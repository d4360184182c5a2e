"""Benchmark: pure admission decisions per second (crater_app.domain.admission.decide), no database, no server.

The population: 1,000 projects, 10,000 users, 100,000 jobs built in memory; as in a database that has
run for a while most jobs are finished (they play no part in admission and are never passed to ``decide``),
``--admitted`` (2,000) hold devices and ``--held`` (300) wait. The machine has 4,000 devices of two models
(A100, H100), so the held jobs meet every rule: capability, member shares, session limits, approval, capacity
with reserved guarantees, fair-share reclaim of preemptible jobs, strict per-project queues.

Three measurements, each timed over ``--rounds`` calls of ``decide`` on prebuilt inputs:

- ``full pass``: one call with every admitted and held job, as the reconciler runs it when room appears.
  *Decisions* are counted per held job (each call decides ``--held`` jobs: admit or hold with a reason).
- ``contended``: the same on a full machine where under-deserved projects reclaim from preemptible jobs.
- ``one submission``: one call with the admitted jobs and a single new held job (the submit path); here one
  call is one decision.

Target: >= 2,000 decisions/s for the pure decision. ``pure_decisions()`` returns the figures as a dict
for ``bench/admission.py`` (end to end) to print next to its own.

    .venv/bin/python bench/admission_pure.py [--rounds 50] [--admitted 2000] [--held 300]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crater_app.domain.admission import Demand, ProjectQuota, UserLimits, decide  # noqa: E402
from crater_app.domain.quota import model_key  # noqa: E402

GPU = "nvidia.com/gpu"
MODELS = ("NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3")
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
GiB = 1024**3


def population(projects: int = 1000, users: int = 10_000, jobs: int = 100_000, admitted: int = 2000,
               held: int = 300, devices: int = 4000, seed: int = 7):
    """Build (finished, admitted, held, quotas, shares, limits, capacity); jobs are :class:`Demand`s."""
    rnd = random.Random(seed)
    per_model = devices // len(MODELS)
    capacity = {GPU: devices, "cpu": devices * 16_000, "memory": devices * 128 * GiB}
    capacity |= {model_key(GPU, m): per_model for m in MODELS}
    quotas = {}
    for p in range(1, projects + 1):
        deserved = rnd.choice([0, 1, 2, 4, 8])
        quotas[p] = ProjectQuota(
            p, f"project-{p}", guarantee={GPU: 1} if p % 10 == 0 and deserved else {},
            deserved={GPU: deserved} if deserved else {}, capability={GPU: max(deserved * 3, 4), "cpu": 512_000},
        )
    members = {u: rnd.sample(range(1, projects + 1), rnd.randint(1, 3)) for u in range(1, users + 1)}
    shares = {(p, u): {GPU: 4} for u, ps in members.items() for p in ps if u % 5 == 0}
    limits = {u: UserLimits(max_sessions=2, max_accelerators_per_job=8, max_runtime_s=7 * 86400)
              for u in range(1, users + 1) if u % 2}

    def make(i: int, state: str) -> Demand:
        user = rnd.randint(1, users)
        gpus = rnd.choice([0, 1, 1, 1, 2, 4])
        usage = {"cpu": rnd.choice([2000, 4000, 8000]), "memory": rnd.choice([8, 16, 64]) * GiB}
        if gpus:
            usage[GPU] = gpus
            if rnd.random() < 0.8:
                usage[model_key(GPU, rnd.choice(MODELS))] = gpus
        return Demand(
            i, rnd.choice(members[user]), user, rnd.choice([0, 0, 0, 5, 10]), T0 + timedelta(seconds=i), usage,
            kind="interactive" if rnd.random() < 0.2 else "batch", preemptible=rnd.random() < 0.4,
            reclaim_lock=rnd.random() < 0.05, admitted=state == "admitted",
            approval_pending=state == "held" and gpus >= 4 and rnd.random() < 0.2,
        )

    finished = [make(i, "finished") for i in range(jobs - admitted - held)]
    running = [make(len(finished) + i, "admitted") for i in range(admitted)]
    waiting = [make(len(finished) + admitted + i, "held") for i in range(held)]
    return finished, running, waiting, quotas, shares, limits, capacity


def _time(demands, quotas, shares, limits, capacity, rounds: int) -> tuple[list[float], object]:
    times = []
    plan = None
    for _ in range(rounds):
        start = time.perf_counter()
        plan = decide(demands, quotas, shares, limits, capacity)
        times.append(time.perf_counter() - start)
    return times, plan


def pure_decisions(rounds: int = 50, admitted: int = 2000, held: int = 300) -> dict:
    """Run the three measurements; return ``{name: {"calls", "per_call_ms_median", "per_call_ms_p95",
    "decisions_per_call", "decisions_per_s", "admitted", "held", "preempted"}}`` (decisions/s from the median)."""
    finished, running, waiting, quotas, shares, limits, capacity = population(admitted=admitted, held=held)
    assert len(finished) + len(running) + len(waiting) == 100_000
    out = {}

    def record(name: str, demands: list, decisions: int, capacity_: dict) -> None:
        times, plan = _time(demands, quotas, shares, limits, capacity_, rounds)
        median = statistics.median(times)
        out[name] = {
            "calls": rounds, "per_call_ms_median": median * 1000,
            "per_call_ms_p95": sorted(times)[int(0.95 * (len(times) - 1))] * 1000,
            "decisions_per_call": decisions, "decisions_per_s": decisions / median,
            "admitted": len(plan.admit), "held": len(plan.hold), "preempted": len(plan.preempt),
        }

    record("full pass", running + waiting, len(waiting), capacity)
    # Contended: every device taken by the admitted jobs, so held jobs need reclaiming or wait.
    full = capacity | {key: sum(d.usage.get(key, 0) for d in running) for key in capacity if key.startswith(GPU)}
    record("contended", running + waiting, len(waiting), full)
    record("one submission", running + waiting[:1], 1, capacity)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--admitted", type=int, default=2000)
    ap.add_argument("--held", type=int, default=300)
    args = ap.parse_args()
    print(f"population: 1,000 projects, 10,000 users, 100,000 jobs ({args.admitted:,} admitted, {args.held:,} held, "
          f"the rest finished and not passed to decide); 4,000 devices (2 models); Python "
          f"{sys.version.split()[0]}, load average {os.getloadavg()[0]:.2f}")
    for name, fig in pure_decisions(args.rounds, args.admitted, args.held).items():
        print(f"{name:>15}: {fig['decisions_per_s']:>9,.0f} decisions/s ({fig['decisions_per_call']} per call), "
              f"{fig['per_call_ms_median']:.2f} ms per call median, p95 {fig['per_call_ms_p95']:.2f} ms; "
              f"plan: {fig['admitted']} admitted, {fig['held']} held, {fig['preempted']} preempted")
    print("target: >= 2,000 decisions/s (decisions counted per held job decided)")


if __name__ == "__main__":
    main()
