"""Nodes and their pods as :class:`~crater_app.cluster.base.NodeInventory` (pure; objects as the API's JSON).

Discovered, never typed in: a node's accelerators are its ``status.allocatable`` of each extended resource name in
:attr:`KubeOptions.accelerators` (``nvidia.com/gpu``, ``amd.com/gpu``, ``huawei.com/Ascend910``, ...), numbered
``0..n-1`` across the resources in that order; the model is the node label :meth:`KubeOptions.model_label` names
(``nvidia.com/gpu.product`` by default, GPU Feature Discovery's), the memory per device NVIDIA GPU Feature
Discovery's ``nvidia.com/gpu.memory`` label (MiB) where present. CPU and memory are the node's allocatable.

What is in use is what the node's non-finished pods request, as the scheduler counts it (``k8s.io/component-helpers``
``PodRequests``: the larger of the sum of the containers' requests and the largest init container's, plus the pod's
``overhead``); ``allocations`` give each accelerator-holding pod's devices to its workload (label
``crater.io/job-uid``; a pod Crater did not make as ``pod:<namespace>/<name>``): the indices Volcano's
``volcano.sh/gpu-index`` annotation names, else the lowest free ones (the API does not say which device a pod has).

A node takes no new work when cordoned (``spec.unschedulable``), not ``Ready``, or tainted ``NoSchedule`` or
``NoExecute`` (the taints Kubernetes adds for the first two, ``node.kubernetes.io/unschedulable`` and
``node.kubernetes.io/not-ready``/``unreachable``, are reported as ``cordoned``/``NotReady``, not twice).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from kubernetes.utils import parse_quantity

from crater_app.cluster.base import Device, NodeInventory
from crater_app.cluster.kube import pods as podinfo
from crater_app.cluster.kube.options import KubeOptions
from crater_app.domain.naming import LABEL_JOB_UID

#: NVIDIA GPU Feature Discovery's label of a GPU's memory, MiB
NVIDIA_MEMORY_LABEL = "nvidia.com/gpu.memory"
_MIB = 1 << 20
#: taints Kubernetes puts on a node for a state already reported as a condition word
_STATE_TAINTS = {"node.kubernetes.io/unschedulable", "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}


def _amount(value: object, scale: int = 1) -> int:
    """A quantity (``"500m"``, ``"16Gi"``, ``4``) times ``scale``, as an integer (0 when unreadable)."""
    try:
        return int(parse_quantity(str(value)) * scale)
    except (ValueError, TypeError, ArithmeticError):
        return 0


def pod_requests(pod: dict) -> tuple[int, int]:
    """(millicores, bytes) the pod requests, as the scheduler counts it (see the module)."""
    spec = pod.get("spec") or {}

    def of(containers: list[dict]) -> list[tuple[int, int]]:
        out = []
        for c in containers or []:
            req = (c.get("resources") or {}).get("requests") or {}
            out.append((_amount(req.get("cpu", 0), 1000), _amount(req.get("memory", 0))))
        return out

    main = of(spec.get("containers"))
    init = of(spec.get("initContainers"))
    cpu = max(sum(c for c, _ in main), max((c for c, _ in init), default=0))
    mem = max(sum(m for _, m in main), max((m for _, m in init), default=0))
    overhead = spec.get("overhead") or {}
    return cpu + _amount(overhead.get("cpu", 0), 1000), mem + _amount(overhead.get("memory", 0))


def _conditions(node: dict) -> tuple[str, ...]:
    spec, status = node.get("spec") or {}, node.get("status") or {}
    words = []
    if spec.get("unschedulable"):
        words.append("cordoned")
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if ready is None or ready.get("status") != "True":
        words.append("NotReady")
    for taint in spec.get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and taint.get("key") not in _STATE_TAINTS:
            words.append(f"taint:{taint.get('key')}={taint.get('value', '')}:{taint['effect']}")
    return tuple(words)


def node_devices(node: dict, options: KubeOptions) -> tuple[Device, ...]:
    """The accelerators of ``node`` (see the module), numbered across :attr:`KubeOptions.accelerators`."""
    name = podinfo.meta(node).get("name", "")
    labels = podinfo.meta(node).get("labels") or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    devices: list[Device] = []
    for resource in options.accelerators:
        count = _amount(allocatable.get(resource, 0))
        if count <= 0:
            continue
        label = options.model_label(resource)
        model = labels.get(label, "") if label else ""
        memory = _amount(labels.get(NVIDIA_MEMORY_LABEL, 0), _MIB) if resource == "nvidia.com/gpu" else 0
        for n in range(count):
            devices.append(Device(index=len(devices), resource=resource, model=model, memory_bytes=memory,
                                  uuid=f"{name}/{resource}/{n}"))
    return tuple(devices)


def _holder(pod: dict) -> str:
    m = podinfo.meta(pod)
    return (m.get("labels") or {}).get(LABEL_JOB_UID) or f"pod:{m.get('namespace', '')}/{m.get('name', '')}"


def _allocate(devices: tuple[Device, ...], pods: list[dict], options: KubeOptions) -> dict[int, str]:
    """Device index -> holder for the pods holding accelerators (named indices first, then the lowest free)."""
    allocations: dict[int, str] = {}
    by_resource: dict[str, list[int]] = {}
    for d in devices:
        by_resource.setdefault(d.resource, []).append(d.index)
    unnamed = []
    for pod in pods:
        raw = (podinfo.meta(pod).get("annotations") or {}).get(podinfo.ANNOTATION_GPU_INDEX)
        named = podinfo.devices_of(pod, options.accelerators) if raw else ()
        if named:
            for i in named:
                allocations.setdefault(i, _holder(pod))
        else:
            unnamed.append(pod)
    for pod in unnamed:
        for resource in options.accelerators:
            want = podinfo.device_count(pod, (resource,))
            free = [i for i in by_resource.get(resource, []) if i not in allocations]
            for i in free[:want]:
                allocations[i] = _holder(pod)
    return allocations


def _allocations(devices: tuple[Device, ...], pods: list[dict], options: KubeOptions,
                 assigned: Mapping[tuple[str, str], tuple[int, ...]]) -> dict[int, str]:
    known = [p for p in pods if (podinfo.meta(p).get("namespace", ""), podinfo.meta(p).get("name", "")) in assigned]
    out = {i: _holder(p) for p in known
           for i in assigned[(podinfo.meta(p).get("namespace", ""), podinfo.meta(p).get("name", ""))]}
    rest = [p for p in pods if p not in known]
    if rest:
        free = tuple(d for d in devices if d.index not in out)
        out.update(_allocate(free, rest, options))
    return out


def node_inventory(node: dict, pods: Iterable[dict], options: KubeOptions, *, with_allocations: bool = True,
                   assigned: Mapping[tuple[str, str], tuple[int, ...]] | None = None) -> NodeInventory:
    """One node's :class:`NodeInventory` from its object and the pods bound to it (finished pods are ignored).
    ``with_allocations`` false leaves ``allocations`` and the requested amounts out (:meth:`capacity`);
    ``assigned`` (pod ``(namespace, name)`` -> device indices, the backend's record of them) wins over
    :func:`_allocate`'s choice for the pods it names."""
    m = podinfo.meta(node)
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    devices = node_devices(node, options)
    conditions = _conditions(node)
    held = [p for p in pods if podinfo.holds_node(p)] if with_allocations else []
    requests = [pod_requests(p) for p in held]
    return NodeInventory(
        name=m.get("name", ""), cpu_m=_amount(allocatable.get("cpu", 0), 1000),
        memory_bytes=_amount(allocatable.get("memory", 0)), devices=devices, source="kubernetes",
        allocations=_allocations(devices, held, options, assigned or {}) if held else {},
        cpu_m_allocated=sum(c for c, _ in requests), memory_bytes_allocated=sum(b for _, b in requests),
        enforcement={"cpu": "kubelet", "memory": "kubelet"}, isolation="container",
        schedulable=not conditions, conditions=conditions, labels=dict(m.get("labels") or {}))


def inventory(nodes: Iterable[dict], pods: Iterable[dict], options: KubeOptions, *,
              with_allocations: bool = True, assigned: Mapping[tuple[str, str], tuple[int, ...]] | None = None
              ) -> list[NodeInventory]:
    """Every node's :func:`node_inventory`, sorted by name; ``pods`` all pods (grouped by ``spec.nodeName``)."""
    by_node: dict[str, list[dict]] = {}
    if with_allocations:
        for p in pods:
            node = (p.get("spec") or {}).get("nodeName")
            if node:
                by_node.setdefault(node, []).append(p)
    out = [node_inventory(n, by_node.get(podinfo.meta(n).get("name", ""), []), options,
                          with_allocations=with_allocations, assigned=assigned) for n in nodes]
    return sorted(out, key=lambda n: n.name)
