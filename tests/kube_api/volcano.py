"""Volcano's Job state machine for the cluster simulator: counts the Job's pods into ``status``, applies the
``policies`` (task-level before job-level, as Volcano's job controller does) on ``PodFailed``, ``PodEvicted``,
``TaskCompleted`` and ``exitCode``, and moves ``status.state.phase``."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from tests.kube_api import pods as P
from tests.kube_api.cluster import ACTION_PHASE, ENDING, FINAL, VC

if TYPE_CHECKING:
    from tests.kube_api.cluster import ClusterSimulator


def _action(job: dict, task: str, event: str, exit_code: int | None) -> str:
    tasks = {t["name"]: t for t in job["spec"].get("tasks") or []}
    for policies in ((tasks.get(task) or {}).get("policies") or [], job["spec"].get("policies") or []):
        for policy in policies:
            events = [policy.get("event"), *(policy.get("events") or [])]
            if event in events or "*" in events or (
                    exit_code is not None and policy.get("exitCode") is not None and policy["exitCode"] == exit_code):
                return policy.get("action", "")
    return ""


def _exit_code(pod: dict) -> int | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        term = (status.get("state") or {}).get("terminated")
        if term:
            return term.get("exitCode")
    return None


def _counts(job: dict, pods: list[dict]) -> dict:
    counts, tasks = Counter(), {}
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase", "Pending")
        task = (pod["metadata"].get("labels") or {}).get(P.TASK_SPEC, "")
        if pod["metadata"].get("deletionTimestamp"):
            counts["terminating"] += 1
        else:
            counts[phase.lower()] += 1
        tasks.setdefault(task, Counter())[phase] += 1
    replicas = sum(int(t.get("replicas", 1)) for t in job["spec"].get("tasks") or [])
    return {"pending": counts["pending"], "running": counts["running"], "succeeded": counts["succeeded"],
            "failed": counts["failed"], "terminating": counts["terminating"], "unknown": 0,
            "minAvailable": int(job["spec"].get("minAvailable", replicas)),
            "taskStatusCount": {t: {"phase": dict(c)} for t, c in sorted(tasks.items())}}


def _kill(sim: "ClusterSimulator", pods: list[dict]) -> None:
    for pod in pods:
        if not pod["metadata"].get("deletionTimestamp") and \
                (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            sim.store.delete("", "pods", pod["metadata"]["namespace"], pod["metadata"]["name"])


def _apply(sim: "ClusterSimulator", job: dict, pods: list[dict], action: str, event: str, pod: dict,
           counts: dict) -> bool:
    status = job.get("status") or {}
    message = f"{event} of pod {pod['metadata']['name']}"
    if action == "RestartJob":
        retries = int(status.get("retryCount") or 0)
        if retries >= int(job["spec"].get("maxRetry", 3)):
            _kill(sim, pods)
            sim._set_phase(job, "Failed", "MaxRetryExceeded", message, **counts)
        else:
            sim._set_phase(job, "Restarting", event, message, retryCount=retries + 1, **counts)
        return True
    if action in ACTION_PHASE:
        sim._set_phase(job, ACTION_PHASE[action], event, message, **counts)
        return True
    if action in ("RestartTask", "RestartPod"):
        task = (pod["metadata"].get("labels") or {}).get(P.TASK_SPEC)
        for other in pods if action == "RestartTask" else [pod]:
            if (other["metadata"].get("labels") or {}).get(P.TASK_SPEC) == task:
                sim.store.delete("", "pods", other["metadata"]["namespace"], other["metadata"]["name"])
        return True
    return False


def advance(sim: "ClusterSimulator", job: dict, pods: list[dict]) -> None:
    """One pass of the state machine for ``job`` with its current ``pods``."""
    status = job.get("status") or {}
    phase = (status.get("state") or {}).get("phase", "")
    counts = _counts(job, pods)
    if phase in FINAL or phase in ("", "Restarting"):
        if phase in FINAL:
            sim.store.update(*VC, job["metadata"]["namespace"], job["metadata"]["name"],
                             lambda j: {**j, "status": {**(j.get("status") or {}), **counts}}, subresource="status")
        return
    if phase in ENDING:
        alive = [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        if not alive:
            sim._set_phase(job, ENDING[phase], status["state"].get("reason", ""),
                           status["state"].get("message", ""), **counts)
        return
    for pod in pods:
        uid = pod["metadata"]["uid"]
        if (pod.get("status") or {}).get("phase") == "Failed" and uid not in sim._handled:
            sim._handled.add(uid)
            event = "PodEvicted" if (pod.get("status") or {}).get("reason") == "Evicted" else "PodFailed"
            task = (pod["metadata"].get("labels") or {}).get(P.TASK_SPEC, "")
            if _apply(sim, job, pods, _action(job, task, event, _exit_code(pod)), event, pod, counts):
                return
    for task in job["spec"].get("tasks") or []:
        done = counts["taskStatusCount"].get(task["name"], {}).get("phase", {}).get("Succeeded", 0)
        if done >= int(task.get("replicas", 1)):
            action = _action(job, task["name"], "TaskCompleted", None)
            pod = next(p for p in pods if (p["metadata"].get("labels") or {}).get(P.TASK_SPEC) == task["name"])
            if action and _apply(sim, job, pods, action, "TaskCompleted", pod, counts):
                return
    replicas = sum(int(t.get("replicas", 1)) for t in job["spec"].get("tasks") or [])
    min_available = counts["minAvailable"]
    if counts["succeeded"] + counts["failed"] >= replicas and len(pods) >= replicas:
        min_success = int(job["spec"].get("minSuccess") or min_available)
        if counts["succeeded"] >= min_success:
            sim._set_phase(job, "Completed", "", "", **counts)
        else:
            sim._set_phase(job, "Failed", "PodFailed", f"{counts['failed']} of {replicas} pods failed", **counts)
    elif counts["running"] + counts["succeeded"] >= min_available and counts["running"]:
        sim._set_phase(job, "Running", "", "", **counts)
    else:
        sim._set_phase(job, phase, "", "", **counts)
