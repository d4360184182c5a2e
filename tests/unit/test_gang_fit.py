"""domain.gang_fit: a replica larger than the largest node, a gang larger than the cluster or the project's capability."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import Unschedulable
from crater_app.domain.gang_fit import (NodeCapacity, check_gang, check_replicas, cluster_total, gang_demand, placeable,
                                       select_nodes)
from crater_app.domain.job_kinds import normalize_tasks
from crater_app.domain.jobs import validate_spec

GiB = 1024**3
GPU = "nvidia.com/gpu"
A100, H100 = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"


def node(name="n1", cpu=64, mem=512, gpus=4, model=A100, schedulable=True, labels=None, **label) -> NodeCapacity:
    return NodeCapacity(name, cpu * 1000, mem * GiB, tuple((GPU, model) for _ in range(gpus)), schedulable,
                        {**(labels or {}), **label})


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


ZONED = [node("a1", zone="a", pool="train"), node("a2", zone="a", pool="eval"), node("b1", zone="b"),
         node("c1", zone="c", schedulable=False), node("bare")]


@pytest.mark.parametrize("selector, names", [
    ({}, ["a1", "a2", "b1", "bare"]),  # every schedulable node
    ({"zone": "a"}, ["a1", "a2"]),
    ({"zone": "a", "pool": "eval"}, ["a2"]),
    ({"kubernetes.io/os": "linux"}, ["k"]),
])
def test_select_nodes_keeps_the_schedulable_nodes_the_selector_matches(selector, names):
    nodes = [*ZONED, node("k", labels={"kubernetes.io/os": "linux"})] if "kubernetes.io/os" in selector else ZONED
    assert [n.name for n in select_nodes(nodes, selector)] == names


@pytest.mark.parametrize("selector, field, code, args", [
    # a value no node has: the key, the value and how many nodes have the key at all
    ({"zone": "d"}, "node_selector.zone", "job.node_selector_unmatched",
     {"key": "zone", "value": "d", "with_key": 3, "nodes": 4}),
    # only an unschedulable node has it
    ({"zone": "c"}, "node_selector.zone", "job.node_selector_unmatched",
     {"key": "zone", "value": "c", "with_key": 3, "nodes": 4}),
    # a key no node has; the first unmatched key is named
    ({"zone": "a", "gpu": "h100"}, "node_selector.gpu", "job.node_selector_unmatched",
     {"key": "gpu", "value": "h100", "with_key": 0, "nodes": 4}),
    # each label matches a node, none has both
    ({"zone": "b", "pool": "train"}, "node_selector", "job.node_selector_no_node", {"labels": "zone=b, pool=train"}),
])
def test_a_selector_no_schedulable_node_matches_is_refused_at_its_key(selector, field, code, args):
    with pytest.raises(Unschedulable) as info:
        select_nodes(ZONED, selector)
    assert (info.value.field, info.value.code, info.value.params) == (field, code, args)


def test_the_selector_message_names_the_label_and_the_count_in_both_languages():
    with pytest.raises(Unschedulable) as info:
        select_nodes(ZONED, {"zone": "d"})
    assert info.value.message == ("no schedulable node has the label zone=d; 3 of the 4 schedulable nodes have the "
                                  "label zone at all")
    assert "zone=d" in info.value.message_in("zh-CN") and info.value.message_in("zh-CN") != info.value.message


def test_without_a_schedulable_node_the_replica_check_says_so():
    assert select_nodes([node(schedulable=False)], {"zone": "a"}) == []


def test_a_selected_node_set_is_what_the_replica_fits_on():
    nodes = select_nodes([node("small", gpus=2, zone="a"), node("big", gpus=8, zone="b")], {"zone": "a"})
    with pytest.raises(Unschedulable) as info:
        check_replicas(plan(("w", 1, {GPU: 4})).tasks, None, nodes)
    assert info.value.params == {"resource": GPU, "have": 2, "request": 4}


FOUR_TWO = [node("four", gpus=4), node("two", gpus=2)]


@pytest.mark.parametrize("tasks, model, min_available, nodes, placed", [
    # the reviewer's case: 6 GPUs in all, but a 3-GPU replica fits only the node of 4
    ([("w", 2, {GPU: 3})], None, None, FOUR_TWO, {"four": 1, "two": 0}),
    ([("w", 3, {GPU: 2})], None, None, FOUR_TWO, {"four": 2, "two": 1}),
    # largest first: the 3-GPU master on the node of 4, the 1-GPU workers where room is left
    ([("m", 1, {GPU: 3}), ("w", 3, {GPU: 1})], None, None, FOUR_TWO, {"four": 2, "two": 2}),
    # CPU bounds a node as well as its devices
    ([("w", 4, {GPU: 1, "cpu": "40"})], None, None, FOUR_TWO, {"four": 1, "two": 1}),
    # a smaller gang: as many as it needs, from the smallest replicas when the largest do not fit
    ([("big", 1, {GPU: 4}), ("w", 5, {GPU: 1})], None, 5, FOUR_TWO, {"four": 4, "two": 1}),
    ([("w", 8, {GPU: 1})], None, 3, FOUR_TWO, {"four": 3}),
    # with a model only its devices count; a task without accelerators goes anywhere
    ([("w", 2, {GPU: 4})], A100, None, [node("h", gpus=8, model=H100), node("a", gpus=4)], {"a": 1, "h": 0}),
    ([("l", 1, {"cpu": "1"}), ("w", 1, {GPU: 4})], A100, None, [node("h", gpus=8, model=H100), node("a", gpus=4)],
     {"h": 1, "a": 1}),
    # unschedulable nodes hold nothing
    ([("w", 2, {GPU: 2})], None, None, [node("off", gpus=8, schedulable=False), node("two", gpus=2)], {"two": 1}),
])
def test_placeable_counts_the_replicas_the_nodes_hold_at_once(tasks, model, min_available, nodes, placed):
    assert placeable(plan(*tasks, model=model, min_available=min_available), model, nodes) == placed


@pytest.mark.parametrize("tasks, min_available, field, code, args", [
    ([("w", 2, {GPU: 3})], None, "tasks[0].resources", "job.gang_cannot_pack_task",
     {"gang": 2, "placed": 1, "nodes": 2, "per_node": "four: 1, two: 0", "request": {GPU: 3}}),
    ([("m", 1, {GPU: 3}), ("w", 1, {GPU: 3})], None, "tasks", "job.gang_cannot_pack",
     {"gang": 2, "placed": 1, "nodes": 2, "per_node": "four: 1, two: 0"}),
    ([("m", 1, {GPU: 3}), ("w", 3, {GPU: 3})], 2, "min_available", "job.gang_cannot_pack",
     {"gang": 2, "placed": 1, "nodes": 2, "per_node": "four: 1, two: 0"}),
])
def test_a_gang_whose_replicas_cannot_all_be_placed_at_once_is_refused(tasks, min_available, field, code, args):
    p = plan(*tasks, min_available=min_available)
    with pytest.raises(Unschedulable) as info:
        check_gang(p, None, FOUR_TWO, None, field="min_available" if min_available else "tasks")
    assert (info.value.field, info.value.code, info.value.params) == (field, code, args)


def test_the_packing_message_names_the_numbers_in_both_languages():
    with pytest.raises(Unschedulable) as info:
        check_gang(plan(("w", 2, {GPU: 3})), None, FOUR_TWO, None)
    assert info.value.message == ("a gang of 2 replicas of 3 × nvidia.com/gpu each cannot start: the 2 schedulable "
                                  "nodes hold only 1 of them at once (four: 1, two: 0)")
    assert "four: 1, two: 0" in info.value.message_in("zh-CN") and "无法启动" in info.value.message_in("zh-CN")


def test_a_packing_message_names_a_few_nodes_only():
    nodes = [node(f"n{i:02}", gpus=2) for i in range(20)]
    with pytest.raises(Unschedulable) as info:
        check_gang(plan(("w", 2, {GPU: 3}), ("x", 1, {GPU: 1})), None, nodes, None)
    assert info.value.params["per_node"] == "n00: 1, n01: 0, n02: 0, n03: 0, n04: 0, n05: 0, …"
    assert info.value.params["nodes"] == 20 and info.value.params["placed"] == 1
