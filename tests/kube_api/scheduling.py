"""The gang scheduler of the cluster simulator (Volcano's role): binds a Job's pending pods to nodes when at least
``minAvailable`` of them fit at once and the Job's Queue is ``Open`` with room under its ``capability``; otherwise
marks them ``Unschedulable`` with the scheduler's message (``0/2 nodes are unavailable: 2 Insufficient
nvidia.com/gpu.``). Node filters as kube-scheduler's: cordon, ``Ready``, ``NoSchedule``/``NoExecute`` taints
against tolerations, ``nodeSelector``, required node affinity, resources (allocatable minus bound pods' requests).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from kubernetes.utils import parse_quantity

from tests.kube_api import pods as P

if TYPE_CHECKING:
    from tests.kube_api.cluster import ClusterSimulator

TERMINAL = ("Succeeded", "Failed")


def _tolerates(pod: dict, taint: dict) -> bool:
    for tol in (pod.get("spec") or {}).get("tolerations") or []:
        key_ok = (tol.get("operator") == "Exists" and not tol.get("key")) or tol.get("key") == taint.get("key")
        value_ok = tol.get("operator") == "Exists" or tol.get("value", "") == taint.get("value", "")
        if key_ok and value_ok and tol.get("effect") in (None, "", taint.get("effect")):
            return True
    return False


def _expression(labels: dict, expr: dict) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels:
        return int(labels[key]) > int(values[0]) if op == "Gt" else int(labels[key]) < int(values[0])
    return False


def _affinity_ok(pod: dict, labels: dict) -> bool:
    spec = pod.get("spec") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(all(_expression(labels, e) for e in t.get("matchExpressions") or []) for t in terms)


def _why_not(pod: dict, node: dict, free: dict[str, float]) -> str:
    """``""`` when the pod fits the node, else the scheduler's reason."""
    spec, status, labels = node.get("spec") or {}, node.get("status") or {}, node["metadata"].get("labels") or {}
    if spec.get("unschedulable"):
        return "node(s) were unschedulable"
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    if not ready or ready[0].get("status") != "True":
        return "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
    for taint in spec.get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(pod, taint):
            return f"node(s) had untolerated taint {{{taint['key']}: {taint.get('value', '')}}}"
    if not _affinity_ok(pod, labels):
        return "node(s) didn't match Pod's node affinity/selector"
    for name, amount in P.requests(pod).items():
        if amount > free.get(name, 0.0) + 1e-9:
            return f"Insufficient {name}"
    return ""


def _message(pod: dict, nodes: list[dict], free: dict[str, dict[str, float]]) -> str:
    reasons = Counter(_why_not(pod, n, free[n["metadata"]["name"]]) for n in nodes)
    reasons.pop("", None)
    parts = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
    return f"0/{len(nodes)} nodes are unavailable: {parts}." if parts else "pod group is not ready"


def _mark(sim: "ClusterSimulator", pod: dict, message: str) -> None:
    conds = (pod.get("status") or {}).get("conditions") or []
    if any(c.get("reason") == "Unschedulable" and c.get("message") == message for c in conds):
        return
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    sim.store.set_status("", "pods", ns, name, P.unschedulable_status(message))
    sim._event(ns, "Pod", name, "FailedScheduling", message, "Warning")


def _capability(queue: dict) -> dict[str, float]:
    return {k: float(parse_quantity(v)) for k, v in ((queue.get("spec") or {}).get("capability") or {}).items()}


def schedule(sim: "ClusterSimulator") -> None:
    """Bind what fits, gang by gang in creation order; mark the rest Unschedulable."""
    store = sim.store
    nodes = store.list("", "nodes")[0]
    free = {n["metadata"]["name"]: {k: float(parse_quantity(v)) for k, v in
                                    ((n.get("status") or {}).get("allocatable") or {}).items()} for n in nodes}
    by_queue: dict[str, Counter] = {}
    unbound: dict[tuple[str, str], list[dict]] = {}
    bound_live: Counter = Counter()
    for pod in store.list("", "pods")[0]:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        job = (meta.get("labels") or {}).get(P.JOB_NAME)
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if spec.get("nodeName"):
            if phase not in TERMINAL:
                for name, amount in P.requests(pod).items():
                    if spec["nodeName"] in free:
                        free[spec["nodeName"]][name] = free[spec["nodeName"]].get(name, 0.0) - amount
                queue = (meta.get("labels") or {}).get(P.QUEUE_NAME, "default")
                by_queue.setdefault(queue, Counter()).update(P.requests(pod))
                if job:
                    bound_live[(meta["namespace"], job)] += 1
        elif job and not meta.get("deletionTimestamp") and phase == "Pending":
            unbound.setdefault((meta["namespace"], job), []).append(pod)
    jobs = sorted(store.list(*("batch.volcano.sh", "jobs"))[0],
                  key=lambda j: (j["metadata"]["creationTimestamp"], int(j["metadata"]["resourceVersion"])))
    for job in jobs:
        key = (job["metadata"]["namespace"], job["metadata"]["name"])
        phase = ((job.get("status") or {}).get("state") or {}).get("phase", "")
        if job["metadata"].get("deletionTimestamp") or phase not in ("Pending", "Running") or key not in unbound:
            continue
        waiting = sorted(unbound[key], key=lambda p: p["metadata"]["name"])
        replicas = sum(int(t.get("replicas", 1)) for t in job["spec"].get("tasks") or [])
        need = max(int(job["spec"].get("minAvailable", replicas)) - bound_live[key], 0)
        qname = job["spec"].get("queue") or "default"
        queue = store.peek("scheduling.volcano.sh", "queues", "", qname)
        state = ((queue or {}).get("status") or {}).get("state")
        if queue is None or state != "Open":
            why = f"queue {qname} not found" if queue is None else f"queue {qname} is {state or 'not open'}"
            for pod in waiting:
                _mark(sim, pod, why)
            continue
        trial = {n: dict(f) for n, f in free.items()}
        placed, first_miss = [], None
        for pod in waiting:
            node = next((n for n in nodes if not _why_not(pod, n, trial[n["metadata"]["name"]])), None)
            if node is None:
                first_miss = first_miss or pod
                continue
            for name, amount in P.requests(pod).items():
                trial[node["metadata"]["name"]][name] = trial[node["metadata"]["name"]].get(name, 0.0) - amount
            placed.append((pod, node["metadata"]["name"]))
        asked = Counter()
        for pod, _ in placed:
            asked.update(P.requests(pod))
        used = by_queue.get(qname, Counter())
        over = [r for r, cap in _capability(queue).items() if used.get(r, 0) + asked.get(r, 0) > cap + 1e-9]
        if over or len(placed) < need or not placed:
            why = (f"queue {qname} resource quota insufficient: {', '.join(sorted(over))}" if over
                   else _message(first_miss or waiting[0], nodes, trial if first_miss else free))
            for pod in waiting:
                _mark(sim, pod, why)
            continue
        free = trial
        by_queue.setdefault(qname, Counter()).update(asked)
        for pod, node in placed:
            ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            bound = store.update("", "pods", ns, name, lambda p, n=node: {**p, "spec": {**p["spec"], "nodeName": n}})
            if bound is not None:
                store.set_status("", "pods", ns, name, P.bound_status(bound, node))
                sim._event(ns, "Pod", name, "Scheduled", f"Successfully assigned {ns}/{name} to {node}")
