"""What one pod of a Volcano Job says about its replica (pure; pods as the API's JSON, ``dict``).

Keys Volcano's job controller puts on the pods it makes (``pkg/controllers/job/helpers``, ``batch/v1alpha1``):
the label and annotation ``volcano.sh/task-spec`` (the task's name), the label ``volcano.sh/job-name``, the
annotation ``volcano.sh/task-index`` (the replica's index in its task; releases before 1.9 set none, so the index is
also read from the pod's name, ``<job>-<task>-<index>`` as ``PodNameFmt`` makes it). Devices: the scheduler's
``volcano.sh/gpu-index`` annotation (``"0,2"``, written by Volcano's GPU-sharing plugins) where present, else the
pod's accelerator limits counted as indices ``0..n-1`` (the NVIDIA device plugin tells the API nothing more).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable

from crater_app.cluster.base import Placement, ReplicaStatus

LABEL_TASK_SPEC = "volcano.sh/task-spec"
LABEL_JOB_NAME = "volcano.sh/job-name"
ANNOTATION_TASK_INDEX = "volcano.sh/task-index"
ANNOTATION_GPU_INDEX = "volcano.sh/gpu-index"
#: pod phases after which the pod holds nothing on its node (core/v1 PodPhase)
FINISHED_POD_PHASES = frozenset({"Succeeded", "Failed"})
#: a container waiting for one of these will not start by itself: reported as the replica's reason
STUCK_WAITING = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CrashLoopBackOff",
                 "CreateContainerConfigError", "CreateContainerError", "RunContainerError")
#: the exit code a shell reports for a process killed by signal ``n`` is ``SIGNAL_BASE + n``
SIGNAL_BASE = 128
_INDEX_SUFFIX = re.compile(r"-(\d+)$")


def parse_time(text: object) -> datetime | None:
    """An RFC 3339 timestamp as the API writes it (``2026-12-01T10:00:00Z``) as an aware UTC datetime, or ``None``."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value.astimezone(timezone.utc) if value.tzinfo else value.replace(tzinfo=timezone.utc)


def meta(obj: dict) -> dict:
    """``obj``'s metadata (``{}`` when it has none)."""
    return obj.get("metadata") or {}


def task_of(pod: dict) -> str:
    """The task a pod belongs to (``volcano.sh/task-spec``, label or annotation; ``""`` when neither is set)."""
    m = meta(pod)
    return (m.get("labels") or {}).get(LABEL_TASK_SPEC) or (m.get("annotations") or {}).get(LABEL_TASK_SPEC) or ""


def index_of(pod: dict) -> int:
    """The replica index of a pod: ``volcano.sh/task-index``, else the number its name ends with, else 0."""
    m = meta(pod)
    raw = (m.get("annotations") or {}).get(ANNOTATION_TASK_INDEX)
    if isinstance(raw, str) and raw.isdigit():
        return int(raw)
    found = _INDEX_SUFFIX.search(m.get("name") or "")
    return int(found.group(1)) if found else 0


def holds_node(pod: dict) -> bool:
    """Whether the pod holds resources on a node: bound (``spec.nodeName``) and not ``Succeeded``/``Failed``."""
    return bool((pod.get("spec") or {}).get("nodeName")) and \
        (pod.get("status") or {}).get("phase") not in FINISHED_POD_PHASES


def device_count(pod: dict, accelerators: Iterable[str]) -> int:
    """Accelerator devices the pod's containers ask for (their limits, else requests), all resource names in
    ``accelerators`` together."""
    names = tuple(accelerators)
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        amounts = res.get("limits") or res.get("requests") or {}
        for name in names:
            try:
                total += int(str(amounts.get(name, 0)))
            except ValueError:
                continue
    return total


def devices_of(pod: dict, accelerators: Iterable[str]) -> tuple[int, ...]:
    """The device indices a pod holds on its node: ``volcano.sh/gpu-index`` when the scheduler wrote it, else
    ``0..n-1`` for its ``n`` accelerator devices (:func:`device_count`)."""
    raw = (meta(pod).get("annotations") or {}).get(ANNOTATION_GPU_INDEX)
    if isinstance(raw, str) and raw:
        parts = [p.strip() for p in raw.split(",")]
        if all(p.isdigit() for p in parts):
            return tuple(int(p) for p in parts)
    return tuple(range(device_count(pod, accelerators)))


