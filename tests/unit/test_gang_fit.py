"""domain.gang_fit: a replica larger than the largest node, a gang larger than the cluster or the project's capability."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import Unschedulable
from crater_app.domain.gang_fit import NodeCapacity, check_gang, check_replicas, cluster_total, gang_demand
from crater_app.domain.job_kinds import normalize_tasks
from crater_app.domain.jobs import validate_spec

GiB = 1024**3
GPU = "nvidia.com/gpu"
A100, H100 = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"


def node(name="n1", cpu=64, mem=512, gpus=4, model=A100, schedulable=True) -> NodeCapacity:
    return NodeCapacity(name, cpu * 1000, mem * GiB, tuple((GPU, model) for _ in range(gpus)), schedulable)


CLUSTER = [node("n1"), node("n2", gpus=8, model=H100, cpu=32), node("cordoned", gpus=16, cpu=256, schedulable=False)]


def plan(*tasks: tuple[str, int, dict], model=None, min_available=None, form="tasks"):
    if form == "single":
        (_, _, res), = tasks
        raw = {"name": "j", "command": ["x"], "resources": res}
    else:
        raw = {"name": "j", "tasks": [{"name": n, "replicas": r, "command": ["x"], "resources": res}
                                      for n, r, res in tasks]}
    if model:
        raw["accelerator_model"] = model
    if min_available:
        raw["min_available"] = min_available
    return normalize_tasks(validate_spec(raw))


@pytest.mark.parametrize("tasks, model, field, code, args", [
    ([("w", 1, {GPU: 16})], None, "tasks[0].resources.nvidia.com/gpu", "job.replica_never_fits_devices",
     {"resource": GPU, "have": 8, "request": 16}),
    ([("a", 1, {GPU: 1}), ("w", 2, {GPU: 6})], A100, "accelerator_model",  # n2 has 8 devices, not of that model
     "job.replica_never_fits_model", {"resource": GPU, "model": A100, "have": 4, "request": 6}),
    ([("w", 1, {GPU: 1})], "NVIDIA-B200", "accelerator_model", "job.replica_model_not_offered",
     {"resource": GPU, "model": "NVIDIA-B200", "request": 1, "offered": f"4 × {A100}, 8 × {H100}"}),
    ([("w", 1, {GPU: 9})], A100, "tasks[0].resources.nvidia.com/gpu", "job.replica_never_fits_model",
     {"resource": GPU, "model": A100, "have": 4, "request": 9}),
    ([("w", 1, {"cpu": "65"})], None, "tasks[0].resources.cpu", "job.replica_never_fits_cpu",
     {"have": 64000, "request": 65000}),
    ([("w", 1, {"memory": "1Ti"})], None, "tasks[0].resources.memory", "job.replica_never_fits_memory",
     {"have": 512 * GiB, "request": 1024 * GiB}),
    # 8 GPUs fit n2 and 40 cores fit n1, but no node has both
    ([("w", 1, {GPU: 8, "cpu": "40"})], None, "tasks[0].resources", "job.replica_no_single_node",
     {"request": {"cpu": 40000, GPU: 8}}),
])
def test_a_replica_larger_than_the_largest_node_is_refused_at_its_field(tasks, model, field, code, args):
    with pytest.raises(Unschedulable) as info:
        check_replicas(plan(*tasks, model=model).tasks, model, CLUSTER)
    assert (info.value.field, info.value.code, info.value.params) == (field, code, args)
    assert info.value.http_status == 422


def test_the_message_says_what_the_largest_node_has_in_both_languages():
    with pytest.raises(Unschedulable) as info:
        check_replicas(plan(("w", 1, {GPU: 8})).tasks, None, [node(gpus=4), node("n2", gpus=2)])
    assert info.value.message == "largest node has 4 × nvidia.com/gpu; one replica cannot get 8"
    assert info.value.message_in("zh-CN") == "最大的节点只有 4 × nvidia.com/gpu；一个副本无法获得 8 个"


def test_the_single_task_form_keeps_its_field_and_what_fits_passes():
    with pytest.raises(Unschedulable) as info:
        check_replicas(plan(("main", 1, {GPU: 9}), form="single").tasks, None, CLUSTER)
    assert info.value.field == "resources.nvidia.com/gpu"
    check_replicas(plan(("w", 4, {GPU: 8, "cpu": "32"})).tasks, None, CLUSTER)  # n2 takes one replica
    check_replicas(plan(("w", 1, {GPU: 4})).tasks, A100, CLUSTER)


def test_no_schedulable_node_is_no_node():
    with pytest.raises(Unschedulable) as info:
        check_replicas(plan(("w", 1, {"cpu": 1})).tasks, None, [node(schedulable=False)])
    assert (info.value.code, info.value.field) == ("job.no_node", "tasks[0].resources")


@pytest.mark.parametrize("tasks, model, min_available, demand", [
    # all replicas by default: the totals
    ([("m", 1, {GPU: 1, "cpu": 2}), ("w", 3, {GPU: 2, "cpu": 1})], None, None, {GPU: 7, "cpu": 5000}),
    # a smaller gang: the smallest amounts per key (1 from m, then 2 from a w)
    ([("m", 1, {GPU: 1, "cpu": 2}), ("w", 3, {GPU: 2, "cpu": 1})], None, 2, {GPU: 3, "cpu": 2000}),
    # a task without the key counts as 0 of it (three workers need no CPU, two ps and a worker one GPU)
    ([("ps", 2, {"cpu": 1}), ("w", 4, {GPU: 1})], None, 3, {GPU: 1}),
    # model keys repeat the devices
    ([("w", 2, {GPU: 4})], A100, None, {GPU: 8, f"{GPU}:{A100}": 8}),
])
def test_the_gang_demand_is_a_lower_bound_of_any_min_available_replicas(tasks, model, min_available, demand):
    assert gang_demand(plan(*tasks, model=model, min_available=min_available), model) == demand


def test_the_cluster_total_leaves_out_unschedulable_nodes():
    assert cluster_total(CLUSTER) == {"cpu": 96000, "memory": 1024 * GiB, GPU: 12, f"{GPU}:{A100}": 4,
                                      f"{GPU}:{H100}": 8}


@pytest.mark.parametrize("tasks, model, min_available, capability, field, code, args", [
    ([("w", 4, {GPU: 4})], None, None, None, "tasks", "job.gang_exceeds_cluster",
     {"gang": 4, "request": {GPU: 16}, "have": {GPU: 12}}),
    ([("w", 3, {GPU: 2})], A100, 3, None, "min_available", "job.gang_exceeds_cluster",
     {"gang": 3, "request": {f"{GPU}:{A100}": 6}, "have": {f"{GPU}:{A100}": 4}}),
    ([("w", 4, {GPU: 2})], None, None, {GPU: 6}, "tasks", "job.gang_exceeds_capability",
     {"gang": 4, "request": {GPU: 8}, "capability": {GPU: 6}}),
    ([("w", 4, {"cpu": 8})], None, None, {"cpu": 16000}, "tasks", "job.gang_exceeds_capability",
     {"gang": 4, "request": {"cpu": 32000}, "capability": {"cpu": 16000}}),
])
def test_a_gang_larger_than_the_cluster_or_the_capability_is_refused(tasks, model, min_available, capability,
                                                                       field, code, args):
    p = plan(*tasks, model=model, min_available=min_available)
    with pytest.raises(Unschedulable) as info:
        check_gang(p, model, CLUSTER, capability, field="min_available" if min_available else "tasks")
    assert (info.value.field, info.value.code, info.value.params) == (field, code, args)


def test_a_gang_that_fits_passes_and_a_smaller_gang_fits_where_all_replicas_would_not():
    check_gang(plan(("w", 3, {GPU: 4})), None, CLUSTER, {GPU: 12, "memory": 10**15})
    check_gang(plan(("w", 6, {GPU: 2}), min_available=6), None, CLUSTER, {})  # absent keys: no ceiling
    check_gang(plan(("m", 1, {GPU: 1}), ("w", 8, {GPU: 2}), min_available=4), None, CLUSTER, None)
    with pytest.raises(Unschedulable):
        check_gang(plan(("m", 1, {GPU: 1}), ("w", 8, {GPU: 2})), None, CLUSTER, None)


def test_the_gang_messages_in_both_languages():
    with pytest.raises(Unschedulable) as info:
        check_gang(plan(("w", 4, {GPU: 2})), None, None, {GPU: 6})
    assert info.value.message == ("a gang of 4 replicas needs 8 × nvidia.com/gpu; the project's capability is "
                                  "6 × nvidia.com/gpu")
    assert "项目的容量上限为 6 × nvidia.com/gpu" in info.value.message_in("zh-CN")
