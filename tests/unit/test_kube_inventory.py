"""Nodes + pods -> NodeInventory (crater_app.cluster.kube.inventory): table-driven."""

from __future__ import annotations

import pytest

from crater_app.cluster.kube import pods as podinfo
from crater_app.cluster.kube.inventory import inventory, node_inventory, pod_requests
from crater_app.cluster.kube.options import KubeOptions
from crater_app.domain.naming import LABEL_JOB_UID

OPTS = KubeOptions()
A100 = "NVIDIA-A100-SXM4-80GB"


def node(name="n1", *, gpus=4, ready=True, cordoned=False, taints=(), labels=None, extra=None):
    alloc = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    alloc.update(extra or {})
    spec = {"taints": list(taints)}
    if cordoned:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "labels": {"nvidia.com/gpu.product": A100, "nvidia.com/gpu.memory": "81920",
                                                  **(labels or {})}},
            "spec": spec,
            "status": {"allocatable": alloc, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pod(uid="u1", node="n1", *, gpus=0, cpu="1", memory="1Gi", phase="Running", gpu_index=None, crater=True,
        init=None):
    labels = {LABEL_JOB_UID: uid} if crater else {}
    ann = {podinfo.ANNOTATION_GPU_INDEX: gpu_index} if gpu_index else {}
    res = {"requests": {"cpu": cpu, "memory": memory}}
    if gpus:
        res["requests"]["nvidia.com/gpu"] = str(gpus)
        res["limits"] = {"nvidia.com/gpu": str(gpus)}
    spec = {"nodeName": node, "containers": [{"name": "c", "resources": res}]}
    if init:
        spec["initContainers"] = [{"name": "i", "resources": {"requests": init}}]
    return {"metadata": {"name": f"{uid}-pod", "namespace": "ns", "labels": labels, "annotations": ann},
            "spec": spec, "status": {"phase": phase}}


def test_devices_are_discovered_with_model_and_memory():
    inv = node_inventory(node(gpus=2), [], OPTS)
    assert [(d.index, d.resource, d.model, d.memory_bytes, d.uuid) for d in inv.devices] == [
        (0, "nvidia.com/gpu", A100, 80 << 30, "n1/nvidia.com/gpu/0"),
        (1, "nvidia.com/gpu", A100, 80 << 30, "n1/nvidia.com/gpu/1")]
    assert (inv.cpu_m, inv.memory_bytes, inv.source, inv.isolation) == (32000, 256 << 30, "kubernetes", "container")
    assert inv.schedulable and inv.conditions == () and inv.labels["nvidia.com/gpu.product"] == A100


def test_other_accelerators_and_configured_labels():
    opts = KubeOptions(accelerators=("nvidia.com/gpu", "huawei.com/Ascend910", "example.com/npu"),
                       model_labels={"huawei.com/Ascend910": "accelerator"})
    inv = node_inventory(node(gpus=1, labels={"accelerator": "huawei-Ascend910"},
                              extra={"huawei.com/Ascend910": "2", "example.com/npu": "1"}), [], opts)
    assert [(d.index, d.resource, d.model) for d in inv.devices] == [
        (0, "nvidia.com/gpu", ""), (1, "huawei.com/Ascend910", "huawei-Ascend910"),
        (2, "huawei.com/Ascend910", "huawei-Ascend910"), (3, "example.com/npu", "")]


SCHEDULABLE = [
    (node(), True, ()),
    (node(cordoned=True, taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]), False,
     ("cordoned",)),
    (node(ready=False, taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]), False,
     ("NotReady",)),
    (node(taints=[{"key": "gpu", "value": "broken", "effect": "NoSchedule"}]), False, ("taint:gpu=broken:NoSchedule",)),
    (node(taints=[{"key": "maint", "value": "", "effect": "NoExecute"}]), False, ("taint:maint=:NoExecute",)),
    (node(taints=[{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}]), True, ()),
]


@pytest.mark.parametrize("n,schedulable,conditions", SCHEDULABLE)
def test_schedulable_and_conditions(n, schedulable, conditions):
    inv = node_inventory(n, [], OPTS)
    assert (inv.schedulable, inv.conditions) == (schedulable, conditions)


def test_allocations_named_first_then_lowest_free_and_finished_pods_ignored():
    pods = [pod("a", gpus=2), pod("b", gpus=1, gpu_index="0"), pod("c", gpus=1, phase="Succeeded"),
            pod("d", gpus=0, cpu="500m", memory="512Mi"), pod("e", gpus=1, crater=False)]
    inv = node_inventory(node(), pods, OPTS)
    assert inv.allocations == {0: "b", 1: "a", 2: "a", 3: "pod:ns/e-pod"}
    assert inv.cpu_m_allocated == 3500 and inv.memory_bytes_allocated == (3 << 30) + (512 << 20)


REQUESTS = [
    (pod(cpu="250m", memory="100Mi"), (250, 100 << 20)),
    (pod(cpu="1", memory="1Gi", init={"cpu": "2", "memory": "10Mi"}), (2000, 1 << 30)),
    (pod(cpu="bogus", memory="1Gi"), (0, 1 << 30)),
]


@pytest.mark.parametrize("p,expected", REQUESTS)
def test_pod_requests(p, expected):
    assert pod_requests(p) == expected


def test_inventory_groups_pods_by_node_and_capacity_leaves_allocations_out():
    nodes, pods = [node("n2"), node("n1", gpus=0)], [pod("a", "n2", gpus=1), pod("b", "n1"), pod("z", "gone")]
    full = inventory(nodes, pods, OPTS)
    assert [(n.name, n.allocations, n.cpu_m_allocated) for n in full] == [("n1", {}, 1000), ("n2", {0: "a"}, 1000)]
    cap = inventory(nodes, pods, OPTS, with_allocations=False)
    assert [(n.name, n.allocations, n.cpu_m_allocated, len(n.devices)) for n in cap] == [("n1", {}, 0, 0),
                                                                                         ("n2", {}, 0, 4)]