@dataclass(frozen=True)
class PodFacts:
    """What a pod's status says, in Crater's words: ``reason`` (CamelCase: ``Completed``, ``Error``, ``Signaled``,
    ``OOMKilled``, ``Evicted``, ``DeadlineExceeded``, ``Unschedulable``, one of :data:`STUCK_WAITING`, or ``""``),
    ``message`` (Kubernetes' text), ``exit_code`` of its first container's last end, ``restarts`` all containers
    together, ``started_at``/``finished_at`` (UTC) of its containers, ``image`` of the container the reason is
    about."""

    reason: str = ""
    message: str = ""
    exit_code: int | None = None
    restarts: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    image: str = ""

    @property
    def exit_signal(self) -> int | None:
        """The signal that ended the container, inferred from a shell-style exit code above 128 (Kubernetes reports
        only the code: 137 is SIGKILL, 143 SIGTERM)."""
        if self.exit_code is not None and self.exit_code > SIGNAL_BASE and self.reason != "OOMKilled":
            return self.exit_code - SIGNAL_BASE
        return None


def _terminated(cs: dict) -> dict | None:
    state = cs.get("state") or {}
    return state.get("terminated") or (cs.get("lastState") or {}).get("terminated")


def pod_facts(pod: dict) -> PodFacts:
    """The :class:`PodFacts` of one pod. The reason is the first that applies: the pod's own (``Evicted``,
    ``DeadlineExceeded`` from ``activeDeadlineSeconds``), a container ``OOMKilled``, a container stuck waiting
    (:data:`STUCK_WAITING`), ``Unschedulable`` (the ``PodScheduled`` condition), a non-zero exit (``Signaled`` above
    128, else ``Error``), ``Completed`` (exit 0)."""
    status = pod.get("status") or {}
    images = {c.get("name"): c.get("image", "") for c in (pod.get("spec") or {}).get("containers") or []}
    statuses = status.get("containerStatuses") or []
    restarts = sum(int(cs.get("restartCount") or 0) for cs in statuses)
    starts, ends = [], []
    exit_code = None
    for i, cs in enumerate(statuses):
        state = cs.get("state") or {}
        term = _terminated(cs)
        started = parse_time((state.get("running") or {}).get("startedAt")) or parse_time((term or {}).get("startedAt"))
        if started:
            starts.append(started)
        if term and not state.get("running"):
            if parse_time(term.get("finishedAt")):
                ends.append(parse_time(term.get("finishedAt")))
            if i == 0 or exit_code is None:
                exit_code = term.get("exitCode")
    common = {"restarts": restarts, "exit_code": exit_code, "started_at": min(starts) if starts else None,
              "finished_at": max(ends) if ends and status.get("phase") in FINISHED_POD_PHASES else None}
    if status.get("reason") in ("Evicted", "DeadlineExceeded"):
        return PodFacts(status["reason"], status.get("message") or "", **common)
    for cs in statuses:
        term = _terminated(cs)
        if term and term.get("reason") == "OOMKilled":
            return PodFacts("OOMKilled", term.get("message") or "", image=images.get(cs.get("name"), ""), **common)
    for cs in statuses:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in STUCK_WAITING:
            return PodFacts(waiting["reason"], waiting.get("message") or "",
                            image=cs.get("image") or images.get(cs.get("name"), ""), **common)
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False" \
                and cond.get("reason") == "Unschedulable":
            return PodFacts("Unschedulable", cond.get("message") or "", **common)
    if status.get("phase") in FINISHED_POD_PHASES or exit_code is not None:
        if exit_code is not None and exit_code != 0:
            reason = "Signaled" if exit_code > SIGNAL_BASE else "Error"
            return PodFacts(reason, status.get("message") or "", **common)
        if status.get("phase") == "Succeeded" or exit_code == 0:
            return PodFacts("Completed", "", **common)
    return PodFacts(status.get("reason") or "", status.get("message") or "", **common)


def replica_status(pod: dict, facts: PodFacts | None = None) -> ReplicaStatus:
    """One pod as a :class:`ReplicaStatus`: task, index, the pod's phase (``Pending`` when it has none yet), node,
    exit code, reason and message (``facts``, :func:`pod_facts` when not given), restarts."""
    facts = facts or pod_facts(pod)
    return ReplicaStatus(task=task_of(pod), replica=index_of(pod),
                         phase=(pod.get("status") or {}).get("phase") or "Pending",
                         node=(pod.get("spec") or {}).get("nodeName") or "", exit_code=facts.exit_code,
                         reason=facts.reason, message=facts.message, restarts=facts.restarts)


def placement_of(pod: dict, accelerators: Iterable[str], devices: tuple[int, ...] | None = None) -> Placement | None:
    """Where a bound pod runs (task, index, node, ``devices`` - the backend's record of them - else
    :func:`devices_of`), or ``None`` before it is bound."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        return None
    return Placement(task=task_of(pod), replica=index_of(pod), node=node,
                     devices=devices if devices is not None else devices_of(pod, accelerators))
