"""What the reflectors have seen, indexed for the backend: Volcano Jobs and pods by workload uid (label
``crater.io/job-uid``), pods by node, nodes, Queues and the last events per workload. Fed one watch event at a time
(:meth:`ClusterCache.apply`, a re-list's differences included), which returns the workload uids whose objects
changed. Not thread-safe by itself: the backend holds its lock around every call.
"""

from __future__ import annotations

from collections import deque
from itertools import islice
from datetime import datetime, timedelta

from crater_app.cluster.kube import pods as podinfo
from crater_app.domain.naming import LABEL_JOB_UID
from crater_app.domain.times import utcnow

#: the kinds the backend watches (reflector names)
JOBS, PODS, NODES, QUEUES, EVENTS = "jobs", "pods", "nodes", "queues", "events"
KINDS = (JOBS, PODS, NODES, QUEUES, EVENTS)
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
#: events kept per workload
EVENTS_KEPT = 20
#: deleted pods kept per workload (for the exit status of a stopped one)
GONE_KEPT = 64


def key_of(obj: dict) -> tuple[str, str]:
    """``(namespace, name)`` of an object (namespace ``""`` for a cluster-scoped one)."""
    m = podinfo.meta(obj)
    return m.get("namespace") or "", m.get("name") or ""


def uid_label(obj: dict) -> str:
    """The ``crater.io/job-uid`` label of an object (``""`` when it has none)."""
    return (podinfo.meta(obj).get("labels") or {}).get(LABEL_JOB_UID) or ""


