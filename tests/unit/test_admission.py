"""domain.admission: the hold reasons with their numbers, refusals, queue positions and no over-admission."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from crater_app.domain.admission import Demand, ProjectQuota, Refusal, UserLimits, decide, never_admissible
from crater_app.domain.quota import model_key

GPU = "nvidia.com/gpu"
A100 = model_key(GPU, "NVIDIA-A100-SXM4-80GB")
T0 = datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc)
GiB = 1024**3


def job(key, project=1, user=10, gpus=1, minute=0, priority=0, admitted=False, **kw) -> Demand:
    usage = kw.pop("usage", None) or ({GPU: gpus} if gpus else {"cpu": 1000})
    return Demand(key, project, user, priority, T0 + timedelta(minutes=minute), usage, admitted=admitted, **kw)


QUOTAS = {1: ProjectQuota(1, "vision", deserved={GPU: 4}, capability={GPU: 6}),
          2: ProjectQuota(2, "speech", deserved={GPU: 4})}
CAPACITY = {GPU: 8, "cpu": 64_000, "memory": 256 * GiB}


# -- never_admissible -------------------------------------------------------------------------------------------

def test_fits_some_day():
    assert never_admissible(job(1, gpus=6), QUOTAS[1], {GPU: 6}, UserLimits(max_accelerators_per_job=6), 3600) is None


def test_over_capability():
    refusal = never_admissible(job(1, gpus=7), QUOTAS[1], {}, UserLimits(), None)
    assert refusal == Refusal("resources.nvidia.com/gpu", "admission.over_capability",
                              {"project": "vision", "request": {GPU: 7}, "limit": {GPU: 6}})
    assert "7 × nvidia.com/gpu" in refusal.sentence and "6 × nvidia.com/gpu" in refusal.sentence
    assert "vision" in refusal.sentence


def test_over_model_capability_names_the_resource_field():
    quota = ProjectQuota(1, "vision", capability={A100: 2})
    refusal = never_admissible(job(1, usage={GPU: 3, A100: 3}), quota, {}, UserLimits(), None)
    assert refusal.field == "resources.nvidia.com/gpu"
    assert "3 × nvidia.com/gpu (NVIDIA-A100-SXM4-80GB)" in refusal.sentence
    assert "2 × nvidia.com/gpu (NVIDIA-A100-SXM4-80GB)" in refusal.sentence


def test_over_member_share():
    refusal = never_admissible(job(1, usage={"memory": 64 * GiB}), QUOTAS[1], {"memory": 32 * GiB}, UserLimits(), None)
    assert refusal.field == "resources.memory"
    assert "64 GiB" in refusal.sentence and "32 GiB" in refusal.sentence and "share" in refusal.sentence
    assert refusal.args["limit"] == {"memory": 32 * GiB}


def test_over_accelerators_per_job_counts_all_accelerator_names_once():
    usage = {GPU: 2, A100: 2, "huawei.com/Ascend910": 1}
    refusal = never_admissible(job(1, usage=usage), QUOTAS[1], {}, UserLimits(max_accelerators_per_job=2), None)
    assert refusal.field == "resources.huawei.com/Ascend910"
    assert "3 accelerators" in refusal.sentence and "limit is 2" in refusal.sentence
    assert refusal.args == {"request": 3, "limit": 2}
    assert never_admissible(job(1, usage={GPU: 2, A100: 2}), QUOTAS[1], {}, UserLimits(max_accelerators_per_job=2),
                            None) is None


def test_a_session_limit_of_zero_refuses_every_session():
    """It used to hold the session forever ("you have 0 sessions; your limit is 0")."""
    refusal = never_admissible(job(1, kind="interactive"), QUOTAS[1], {}, UserLimits(max_sessions=0), None)
    assert refusal == Refusal("kind", "admission.no_sessions", {"limit": 0})
    assert "interactive session" in refusal.sentence and "limit is 0" in refusal.sentence
    assert never_admissible(job(1), QUOTAS[1], {}, UserLimits(max_sessions=0), None) is None, "batch jobs run"
    assert never_admissible(job(1, kind="interactive"), QUOTAS[1], {}, UserLimits(max_sessions=1), None) is None


def test_over_max_runtime():
    refusal = never_admissible(job(1), QUOTAS[1], {}, UserLimits(max_runtime_s=86400), 2 * 86400 + 3600)
    assert refusal.field == "max_runtime"
    assert "2d 1h" in refusal.sentence and "1d" in refusal.sentence and "176400 s" in refusal.sentence
    assert never_admissible(job(1), QUOTAS[1], {}, UserLimits(max_runtime_s=86400), 86400) is None
    assert never_admissible(job(1), QUOTAS[1], {}, UserLimits(max_runtime_s=86400), None) is None


def test_capability_checked_before_share():
    refusal = never_admissible(job(1, gpus=7), QUOTAS[1], {GPU: 1}, UserLimits(), None)
    assert "capability" in refusal.sentence


# -- holds ------------------------------------------------------------------------------------------------------

def test_quota_hold_names_limit_usage_jobs_users_and_position():
    demands = [job("r1", user=10, gpus=2, admitted=True), job("r2", user=11, gpus=2, admitted=True),
               job("r3", user=11, gpus=1, admitted=True),
               job("h1", user=12, gpus=2, minute=1), job("h2", user=12, gpus=1, minute=2)]
    plan = decide(demands, QUOTAS, {}, {}, CAPACITY)
    hold = plan.hold["h1"]
    assert hold.code == "quota"
    assert hold.args | {} == {
        "project": "vision", "position": 1, "held": 2, "resource": GPU, "limit": {GPU: 6}, "used": {GPU: 5},
        "request": {GPU: 2}, "jobs": 3, "users": 2, "expected_at": None}
    assert hold.sentence == (
        "Held by the quota of project vision: its capability is 6 × nvidia.com/gpu, 5 × nvidia.com/gpu in use by "
        "3 jobs of 2 users, and this job asks for 2 × nvidia.com/gpu. Position 1 of 2 held in the project. No "
        "estimate of its start: the jobs it waits for set no max_runtime.")
    # h2 would fit the capability (5 + 1 <= 6) but the project's queue is strict.
    assert plan.hold["h2"].code == "queue"
    assert plan.hold["h2"].args == {"project": "vision", "position": 2, "held": 2, "ahead": 1, "blocker": "quota",
                                    "blocker_id": "h1", "blocker_request": {GPU: 2}, "expected_at": None}
    assert plan.hold["h2"].sentence.startswith(
        "Position 2 of 2 in the queue of project vision: behind job #h1 (2 × nvidia.com/gpu), held by the project "
        "quota;")
    assert plan.admit == []


def test_share_hold_counts_only_the_members_jobs():
    demands = [job("r1", user=10, gpus=1, admitted=True), job("r2", user=10, gpus=1, admitted=True),
               job("r3", user=11, gpus=1, admitted=True), job("h1", user=10, gpus=1, minute=1),
               job("h2", user=11, gpus=1, minute=2)]
    plan = decide(demands, QUOTAS, {(1, 10): {GPU: 2}}, {}, CAPACITY)
    hold = plan.hold["h1"]
    assert hold.code == "share"
    assert (hold.args["limit"], hold.args["used"], hold.args["jobs"], hold.args["users"]) == (
        {GPU: 2}, {GPU: 2}, 2, 1)
    assert "your share in project vision: 2 × nvidia.com/gpu" in hold.sentence
    assert "2 jobs of yours" in hold.sentence and "Position 1 of 2" in hold.sentence
    # A member's own limit does not block the other members of the project.
    assert plan.admit == ["h2"]


def test_sessions_hold_counts_interactive_jobs_of_the_user_in_all_projects():
    demands = [job("s1", project=1, kind="interactive", admitted=True),
               job("s2", project=2, kind="interactive", admitted=True),
               job("b1", project=1, admitted=True),
               job("s3", project=1, kind="interactive", minute=1), job("b2", project=1, minute=2)]
    plan = decide(demands, QUOTAS, {}, {10: UserLimits(max_sessions=2)}, CAPACITY)
    hold = plan.hold["s3"]
    assert hold.code == "sessions" and hold.args["limit"] == 2 and hold.args["used"] == 2
    assert "2 interactive sessions running and your limit is 2" in hold.sentence
    assert plan.admit == ["b2"]  # a batch job of the same user is not a session


def test_approval_hold_never_admits():
    plan = decide([job("big", gpus=1, approval_pending=True), job("next", minute=1)], QUOTAS, {}, {}, CAPACITY)
    assert plan.hold["big"].code == "approval"
    assert plan.hold["big"].args["requested"] == 1
    assert "approval" in plan.hold["big"].sentence and "Position 1 of 2" in plan.hold["big"].sentence
    assert plan.admit == ["next"]


def test_capacity_hold_gives_machine_numbers_and_reserved_guarantees():
    quotas = {1: ProjectQuota(1, "vision"), 2: ProjectQuota(2, "speech", guarantee={GPU: 3}),
              3: ProjectQuota(3, "nlp")}
    demands = [job("r1", project=3, user=20, gpus=2, admitted=True), job("r2", project=3, user=21, gpus=2,
                                                                           admitted=True),
               job("r3", project=2, user=22, gpus=1, admitted=True), job("h1", project=1, gpus=2, minute=3)]
    plan = decide(demands, quotas, {}, {}, CAPACITY)
    hold = plan.hold["h1"]
    assert hold.code == "capacity"
    assert hold.args | {} == {
        "project": "vision", "position": 1, "held": 1, "resource": GPU, "limit": {GPU: 8}, "used": {GPU: 5},
        "reserved": {GPU: 2}, "request": {GPU: 2}, "jobs": 3, "users": 3, "expected_at": None}
    assert hold.sentence == (
        "Waiting for capacity: the machine has 8 × nvidia.com/gpu, 5 × nvidia.com/gpu in use by 3 jobs of 3 users "
        "and 2 × nvidia.com/gpu kept for other projects' guarantees, and this job asks for 2 × nvidia.com/gpu. "
        "Position 1 of 1 held in project vision. No estimate of its start: the jobs it waits for set no max_runtime.")
    # The guarantee's own project may use it.
    plan = decide(demands + [job("g1", project=2, gpus=2, minute=4)], quotas, {}, {}, CAPACITY)
    assert plan.admit == ["g1"]


def test_capacity_of_a_model_the_machine_lacks():
    plan = decide([job("h", usage={GPU: 1, A100: 1})], QUOTAS, {}, {}, CAPACITY)
    hold = plan.hold["h"]
    assert hold.code == "capacity" and hold.args["resource"] == A100
    assert "the machine has 0 × nvidia.com/gpu (NVIDIA-A100-SXM4-80GB)" in hold.sentence


def test_fairshare_hold_gives_deserved_and_reclaimable():
    quotas = {1: ProjectQuota(1, "vision", deserved={GPU: 4}), 2: ProjectQuota(2, "speech", deserved={GPU: 2})}
    demands = [job(f"s{i}", project=2, user=30 + i % 2, minute=i, admitted=True, preemptible=i < 2)
               for i in range(8)] + [job("h", project=1, gpus=3, minute=20)]
    plan = decide(demands, quotas, {}, {}, CAPACITY)
    hold = plan.hold["h"]
    assert hold.code == "fairshare" and plan.preempt == []
    assert (hold.args["deserved"], hold.args["project_used"], hold.args["reclaimable"], hold.args["jobs"],
            hold.args["users"]) == ({GPU: 4}, {GPU: 0}, {GPU: 2}, 8, 2)
    assert "only 2 × nvidia.com/gpu can be reclaimed" in hold.sentence


def test_preemption_sentence_and_args():
    quotas = {1: ProjectQuota(1, "vision", deserved={GPU: 4}), 2: ProjectQuota(2, "speech", deserved={GPU: 2})}
    demands = [job(f"s{i}", project=2, minute=i, admitted=True, preemptible=True) for i in range(8)]
    plan = decide(demands + [job("h", project=1, gpus=1, minute=20)], quotas, {}, {}, CAPACITY)
    assert plan.admit == ["h"] and [p.victim for p in plan.preempt] == ["s7"]
    preemption = plan.preempt[0]
    assert preemption.beneficiary == "h" and preemption.code == "reclaim"
    assert preemption.args == {
        "project": "speech", "beneficiary_project": "vision", "resource": GPU, "used": {GPU: 8},
        "deserved": {GPU: 2}, "beneficiary_used": {GPU: 0}, "beneficiary_deserved": {GPU: 4}}
    assert "project vision" in preemption.sentence and "project speech" in preemption.sentence


@pytest.mark.parametrize("label, new_jobs, before", [
    # the reviewer's case: b (deserved 4) reclaims from v, c (no quota) is admitted into v's room after it
    ("admitted after the beneficiary", [job("b", project=1, gpus=1, minute=1), job("c", project=3, gpus=3, minute=2)],
     []),
    # a job that fits the free room is admitted before any reclaim is planned: it needs no preemption
    ("admitted before the beneficiary", [job("small", project=3, gpus=0, minute=0, usage={"cpu": 1000}),
                                         job("b", project=1, gpus=1, minute=1)], ["small"]),
])
def test_admitted_before_preemption_leaves_out_what_the_victims_room_admitted(label, new_jobs, before):
    quotas = {1: ProjectQuota(1, "vision", deserved={GPU: 4}), 2: ProjectQuota(2, "speech")}
    victim = job("v", project=2, gpus=4, admitted=True, preemptible=True)
    plan = decide([victim, *new_jobs], quotas, {}, {}, {GPU: 4, "cpu": 64_000, "memory": 256 * GiB})
    assert [p.victim for p in plan.preempt] == ["v"] and plan.preempt[0].beneficiary == "b", label
    assert "b" in plan.admit
    assert plan.admitted_before_preemption() == before, (label, plan.admit)


def test_admitted_before_preemption_is_all_admitted_without_preemptions():
    plan = decide([job("a", gpus=1), job("b", gpus=2, minute=1)], QUOTAS, {}, {}, CAPACITY)
    assert plan.preempt == [] and plan.admitted_before_preemption() == plan.admit == ["a", "b"]


def test_positions_follow_priority_then_age():
    demands = [job(f"r{i}", gpus=1, admitted=True) for i in range(6)]
    demands += [job("old", minute=1), job("urgent", minute=5, priority=10), job("new", minute=9)]
    plan = decide(demands, QUOTAS, {}, {}, CAPACITY)
    assert {k: (h.code, h.args["position"]) for k, h in plan.hold.items()} == {
        "urgent": ("quota", 1), "old": ("quota", 2), "new": ("quota", 3)}  # their own limit before the queue


def test_admission_order_and_an_unbounded_job_does_not_pass_a_blocked_one():
    demands = [job("big", gpus=8, minute=1), job("small", gpus=1, minute=2), job("other", project=2, minute=3)]
    quotas = {1: ProjectQuota(1, "vision", deserved={GPU: 4}), 2: QUOTAS[2]}
    plan = decide(demands, quotas, {}, {}, {GPU: 4}, now=T0)
    assert plan.admit == ["other"]
    assert plan.hold["big"].code == "capacity" and plan.hold["small"].code == "queue"
    assert plan.hold["small"].args["expected_at"] is None, "nothing admitted ends in time for the big one"
    # A bounded job ends at a known time: it goes first (the big one has no estimate to protect).
    demands[1] = replace(demands[1], bound_s=600)
    assert decide(demands, quotas, {}, {}, {GPU: 4}, now=T0).admit == ["small", "other"]


def test_projects_without_quota_entries_and_mixed_keys():
    plan = decide([job(7, project=99, gpus=2), job("x", project=99, gpus=1, minute=1)], {}, {}, {}, CAPACITY)
    assert plan.admit == [7, "x"]


def test_empty_input():
    plan = decide([], QUOTAS, {}, {}, CAPACITY)
    assert (plan.admit, plan.hold, plan.preempt) == ([], {}, [])


@pytest.mark.parametrize("seed", range(5))
def test_no_over_admission_with_many_demands(seed):
    rnd = random.Random(seed)
    quotas = {p: ProjectQuota(p, f"p{p}", guarantee={GPU: 1} if p % 3 == 0 else {},
                              deserved={GPU: rnd.randint(0, 4)}, capability={GPU: rnd.randint(2, 8), "cpu": 40_000})
              for p in range(1, 8)}
    capacity = {GPU: 16, A100: 8, "cpu": 64_000, "memory": 512 * GiB}
    demands = []
    for i in range(300):
        gpus = rnd.randint(0, 3)
        usage = {"cpu": rnd.choice([500, 1000, 4000]), "memory": rnd.randint(1, 32) * GiB}
        if gpus:
            usage[GPU] = gpus
            if rnd.random() < 0.5:
                usage[A100] = gpus
        demands.append(Demand(i, rnd.randint(1, 7), rnd.randint(1, 30), rnd.randint(-2, 2),
                              T0 + timedelta(seconds=i), usage, kind=rnd.choice(["batch", "interactive"]),
                              preemptible=rnd.random() < 0.5))
    shares = {(p, u): {GPU: 3} for p in range(1, 8) for u in range(1, 30, 4)}
    limits = {u: UserLimits(max_sessions=2) for u in range(1, 31, 2)}
    admitted: dict = {}
    for round_ in range(6):  # jobs arrive in waves; each wave is one pass over everything present
        present = [replace(d, admitted=d.key in admitted) for d in demands[: 50 * (round_ + 1)]]
        present = [d for d in present if d.key not in stopped] if round_ else present
        plan = decide(present, quotas, shares, limits, capacity)
        stopped = {p.victim for p in plan.preempt}
        by_key = {d.key: d for d in present}
        for p in plan.preempt:
            victim, beneficiary = by_key[p.victim], by_key[p.beneficiary]
            assert victim.admitted and victim.preemptible and not victim.reclaim_lock
            assert victim.project_id != beneficiary.project_id and p.beneficiary in plan.admit
            key, deserved = p.args["resource"], quotas[victim.project_id].deserved
            left = sum(d.usage.get(key, 0) for d in present
                       if d.admitted and d.project_id == victim.project_id and d.key not in stopped)
            assert left >= deserved.get(key, 0), "a victim's project stays at or above its deserved share"
        assert len(stopped) == len(plan.preempt) and stopped <= set(admitted)
        assert set(plan.admit).isdisjoint(admitted) and len(set(plan.admit)) == len(plan.admit)
        for key in stopped:
            del admitted[key]
        admitted.update((k, True) for k in plan.admit)
        demands = [d for d in demands if d.key not in stopped]
        by_key = {d.key: d for d in demands}
        running = [by_key[k] for k in admitted]
        for key, limit in capacity.items():
            assert sum(d.usage.get(key, 0) for d in running) <= limit
        for p, quota in quotas.items():
            for key, limit in quota.capability.items():
                assert sum(d.usage.get(key, 0) for d in running if d.project_id == p) <= limit
        for (p, u), share in shares.items():
            assert sum(d.usage.get(GPU, 0) for d in running if (d.project_id, d.user_id) == (p, u)) <= share[GPU]
        for u in limits:
            assert sum(1 for d in running if d.user_id == u and d.kind == "interactive") <= 2
        assert set(plan.hold) | set(plan.admit) == {d.key for d in present if not d.admitted}


# -- fair share details -----------------------------------------------------------------------------------------

FAIR = {1: ProjectQuota(1, "vision", deserved={GPU: 4}), 2: ProjectQuota(2, "speech", deserved={GPU: 2})}


def test_reclaim_frees_cpu_with_the_devices_it_deserves():
    usage = {GPU: 1, "cpu": 4000}
    demands = [job(f"s{i}", project=2, minute=i, admitted=True, preemptible=True, usage=usage) for i in range(8)]
    demands.append(job("h", project=1, minute=20, usage={GPU: 2, "cpu": 8000}))
    plan = decide(demands, FAIR, {}, {}, {GPU: 8, "cpu": 32_000})
    assert plan.admit == ["h"] and [p.victim for p in plan.preempt] == ["s7", "s6"]


def test_no_reclaim_for_a_resource_the_deserved_share_does_not_cover():
    demands = [job(f"s{i}", project=2, minute=i, admitted=True, preemptible=True, usage={"cpu": 8000})
               for i in range(4)]
    demands.append(job("h", project=1, minute=20, usage={"cpu": 8000}))
    plan = decide(demands, FAIR, {}, {}, {GPU: 8, "cpu": 32_000})
    assert plan.preempt == [] and plan.hold["h"].code == "capacity"


def test_victims_must_free_what_is_lacking():
    demands = [job("cpu-only", project=2, minute=9, admitted=True, preemptible=True, usage={"cpu": 1000}),
               job("gpu", project=2, minute=1, admitted=True, preemptible=True, gpus=4),
               job("gpu2", project=2, minute=2, admitted=True, gpus=4),
               job("h", project=1, minute=20, gpus=1)]
    plan = decide(demands, FAIR, {}, {}, {GPU: 8, "cpu": 32_000})
    assert [p.victim for p in plan.preempt] == ["gpu"] and plan.admit == ["h"]


def test_shares_are_recomputed_after_each_admission():
    quotas = {1: ProjectQuota(1, "vision", deserved={GPU: 4}), 2: ProjectQuota(2, "speech", deserved={GPU: 4})}
    demands = [job(f"a{i}", project=1, minute=i) for i in range(6)]
    demands += [job(f"b{i}", project=2, minute=10 + i) for i in range(6)]
    plan = decide(demands, quotas, {}, {}, {GPU: 4})
    assert plan.admit == ["a0", "b0", "a1", "b1"]


def test_dominant_share_is_the_largest_over_deserved_keys():
    quotas = {1: ProjectQuota(1, "vision", deserved={GPU: 4, "cpu": 16_000}),
              2: ProjectQuota(2, "speech", deserved={GPU: 4})}
    demands = [job("cpu-heavy", project=1, admitted=True, usage={"cpu": 16_000}),
               job("two", project=2, admitted=True, gpus=2),
               job("a", project=1, minute=1, priority=9), job("b", project=2, minute=2)]
    plan = decide(demands, quotas, {}, {}, {GPU: 3, "cpu": 64_000})
    assert plan.admit == ["b"] and plan.hold["a"].code == "fairshare"  # within its share, nothing to reclaim


def test_behind_a_blocked_job_its_own_limit_is_reported_first():
    demands = [job("big", gpus=8, minute=1), job("needs-ok", minute=2, approval_pending=True), job("plain", minute=3)]
    plan = decide(demands, QUOTAS, {}, {}, CAPACITY)
    assert plan.hold["big"].code == "quota"
    assert plan.hold["needs-ok"].code == "approval" and plan.hold["needs-ok"].args["position"] == 2
    assert plan.hold["plain"].code == "queue" and plan.hold["plain"].args["ahead"] == 1


def test_guarantee_is_kept_from_reclaim_victims_too():
    # speech holds 3 with a guarantee of 2 and a deserved share of 2: one device can be reclaimed, not two.
    quotas = {1: ProjectQuota(1, "vision", deserved={GPU: 6}),
              2: ProjectQuota(2, "speech", guarantee={GPU: 2}, deserved={GPU: 2})}
    demands = [job(f"s{i}", project=2, minute=i, admitted=True, preemptible=True) for i in range(3)]
    demands += [job(f"v{i}", project=1, minute=i, admitted=True) for i in range(1)]
    demands += [job("h", project=1, minute=20, gpus=2)]
    plan = decide(demands, quotas, {}, {}, {GPU: 4})
    assert plan.preempt == [] and plan.hold["h"].code == "fairshare"
    assert plan.hold["h"].args["reclaimable"] == {GPU: 1}
    plan = decide(demands[:-1] + [job("h", project=1, minute=20, gpus=1)], quotas, {}, {}, {GPU: 4})
    assert [p.victim for p in plan.preempt] == ["s2"] and plan.admit == ["h"]


def test_a_guarantee_alone_is_deserved_too():
    quotas = {1: ProjectQuota(1, "vision", guarantee={GPU: 2}), 2: ProjectQuota(2, "speech")}
    demands = [job(f"s{i}", project=2, minute=i, admitted=True, preemptible=True) for i in range(4)]
    demands.append(job("h", project=1, minute=20, gpus=2))
    # speech took the devices before vision's guarantee was set; vision reclaims up to its guarantee.
    plan = decide(demands, quotas, {}, {}, {GPU: 4})
    assert [p.victim for p in plan.preempt] == ["s3", "s2"] and plan.admit == ["h"]


def test_member_usage_follows_admissions_in_the_same_pass():
    shares = {(1, 10): {GPU: 2}, (1, 11): {GPU: 2}}
    demands = [job("r", user=11, admitted=True), job("h1", user=10, minute=1), job("h2", user=10, minute=2),
               job("h3", user=10, minute=3), job("h4", user=11, minute=4), job("h5", user=11, minute=5)]
    plan = decide(demands, QUOTAS, shares, {}, CAPACITY)
    assert plan.admit == ["h1", "h2", "h4"]
    assert plan.hold["h3"].code == "share" and plan.hold["h3"].args["jobs"] == 2
    assert plan.hold["h5"].code == "share" and plan.hold["h5"].args["used"] == {GPU: 2}


def test_grouped_admitted_demands_count_their_jobs():
    # Three identical 1-GPU jobs of user 10 passed as one demand, and one of user 11: the same holds as one by one.
    grouped = [job("g", user=10, admitted=True, usage={GPU: 3}, count=3), job("r", user=11, admitted=True, gpus=2),
               job("s", user=10, admitted=True, kind="interactive", usage={"cpu": 2000}, count=2)]
    single = [job(f"g{i}", user=10, admitted=True) for i in range(3)] + [
        job("r", user=11, admitted=True, gpus=2)] + [
        job(f"s{i}", user=10, admitted=True, kind="interactive", usage={"cpu": 1000}) for i in range(2)]
    held = [job("h", user=12, gpus=2, minute=1), job("i", project=2, kind="interactive", minute=2)]
    limits = {10: UserLimits(max_sessions=2)}
    held[1] = replace(held[1], user_id=10)
    for admitted in (grouped, single):
        plan = decide(admitted + held, QUOTAS, {}, limits, CAPACITY)
        assert plan.hold["h"].code == "quota" and (plan.hold["h"].args["jobs"], plan.hold["h"].args["users"]) == (4, 2)
        assert plan.hold["i"].code == "sessions" and plan.hold["i"].args["used"] == 2
        # Without the session limit, user 10's held job "i" (1 device) starts first: 5 jobs of 2 users.
        plan = decide(admitted + held, {1: ProjectQuota(1, "vision")}, {}, {}, {GPU: 6, "cpu": 64_000})
        assert plan.admit == ["i"]
        hold = plan.hold["h"]
        assert hold.code == "capacity" and (hold.args["jobs"], hold.args["users"]) == (5, 2)


def test_a_group_is_never_a_victim():
    demands = [job("group", project=2, admitted=True, preemptible=True, usage={GPU: 8}, count=8),
               job("h", project=1, minute=20)]
    plan = decide(demands, FAIR, {}, {}, CAPACITY)
    assert plan.preempt == [] and plan.hold["h"].code == "fairshare"
