"""Pods as Volcano's job controller makes them and as the kubelet reports them, for the cluster simulator.

:func:`make_pod` builds replica ``index`` of a task (``<job>-<task>-<index>``, Volcano's labels and annotations,
an ``ownerReference`` to the Job); the ``*_status`` functions give the pod ``status`` of each stage (unscheduled,
bound, running, terminated); :func:`requests` sums a pod's container requests (limits where no request is given,
as the API server defaults them).
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone

from kubernetes.utils import parse_quantity

JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
QUEUE_NAME = "volcano.sh/queue-name"
GROUP_NAME = "scheduling.k8s.io/group-name"


def iso(ts: float) -> str:
    """A UTC timestamp as the API writes it (``2026-12-01T16:00:00Z``)."""
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def podgroup_name(job: dict) -> str:
    """The PodGroup Volcano makes for a Job: ``<job>-<job uid>``."""
    return f"{job['metadata']['name']}-{job['metadata']['uid']}"


def owner_ref(job: dict) -> dict:
    """The controller reference Volcano puts on a Job's pods and PodGroup."""
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": job["metadata"]["name"],
            "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def make_pod(job: dict, task: dict, index: int) -> dict:
    """Replica ``index`` of ``task`` of ``job`` (no status: the kubelet's part)."""
    meta, spec = job["metadata"], job["spec"]
    template = copy.deepcopy(task.get("template") or {})
    tmeta = template.get("metadata") or {}
    pod_spec = template.get("spec") or {}
    pod_spec.setdefault("schedulerName", spec.get("schedulerName") or "volcano")
    for container in pod_spec.get("containers") or []:
        env = container.setdefault("env", [])
        env += [{"name": "VC_TASK_INDEX", "value": str(index)}, {"name": "VK_TASK_INDEX", "value": str(index)}]
    labels = {**(tmeta.get("labels") or {}), JOB_NAME: meta["name"], JOB_NAMESPACE: meta["namespace"],
              TASK_SPEC: task["name"], QUEUE_NAME: spec.get("queue") or "default"}
    annotations = {**(tmeta.get("annotations") or {}), GROUP_NAME: podgroup_name(job), TASK_SPEC: task["name"],
                   TASK_INDEX: str(index), JOB_NAME: meta["name"]}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{meta['name']}-{task['name']}-{index}", "namespace": meta["namespace"],
                         "labels": labels, "annotations": annotations, "ownerReferences": [owner_ref(job)]},
            "spec": pod_spec}


def requests(pod: dict) -> dict[str, float]:
    """The pod's summed container requests by resource name (``cpu`` in cores, ``memory`` in bytes)."""
    total: dict[str, float] = {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        res = container.get("resources") or {}
        asked = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        for name, qty in asked.items():
            total[name] = total.get(name, 0.0) + float(parse_quantity(qty))
    return total


def containers(pod: dict) -> list[str]:
    """The names of the pod's containers."""
    return [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]


def argv(pod: dict) -> tuple[str, ...]:
    """The first container's ``command`` + ``args``."""
    first = ((pod.get("spec") or {}).get("containers") or [{}])[0]
    return tuple(first.get("command") or ()) + tuple(first.get("args") or ())


def unschedulable_status(message: str) -> dict:
    """A pending pod the scheduler could not place."""
    return {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                "reason": "Unschedulable", "message": message}]}


def _statuses(pod: dict, state: dict, ready: bool = False) -> list[dict]:
    images = {c["name"]: c.get("image", "") for c in pod["spec"].get("containers") or []}
    return [{"name": n, "image": images[n], "imageID": "", "ready": ready, "restartCount": 0, "state": state} for n in images]


def bound_status(pod: dict, node: str, waiting: str = "ContainerCreating", message: str = "") -> dict:
    """A pod bound to ``node`` whose containers are not running yet (``waiting`` reason)."""
    state = {"waiting": {"reason": waiting, **({"message": message} if message else {})}}
    return {"phase": "Pending", "hostIP": "10.0.0.1",
            "conditions": [{"type": "PodScheduled", "status": "True"}], "containerStatuses": _statuses(pod, state)}


def running_status(pod: dict, now: float) -> dict:
    """A pod whose containers run."""
    return {"phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.1.0.1", "startTime": iso(now),
            "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
            "containerStatuses": _statuses(pod, {"running": {"startedAt": iso(now)}}, ready=True)}


def terminated_status(pod: dict, exit_code: int, started: str, now: float, reason: str = "") -> dict:
    """A pod whose containers ended with ``exit_code`` (reason ``Completed``, ``Error``, or the given one, e.g.
    ``OOMKilled`` for 137 as the kubelet reports an out-of-memory kill)."""
    reason = reason or ("Completed" if exit_code == 0 else "OOMKilled" if exit_code == 137 else "Error")
    state = {"terminated": {"exitCode": exit_code, "reason": reason, "startedAt": started, "finishedAt": iso(now)}}
    return {"phase": "Succeeded" if exit_code == 0 else "Failed", "hostIP": "10.0.0.1", "startTime": started,
            "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}],
            "containerStatuses": _statuses(pod, state)}


def evicted_status(pod: dict, message: str) -> dict:
    """A pod the kubelet evicted (phase ``Failed``, reason ``Evicted``)."""
    status = dict(pod.get("status") or {})
    return {**status, "phase": "Failed", "reason": "Evicted", "message": message}