class ClusterCache:
    """The backend's view of the cluster (see the module). ``accelerators``: the extended resources counted as
    devices, in the order a node's devices are numbered (:func:`.inventory.node_devices`)."""

    def __init__(self, accelerators: tuple[str, ...] = ()) -> None:
        self.accelerators = tuple(accelerators)
        #: pod -> the device indices it was given on its node (kept until the pod is deleted; see :meth:`_assign`)
        self.devices: dict[tuple[str, str], tuple[int, ...]] = {}
        self._holding: set[tuple[str, str]] = set()  # pods whose recorded devices are in use
        self._used: dict[str, set[int]] = {}  # node -> device indices pods holding it have
        self.jobs: dict[str, dict] = {}  # uid -> Volcano Job
        self.last_jobs: dict[str, dict] = {}  # uid -> its last Job object, also after it was deleted
        self.pods: dict[str, dict[tuple[str, str], dict]] = {}  # uid -> (ns, name) -> pod
        self.gone_pods: dict[str, list[tuple[dict, datetime, datetime | None]]] = {}  # uid -> deleted pods
        self._deleting: dict[tuple[str, str], datetime] = {}  # pod -> when its deletionTimestamp was first seen
        self.all_pods: dict[tuple[str, str], dict] = {}  # every pod bound to a node (inventory)
        self.nodes: dict[str, dict] = {}
        self.queues: dict[str, dict] = {}
        self.events: dict[str, deque] = {}  # uid -> last events about its Job or pods
        self._job_names: dict[tuple[str, str], str] = {}  # (ns, job name) -> uid, for events and unlabelled pods

    def _pod_uid(self, pod: dict) -> str:
        ns, _ = key_of(pod)
        job = (podinfo.meta(pod).get("labels") or {}).get(podinfo.LABEL_JOB_NAME, "")
        return uid_label(pod) or self._job_names.get((ns, job), "")

    def apply(self, kind: str, event: str, obj: dict) -> set[str]:
        """One watch event (``ADDED``, ``MODIFIED``, ``DELETED``) of ``kind``; the uids it touches."""
        gone = event == DELETED
        if kind == JOBS:
            uid = uid_label(obj)
            if not uid:
                return set()
            if gone:
                self.jobs.pop(uid, None)
                self._job_names.pop(key_of(obj), None)
            else:
                self.jobs[uid] = obj
                self._job_names[key_of(obj)] = uid
            self.last_jobs[uid] = obj
            return {uid}
        if kind == PODS:
            key = key_of(obj)
            now = utcnow()
            if podinfo.meta(obj).get("deletionTimestamp") and not gone:
                self._deleting.setdefault(key, now)
            node = (obj.get("spec") or {}).get("nodeName") or ""
            if gone or not node:
                self.all_pods.pop(key, None)
            else:
                self.all_pods[key] = obj
            holds = not gone and podinfo.holds_node(obj)
            if holds and key not in self.devices:
                self.devices[key] = self._assign(obj)
                self._used.setdefault(node, set()).update(self.devices[key])
                self._holding.add(key)
            elif not holds and key in self._holding:  # it ended: its devices are free (its record stays)
                self._holding.discard(key)
                self._used.get(node, set()).difference_update(self.devices.get(key, ()))
            if gone:
                self.devices.pop(key, None)
            uid = self._pod_uid(obj)
            if not uid:
                if gone:
                    self._deleting.pop(key, None)
                return set()
            pods = self.pods.setdefault(uid, {})
            if gone:
                pods.pop(key, None)
                if not pods:
                    self.pods.pop(uid, None)
                self.gone_pods.setdefault(uid, []).append((obj, now, self._grace_end(key, obj)))
                del self.gone_pods[uid][:-GONE_KEPT]
            else:
                pods[key] = obj
            return {uid}
        if kind == NODES:
            name = key_of(obj)[1]
            if gone:
                self.nodes.pop(name, None)
            else:
                self.nodes[name] = obj
            return set()
        if kind == QUEUES:
            name = key_of(obj)[1]
            if gone:
                self.queues.pop(name, None)
            else:
                self.queues[name] = obj
            return set()
        if kind == EVENTS and not gone:
            involved = obj.get("involvedObject") or {}
            ns, name = involved.get("namespace") or "", involved.get("name") or ""
            uid = self._job_names.get((ns, name)) or self._job_names.get((ns, name.rsplit("-", 2)[0]), "")
            if uid:
                self.events.setdefault(uid, deque(maxlen=EVENTS_KEPT)).append(obj)
        return set()

    def _assign(self, pod: dict) -> tuple[int, ...]:
        """Device indices for a pod just bound: those Volcano's ``volcano.sh/gpu-index`` names, else, per
        accelerator resource, the lowest of that resource's indices on the node no other pod holding the node has
        (the API does not say which device a pod got; kept for the pod's life, so indices never move)."""
        if (podinfo.meta(pod).get("annotations") or {}).get(podinfo.ANNOTATION_GPU_INDEX):
            return podinfo.devices_of(pod, self.accelerators)
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = self.nodes.get(node_name) or {}
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        used = self._used.get(node_name, set())
        out: list[int] = []
        offset = 0
        for resource in self.accelerators:
            try:
                count = int(str(allocatable.get(resource, 0)))
            except ValueError:
                count = 0
            want = podinfo.device_count(pod, (resource,))
            if want:
                span = range(offset, offset + count) if count else range(offset, offset + want + len(used))
                out += list(islice((i for i in span if i not in used), want))
            offset += count
        return tuple(out)

    def _grace_end(self, key: tuple[str, str], pod: dict) -> datetime | None:
        """When a deleted pod's grace period ended: its ``deletionTimestamp`` (the API server sets it to the
        deletion time plus the grace period), or the time its deletion was first seen plus
        ``deletionGracePeriodSeconds`` where that is later."""
        seen = self._deleting.pop(key, None)
        m = podinfo.meta(pod)
        stamp = podinfo.parse_time(m.get("deletionTimestamp"))
        grace = m.get("deletionGracePeriodSeconds")
        by_grace = seen + timedelta(seconds=int(grace)) if seen is not None and isinstance(grace, int) else None
        ends = [t for t in (stamp, by_grace) if t is not None]
        return max(ends) if ends else None

    def pods_of(self, uid: str) -> list[dict]:
        """The pods of workload ``uid``."""
        return list(self.pods.get(uid, {}).values())

    def gone_of(self, uid: str) -> list[tuple[dict, datetime, datetime | None]]:
        """The deleted pods of ``uid`` (of its current run: cleared when a run starts) with the time each deletion
        was seen."""
        return list(self.gone_pods.get(uid, []))
