"""A Volcano Job and its pods as a :class:`~crater_app.cluster.base.WorkloadStatus` (pure; objects as the API's JSON).

Volcano's Job phases (``status.state.phase``, ``batch.volcano.sh/v1alpha1`` ``JobPhase``) in Crater's terms
(:data:`PHASES`), the Volcano phase kept as ``raw_state``:

=============  ============  ===================================================================================
Volcano        Crater        why
=============  ============  ===================================================================================
(none yet)     Queued        the job controller has not seen the new Job yet
Pending        Queued        the gang is not placed (the reason says why: a pod ``Unschedulable``, an image pull)
Running        Running       ``minAvailable`` pods run
Restarting     Running       Volcano's ``RestartJob`` policy is recreating the pods: the job keeps its place and
                             its devices until they are released (Crater's phases never go back to ``Queued`` from
                             ``Running``); ``retries`` (``status.retryCount``) in the arguments
Completing     Running       a task that ends the job has finished and the other pods are being stopped: nobody
                             asked for a stop (so not ``Stopping``), its devices are still held
Completed      Succeeded     (while a pod still holds its node: ``Running``, ``Completing`` - the pods' watch is
                             behind the Jobs'; a final Failed/Aborted/Terminated likewise is ``Stopping``)
Aborting       Stopping      a stop is under way (Crater's, or an ``AbortJob`` policy)
Aborted        Cancelled     when Crater asked for the stop (:class:`Stop`), else ``Failed`` with the pod reason
                             that caused it (``Evicted``, ``OOMKilled``, ...)
Terminating    Stopping      as Aborting (a ``TerminateJob`` policy: restart_policy ``fail``)
Terminated     Cancelled     as Aborted
Failed         Failed        with the failing pod's reason (``OOMKilled``, ``Evicted``, ``DeadlineExceeded``,
                             ``Error`` with its exit code, ``Signaled``)
anything else  ``None``      kept verbatim (``raw_state``, Volcano's reason and message)
=============  ============  ===================================================================================

A Job being deleted (``metadata.deletionTimestamp``, or gone from the API) is ``Stopping`` while one of its pods
still holds a node, then final: ``Cancelled`` (Crater's cancel), ``Failed`` (``DeadlineExceeded``: Crater's
deadline), its last phase when that was final (a ``ttlSecondsAfterFinished`` clean-up), else ``Failed`` with reason
``Deleted`` (deleted outside Crater). A stop Crater asked for on a Job none of whose pods holds a node yet is final at
once (a queued job is ``Cancelled`` at once). Every status has a catalogue code (``event.kube.*``, ``i18n/kube``).
"""

from __future__ import annotations

import dataclasses
import json
import signal
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable, Mapping, NamedTuple

from crater_app import i18n
from crater_app.cluster.base import ReplicaStatus, WorkloadStatus
from crater_app.cluster.kube import pods as podinfo
from crater_app.domain.jobs import JobPhase
from crater_app.domain.times import utcnow

#: the annotation the backend writes on a Job it stops: the stop as JSON (:meth:`Stop.to_annotation`), so that a
#: Crater that restarts while the Job is being deleted still knows the stop was its own
ANNOTATION_STOP = "crater.io/stop"
#: the annotation holding the workload's ``attempt`` (written by the manifest builder)
ANNOTATION_ATTEMPT = "crater.io/attempt"
#: the annotation holding the workload's ``max_runtime_s`` (written by the builder, moved by ``extend``)
ANNOTATION_MAX_RUNTIME = "crater.io/max-runtime-s"

PHASES: dict[str, JobPhase] = {
    "": JobPhase.QUEUED, "Pending": JobPhase.QUEUED, "Running": JobPhase.RUNNING, "Restarting": JobPhase.RUNNING,
    "Completing": JobPhase.RUNNING, "Completed": JobPhase.SUCCEEDED, "Aborting": JobPhase.STOPPING,
    "Aborted": JobPhase.FAILED, "Terminating": JobPhase.STOPPING, "Terminated": JobPhase.FAILED,
    "Failed": JobPhase.FAILED,
}
#: pod reasons that make a job fail, the order a failed job's reason is looked for in
_FAILURES = ("OOMKilled", "Evicted", "DeadlineExceeded", "Signaled", "Error")
STOP_CANCEL, STOP_DEADLINE = "cancel", "deadline"
SIGTERM, SIGKILL = int(signal.SIGTERM), int(signal.SIGKILL)


