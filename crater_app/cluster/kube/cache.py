"""What the reflectors have seen, indexed for the backend: Volcano Jobs and pods by workload uid (label
``crater.io/job-uid``), pods by node, nodes, Queues and the last events per workload. Fed one watch event at a time
(:meth:`ClusterCache.apply`) or a whole re-list (:meth:`ClusterCache.replace`); each returns the workload uids whose
objects changed. Not thread-safe by itself: the backend holds its lock around every call.
"""

from __future__ import annotations

from collections import deque

from crater_app.cluster.kube import pods as podinfo
from crater_app.domain.naming import LABEL_JOB_UID

#: the kinds the backend watches (reflector names)
JOBS, PODS, NODES, QUEUES, EVENTS = "jobs", "pods", "nodes", "queues", "events"
KINDS = (JOBS, PODS, NODES, QUEUES, EVENTS)
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
#: events kept per workload
EVENTS_KEPT = 20


def key_of(obj: dict) -> tuple[str, str]:
    """``(namespace, name)`` of an object (namespace ``""`` for a cluster-scoped one)."""
    m = podinfo.meta(obj)
    return m.get("namespace") or "", m.get("name") or ""


def uid_label(obj: dict) -> str:
    """The ``crater.io/job-uid`` label of an object (``""`` when it has none)."""
    return (podinfo.meta(obj).get("labels") or {}).get(LABEL_JOB_UID) or ""


class ClusterCache:
    """The backend's view of the cluster (see the module)."""

    def __init__(self) -> None:
        self.jobs: dict[str, dict] = {}  # uid -> Volcano Job
        self.last_jobs: dict[str, dict] = {}  # uid -> its last Job object, also after it was deleted
        self.pods: dict[str, dict[tuple[str, str], dict]] = {}  # uid -> (ns, name) -> pod
        self.all_pods: dict[tuple[str, str], dict] = {}  # every pod bound to a node (inventory)
        self.nodes: dict[str, dict] = {}
        self.queues: dict[str, dict] = {}
        self.events: dict[str, deque] = {}  # uid -> last events about its Job or pods
        self._job_names: dict[tuple[str, str], str] = {}  # (ns, job name) -> uid, for events and unlabelled pods
        self.synced: set[str] = set()  # kinds listed at least once

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
            if gone or not (obj.get("spec") or {}).get("nodeName"):
                self.all_pods.pop(key, None)
            else:
                self.all_pods[key] = obj
            uid = self._pod_uid(obj)
            if not uid:
                return set()
            pods = self.pods.setdefault(uid, {})
            if gone:
                pods.pop(key, None)
                if not pods:
                    self.pods.pop(uid, None)
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

    def replace(self, kind: str, objects: list[dict]) -> set[str]:
        """A re-list of ``kind``: what is not in ``objects`` is deleted, the rest applied; the uids touched."""
        self.synced.add(kind)
        if kind == JOBS:
            current = list(self.jobs.values())
        elif kind == PODS:
            current = [p for pods in self.pods.values() for p in pods.values()] + list(self.all_pods.values())
        elif kind == NODES:
            current = list(self.nodes.values())
        elif kind == QUEUES:
            current = list(self.queues.values())
        else:
            return set()
        keep = {key_of(o) for o in objects}
        touched: set[str] = set()
        for old in current:
            if key_of(old) not in keep:
                touched |= self.apply(kind, DELETED, old)
        for obj in objects:
            touched |= self.apply(kind, MODIFIED, obj)
        return touched

    def pods_of(self, uid: str) -> list[dict]:
        """The pods of workload ``uid``."""
        return list(self.pods.get(uid, {}).values())