class Said(NamedTuple):
    """A status message: catalogue ``code`` (``event.<code>``), its ``args`` and the English ``message``."""

    code: str
    args: dict
    message: str


def say(code: str, **args: object) -> Said:
    """The message ``event.<code>`` with ``args``, and its English sentence."""
    return Said(code, args, i18n.render(i18n.DEFAULT_LANGUAGE, f"event.{code}", args, fallback=code))


@dataclass(frozen=True)
class Stop:
    """A stop Crater asked for: ``kind`` :data:`STOP_CANCEL` (``reason``, ``code``, ``args`` as the services gave
    them to ``cancel``) or :data:`STOP_DEADLINE` (``max_runtime_s`` exceeded)."""

    kind: str
    reason: str = ""
    code: str = ""
    args: dict = field(default_factory=dict, hash=False)
    max_runtime_s: int = 0

    def to_annotation(self) -> str:
        """The stop as the JSON text of :data:`ANNOTATION_STOP`."""
        return json.dumps({"kind": self.kind, "reason": self.reason, "code": self.code, "args": self.args,
                           "max_runtime_s": self.max_runtime_s}, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_job(cls, job: dict | None) -> "Stop | None":
        """The stop recorded on ``job`` (:data:`ANNOTATION_STOP`), or ``None`` (none, or unreadable)."""
        raw = (podinfo.meta(job or {}).get("annotations") or {}).get(ANNOTATION_STOP)
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            return None
        if not isinstance(data, dict) or data.get("kind") not in (STOP_CANCEL, STOP_DEADLINE):
            return None
        return cls(data["kind"], str(data.get("reason") or ""), str(data.get("code") or ""),
                   dict(data.get("args") or {}), int(data.get("max_runtime_s") or 0))


def attempt_of(job: dict | None) -> int:
    """The workload's attempt written on ``job`` (:data:`ANNOTATION_ATTEMPT`), 1 when absent."""
    raw = (podinfo.meta(job or {}).get("annotations") or {}).get(ANNOTATION_ATTEMPT, "1")
    return int(raw) if str(raw).isdigit() and int(raw) > 0 else 1


def volcano_phase(job: dict | None) -> str:
    """The Job's ``status.state.phase`` (``""`` before Volcano's controller has set one)."""
    return (((job or {}).get("status") or {}).get("state") or {}).get("phase") or ""


def _key(pod: dict) -> tuple[str, str]:
    m = podinfo.meta(pod)
    return m.get("namespace") or "", m.get("name") or ""


def _replica_name(pod: dict) -> str:
    return f"{podinfo.task_of(pod)}-{podinfo.index_of(pod)}"


def _ordered(job: dict | None, pods: Iterable[dict]) -> list[dict]:
    """Pods in the Job's task order, then by index."""
    order = {t.get("name"): i for i, t in enumerate(((job or {}).get("spec") or {}).get("tasks") or [])}
    return sorted(pods, key=lambda p: (order.get(podinfo.task_of(p), len(order)), podinfo.task_of(p),
                                       podinfo.index_of(p)))


def _waiting(facts: list[tuple[dict, podinfo.PodFacts]]) -> Said | None:
    """Why a job is not running yet or not well, from its pods and their facts: a container stuck waiting first (an
    image that cannot be pulled will not fix itself), then a pod the scheduler cannot place."""
    for pod, f in facts:
        if f.reason in podinfo.STUCK_WAITING:
            return say("kube.replica_waiting", replica=_replica_name(pod), reason=f.reason, image=f.image,
                       message=f.message)
    for pod, f in facts:
        if f.reason == "Unschedulable":
            return say("kube.unschedulable", replica=_replica_name(pod), message=f.message)
    return None


def _failure(facts: list[tuple[dict, podinfo.PodFacts]]) -> tuple[str, Said, int | None, int | None] | None:
    """(reason, message, exit code, signal) of the pod that failed the job, by :data:`_FAILURES` order."""
    for wanted in _FAILURES:
        for pod, f in facts:
            if f.reason != wanted:
                continue
            replica, code = _replica_name(pod), f.exit_code
            if wanted == "OOMKilled":
                said = say("kube.oom_killed", replica=replica, exit_code=code)
            elif wanted == "Evicted":
                said = say("kube.evicted", replica=replica, node=(pod.get("spec") or {}).get("nodeName") or "",
                           message=f.message)
            elif wanted == "DeadlineExceeded":
                said = say("kube.pod_deadline", replica=replica)
            elif wanted == "Signaled":
                said = say("kube.killed_by_signal", replica=replica, signal=f.exit_signal, exit_code=code)
            else:
                said = say("replicas.failed", task=podinfo.task_of(pod), replica=podinfo.index_of(pod),
                           exit_code=code)
            return wanted, said, code, f.exit_signal
    return None


#: a deleted pod: its last object, when its removal was seen and when its grace period ended (``None``: unknown)
Gone = tuple[dict, datetime, "datetime | None"]


def _last_exit(pods: list[dict], gone: list[Gone]) -> tuple[int | None, int | None]:
    """The exit code and signal a stopped job died with: the first of its pods (present or gone) that has one;
    else, for a pod that was running when it was deleted and left no status, what graceful deletion sent it: the
    kubelet sends SIGTERM, then SIGKILL once the grace period is over, so SIGTERM (143) for a pod removed within
    its grace, SIGKILL (137) after."""
    for pod in [*pods, *(g[0] for g in gone)]:
        f = podinfo.pod_facts(pod)
        if f.exit_code is not None:
            return f.exit_code, f.exit_signal
    for pod, removed, kill_at in gone:
        if (pod.get("status") or {}).get("phase") == "Running" and (pod.get("spec") or {}).get("nodeName"):
            sig = SIGKILL if kill_at is not None and removed > kill_at else SIGTERM
            return podinfo.SIGNAL_BASE + sig, sig
    return None, None


#: the phase of a replica that Crater or Volcano stopped (its pod deleted while it ran), as the local backend says it
STOPPED = "Stopped"


def stopped_by(job: dict | None) -> str:
    """Why the Job's running pods were stopped, as the local backend words it: ``Cancelled`` or ``DeadlineExceeded``
    (a stop Crater asked for, :class:`Stop`), ``GangEnded`` (Volcano's ``CompleteJob``: a task that ends the job
    finished), ``ReplicaFailed`` (an ``AbortJob``/``TerminateJob`` policy after a replica failed), ``Restarting``
    (``RestartJob``)."""
    stop = Stop.from_job(job)
    if stop is not None:
        return "Cancelled" if stop.kind == STOP_CANCEL else "DeadlineExceeded"
    phase = volcano_phase(job)
    if phase in ("Restarting", "Pending", "Running"):
        return "Restarting"
    return "GangEnded" if phase in ("Completing", "Completed") else "ReplicaFailed"


def pending_replicas(job: dict | None, facts: list[tuple[dict, podinfo.PodFacts]], gone: list[Gone] = ()
                     ) -> tuple[ReplicaStatus, ...]:
    """Every replica the Job's tasks have (``spec.tasks[].replicas``), in task order: from its pod (and the pod's
    facts) where there is one; else from its deleted pod (a pod Crater or Volcano stopped - a cancel, a
    ``CompleteJob`` or ``TerminateJob`` deletes the pods still running - is ``Stopped`` with the reason
    :func:`stopped_by` gives and the exit status :func:`_last_exit` infers); else
    ``Pending`` (the job controller has not made the pod yet). ``restarts`` counts the pod's container restarts and
    the Job's restarts by Volcano (``status.retryCount``: a ``RestartJob`` makes every pod anew)."""
    retries = int((((job or {}).get("status") or {}).get("retryCount")) or 0)
    by_replica = {(podinfo.task_of(p), podinfo.index_of(p)): (p, f) for p, f in facts}
    stopped = {(podinfo.task_of(g[0]), podinfo.index_of(g[0])): g for g in gone}
    out = []

    def counted(r: ReplicaStatus) -> ReplicaStatus:
        return dataclasses.replace(r, restarts=r.restarts + retries) if retries else r

    for task in ((job or {}).get("spec") or {}).get("tasks") or []:
        name = task.get("name", "")
        for i in range(int(task.get("replicas") or 0)):
            found = by_replica.pop((name, i), None)
            if found is not None:
                out.append(counted(podinfo.replica_status(*found)))
            elif (name, i) in stopped:
                last = podinfo.replica_status(stopped[(name, i)][0])
                if last.phase not in podinfo.FINISHED_POD_PHASES:
                    code, _ = _last_exit([], [stopped[(name, i)]])
                    last = dataclasses.replace(last, phase=STOPPED, exit_code=code, reason=stopped_by(job))
                out.append(counted(last))
            else:
                out.append(ReplicaStatus(name, i, "Pending"))
    out += [counted(podinfo.replica_status(p, f)) for p, f in by_replica.values()]  # tasks the spec does not name
    return tuple(out)


def _completed(job: dict | None, pods: list[dict]) -> Said:
    """The message of a Completed Job: the task whose end ended it (a task-level ``TaskCompleted -> CompleteJob``
    policy), else how many of its replicas exited with code 0."""
    tasks = ((job or {}).get("spec") or {}).get("tasks") or []
    for task in tasks:
        if any(p.get("event") == "TaskCompleted" and p.get("action") == "CompleteJob"
               for p in task.get("policies") or []):
            return say("replicas.task_completed", task=task.get("name", ""))
    total = sum(int(t.get("replicas") or 0) for t in tasks)
    if total <= 1:
        return say("kube.completed")
    succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
    return say("replicas.completed", replicas=total, succeeded=succeeded)


def _cancelled(stop: Stop) -> Said:
    if stop.code:  # the services' own code (job.cancelled_by): their reason is its English sentence
        english = i18n.render(i18n.DEFAULT_LANGUAGE, f"event.{stop.code}", stop.args, fallback=stop.code)
        return Said(stop.code, dict(stop.args), stop.reason or english)
    if stop.reason:
        return say("kube.cancelled_because", reason=stop.reason)
    return say("kube.cancelled")


def _stopping(stop: Stop) -> tuple[str, Said]:
    if stop.kind == STOP_DEADLINE:
        return "DeadlineExceeded", say("kube.stopping_deadline", max_runtime_s=stop.max_runtime_s)
    if stop.code:
        return "CancelRequested", say("kube.stopping_cancel", reason=i18n.part(f"event.{stop.code}", **stop.args))
    return "CancelRequested", say("kube.stopping_cancel", reason=stop.reason or "cancelled")


def workload_status(uid: str, job: dict | None, pods: Iterable[dict], *, accelerators: Iterable[str],
                    stop: Stop | None = None, deleted: bool = False, gone: Iterable[Gone] = (),
                    now: datetime | None = None,
                    devices: Mapping[tuple[str, str], tuple[int, ...]] | None = None) -> WorkloadStatus:
    """The status of workload ``uid`` from its Volcano ``job`` (its last known object when ``deleted``) and its
    ``pods``, mapped as the module says; ``replicas`` has every replica of the Job's tasks (``Pending`` before its
    pod exists).

    Args:
        accelerators: the extended resource names counted as devices (placements).
        stop: the stop Crater asked for; ``None``: the one recorded on ``job`` (:data:`ANNOTATION_STOP`), if any.
        deleted: the Job is gone from the API (its pods may remain for a while).
        gone: the pods of this run already deleted (:data:`Gone`; a stopped job's exit status: :func:`_last_exit`).
        now: the time a final status with no time of its own ends at (default: now, UTC).
        devices: pod ``(namespace, name)`` -> the device indices the backend gave it on its node (placements;
            :func:`.pods.devices_of` for a pod it does not name).
    """
    accelerators = tuple(accelerators)
    gone = list(gone)
    pods = _ordered(job, pods)
    stop = stop or Stop.from_job(job)
    raw = volcano_phase(job)
    state = ((job or {}).get("status") or {}).get("state") or {}
    attempt = attempt_of(job)
    devices = devices or {}
    placements = tuple(p for p in (podinfo.placement_of(pod, accelerators, devices.get(_key(pod))) for pod in pods)
                       if p is not None)
    pairs = [(p, podinfo.pod_facts(p)) for p in pods]
    starts = [f.started_at for _, f in pairs if f.started_at]
    ends = [f.finished_at for _, f in pairs if f.finished_at]
    started = min(starts) if starts else (podinfo.parse_time(state.get("lastTransitionTime"))
                                          if raw in ("Running", "Completed", "Completing") else None)
    finished = max(ends) if ends else podinfo.parse_time(state.get("lastTransitionTime"))
    holding = any(podinfo.holds_node(p) for p in pods)
    going = deleted or bool(podinfo.meta(job or {}).get("deletionTimestamp"))
    mapped = PHASES.get(raw)

    def make(phase: JobPhase | None, reason: str, said: Said, exit_code: int | None = None,
             exit_signal: int | None = None) -> WorkloadStatus:
        final = phase is not None and phase.terminal
        return WorkloadStatus(
            uid=uid, phase=phase, raw_state=raw, reason=reason, message=said.message, code=said.code,
            args=said.args, exit_code=exit_code, exit_signal=exit_signal, started_at=started,
            finished_at=(finished or started or now or utcnow()) if final else None,
            attempt=attempt, placements=placements, replicas=pending_replicas(job, pairs, gone))

    def ended_by_stop(s: Stop) -> WorkloadStatus:
        code, sig = _last_exit(pods, gone)
        if s.kind == STOP_DEADLINE:
            return make(JobPhase.FAILED, "DeadlineExceeded", say("kube.deadline_exceeded",
                                                                  max_runtime_s=s.max_runtime_s), code, sig)
        return make(JobPhase.CANCELLED, "Cancelled", _cancelled(s), code, sig)

    if mapped is not None and mapped.terminal and holding:
        # Volcano ends a Job once its pods have ended; a pod still holding its node is one whose end the pods'
        # watch has not brought yet (the two watches are not ordered): the Job is still ending.
        if mapped == JobPhase.SUCCEEDED:
            return make(JobPhase.RUNNING, "Completing", say("kube.completing"))
        if stop is not None:
            reason, said = _stopping(stop)
            return make(JobPhase.STOPPING, reason, said)
        return make(JobPhase.STOPPING, raw, say("kube.stopping", state=raw, message=state.get("message") or ""))
    if mapped == JobPhase.SUCCEEDED:
        return make(JobPhase.SUCCEEDED, "Completed", _completed(job, pods), 0)
    if raw == "Failed" or (mapped == JobPhase.FAILED and stop is None):
        failure = _failure(pairs)
        if failure is not None:
            reason, said, code, sig = failure
            return make(JobPhase.FAILED, reason, said, code, sig)
        return make(JobPhase.FAILED, raw or "Failed", say("kube.job_failed", state=raw or "Failed",
                                                          message=state.get("message") or state.get("reason") or ""))
    if stop is not None:
        if holding:
            reason, said = _stopping(stop)
            return make(JobPhase.STOPPING, reason, said)
        return ended_by_stop(stop)
    if going:
        if holding:
            return make(JobPhase.STOPPING, "Deleting", say("kube.deleting", name=podinfo.meta(job or {}).get("name", "")))
        return make(JobPhase.FAILED, "Deleted", say("kube.deleted", name=podinfo.meta(job or {}).get("name", "")))
    if mapped is None:
        return WorkloadStatus(uid=uid, phase=None, raw_state=raw, reason=state.get("reason") or raw,
                              message=state.get("message") or "", attempt=attempt, placements=placements,
                              replicas=pending_replicas(job, pairs, gone), started_at=started)
    if mapped == JobPhase.QUEUED:
        queue = ((job or {}).get("spec") or {}).get("queue") or ""
        return make(JobPhase.QUEUED, "Pending", _waiting(pairs) or say("kube.queued", queue=queue))
    if mapped == JobPhase.STOPPING:
        return make(JobPhase.STOPPING, raw, say("kube.stopping", state=raw, message=state.get("message") or ""))
    if raw == "Restarting":
        return make(JobPhase.RUNNING, "Restarting", say("kube.restarting",
                                                        retries=int(job.get("status", {}).get("retryCount") or 0)))
    if raw == "Completing":
        return make(JobPhase.RUNNING, "Completing", say("kube.completing"))
    stuck = _waiting(pairs)
    if stuck is not None and stuck.code == "kube.replica_waiting":
        return make(JobPhase.RUNNING, stuck.args["reason"], stuck)
    nodes = list(dict.fromkeys(p.node for p in placements))
    return make(JobPhase.RUNNING, "Running", say("kube.running", nodes=nodes))
