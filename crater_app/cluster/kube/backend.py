"""The Kubernetes backend: :class:`KubernetesBackend`, a ``ClusterBackend`` of Volcano Jobs and Queues.

Reads come from caches fed by list-then-watch reflectors (:mod:`.watching`: vcjobs, pods, events, nodes, queues;
a re-list after ``410 Gone`` reports its differences as events),
never from a call on the submit path; every change a watch brings is turned into the workload's status
(:mod:`.status`) and, when it differs from the last one, logged (:mod:`.changes`). Writes are the API calls of
:mod:`.calls`: ``create`` POSTs the Volcano Job (and a session's Service); ``cancel`` records the stop on the Job
and deletes it with foreground propagation; failed calls are tried again by :meth:`tick` with back-off. The
workloads' records (:mod:`.records`) hold what Crater asked for; after a restart they are rebuilt from the Jobs.

Deadlines: the backend turns :attr:`KubeOptions.pod_deadlines` off (Kubernetes lets a pod's
``activeDeadlineSeconds`` only be lowered, and :meth:`extend` may move a deadline later) and stops a workload
itself once ``max_runtime_s`` has passed since its start (:meth:`tick`, the leader's loop); the deadline is kept
on the Job as the ``crater.io/max-runtime-s`` annotation, so a new leader knows it.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Callable, Mapping

from crater_app.cluster import base
from crater_app.cluster.base import Changes, NodeInventory, Workload, WorkloadStatus
from crater_app.cluster.kube import cache as kinds
from crater_app.cluster.kube import inventory as inv
from crater_app.cluster.kube import pods as podinfo
from crater_app.cluster.kube.cache import ClusterCache
from crater_app.cluster.kube.calls import ApiError, Calls
from crater_app.cluster.kube.changes import ChangeLog
from crater_app.cluster.kube.namespace_manifests import project_namespace_objects
from crater_app.cluster.kube.object_names import member_queue_name, namespace_of, others_queue_name, project_queue_name
from crater_app.cluster.kube.options import KubeOptions
from crater_app.cluster.kube.queue_manifest import project_queues
from crater_app.cluster.kube.queues import QueueSync
from crater_app.cluster.kube.records import CREATED, PENDING, REFUSED, REPLACING, Record, records_from_jobs
from crater_app.cluster.kube.status import (ANNOTATION_MAX_RUNTIME, ANNOTATION_STOP, STOP_CANCEL, STOP_DEADLINE, Stop,
                                            attempt_of)
from crater_app.domain.errors import CraterError
from crater_app.domain.quota import Quota
from crater_app.domain.times import utcnow

log = logging.getLogger(__name__)
#: seconds between tries of a failed call: doubling from the first, at most the last
BACKOFF_S = (1.0, 60.0)
#: log bytes asked for per line when a tail is read by lines (the API cannot cut a log from its end by bytes)
_BYTES_PER_LINE = 32


class KubernetesBackend:
    """Workloads as Volcano Jobs on the cluster ``api_client`` points at (see the module).

    Args:
        options: the builders' settings (:class:`KubeOptions`; ``pod_deadlines`` is turned off).
        api_client: a configured :class:`kubernetes.client.ApiClient` (:func:`.client.make_api_client`).
        watch: start the reflectors now (``False``: the caller feeds :meth:`on_event`).
        clock: seconds (``time.time``), for deadlines and back-off.
    """

    name = "kubernetes"
    capabilities = frozenset({base.RUNS_IMAGES, base.ENFORCES_DEADLINES, base.MULTI_NODE, base.QUEUES,
                              base.MANIFESTS, base.PVC_VOLUMES})

    def __init__(self, options: KubeOptions, api_client, *, watch: bool = True,
                 clock: Callable[[], float] = time.time) -> None:
        self.options = dataclasses.replace(options, pod_deadlines=False)
        self.calls = Calls(api_client)
        self.cache = ClusterCache(self.options.accelerators)
        self.log = ChangeLog()
        self.records: dict[str, Record] = {}
        self.queues = QueueSync(self.calls, self._cached_queue)
        self._namespaces: set[str] = set()
        self._lock = threading.RLock()
        self._clock = clock
        self._watches = None
        if watch:
            from crater_app.cluster.kube.watching import Watches

            self._watches = Watches(api_client, self.options, self.on_event)
            self._watches.start()

    # -- feeding the caches ------------------------------------------------------------------------------------
    def on_event(self, kind: str, event: str, obj: dict) -> None:
        """One watch event of ``kind`` (:data:`.cache.KINDS`): the caches and the touched workloads' statuses."""
        with self._lock:
            self._touched(kind, self.cache.apply(kind, event, obj))

    def _touched(self, kind: str, uids: set[str]) -> None:
        if kind == kinds.JOBS:
            records_from_jobs(self.records, self.cache, uids)
        for uid in uids:
            record = self.records.get(uid)
            if record is not None:
                self._refresh(record)

    def _cached_queue(self, name: str) -> dict | None:
        with self._lock:
            return self.cache.queues.get(name)

    def _refresh(self, record: Record) -> WorkloadStatus:
        """Compute the record's status and log it when it changed (a final status of an attempt stays final)."""
        status = record.compute(self.cache, self.options.accelerators)
        last = record.last
        if last is not None and last.attempt == status.attempt and last.phase is not None and last.phase.terminal:
            return last
        if last is None or last != status or (last.code, last.args) != (status.code, status.args):
            record.last = status
            self.log.append(status)
        return status

    # -- the boundary ------------------------------------------------------------------------------------------
    def inventory(self) -> list[NodeInventory]:
        """Every node with its accelerators and allocations (from the caches)."""
        with self._lock:
            nodes, pods = list(self.cache.nodes.values()), list(self.cache.all_pods.values())
            assigned = dict(self.cache.devices)
        return inv.inventory(nodes, pods, self.options, assigned=assigned)

    def capacity(self) -> list[NodeInventory]:
        """Every node without its allocations (from the caches)."""
        with self._lock:
            nodes = list(self.cache.nodes.values())
        return inv.inventory(nodes, [], self.options, with_allocations=False)

    def create(self, workload: Workload) -> None:
        """POST the workload's Job (see ``ClusterBackend.create``): a 409 is the same object (idempotent); a higher
        attempt of a finished uid deletes the old Job, then creates the new one once it is gone. A call that fails
        is tried again by :meth:`tick`; one the API refuses (4xx) makes the workload ``Failed``."""
        with self._lock:
            if not workload.queue:
                workload = dataclasses.replace(workload, queue=self._queue_of(workload.project, workload.user))
            record = self.records.get(workload.uid)
            if record is not None and not record.next_run(workload, self.options, self.cache):
                return
            if record is None:
                record = self.records[workload.uid] = Record.new(workload, self.options)
            self.cache.gone_pods.pop(workload.uid, None)  # an earlier run's pods say nothing of this one
            self._refresh(record)
        self._push(record)

    def _queue_of(self, project: str, user: str) -> str:
        """The leaf queue a job of ``user`` in ``project`` goes to, from the cached Queues (every Crater process sees
        them, not only the one that synced them): the member's child queue where the member has a share, else the
        project's others queue where the project's queue has children (Volcano places jobs only in leaf queues),
        else the project's queue."""
        member = member_queue_name(project, user, self.options)
        if member in self.cache.queues:
            return member
        others = others_queue_name(project, self.options)
        return others if others in self.cache.queues else project_queue_name(project, self.options)

    def create_many(self, workloads: list[Workload]) -> None:
        """:meth:`create` for each (Kubernetes has no transaction across objects)."""
        for w in workloads:
            self.create(w)

    def _ensure_namespace(self, project: str, namespace: str) -> None:
        if not self.options.per_project or namespace in self._namespaces:
            return
        for obj in project_namespace_objects(project, self.options):
            try:
                self.calls.create(obj)
            except ApiError as exc:
                if exc.status != 409:
                    raise
        self._namespaces.add(namespace)

    def _push(self, record: Record) -> None:
        """Make the API hold what the record says: POST a pending Job, delete an old run, delete a stopped Job."""
        with self._lock:
            state, stop, manifests = record.state, record.stop, list(record.manifests)
        try:
            if state == REPLACING:
                self.calls.delete("Job", record.namespace, record.name)
                with self._lock:
                    record.stop_sent = True
            elif state == PENDING and stop is None:
                self._ensure_namespace(record.project, record.namespace)
                for obj in manifests:
                    try:
                        posted = self.calls.create(obj)
                    except ApiError as exc:
                        if exc.status != 409:
                            raise
                        posted = self.calls.get(obj["kind"], record.namespace, obj["metadata"]["name"])
                        if obj["kind"] == "Job" and attempt_of(posted) < record.attempt:
                            with self._lock:  # the earlier run's Job, still being deleted: wait for it to go
                                record.state, record.stop_sent = REPLACING, False
                                record.next_try = self._clock() + BACKOFF_S[0]
                                self._refresh(record)
                            return
                    with self._lock:
                        record.posted[obj["kind"]] = posted
                with self._lock:
                    record.state, record.tries, record.error = CREATED, 0, ""
            elif stop is not None and state in (CREATED, REPLACING) and not record.stop_sent:
                self.calls.patch("Job", record.namespace, record.name,
                                 {"metadata": {"annotations": {ANNOTATION_STOP: stop.to_annotation()}}})
                self.calls.delete("Job", record.namespace, record.name)
                with self._lock:
                    record.stop_sent = True
        except ApiError as exc:
            with self._lock:
                if exc.status == 404 and (state == REPLACING or stop is not None):
                    record.stop_sent = True  # already gone
                elif exc.transient or exc.status in (403, 404, 409):
                    record.tries += 1
                    record.error = exc.message or exc.reason
                    record.next_try = self._clock() + min(BACKOFF_S[0] * 2 ** (record.tries - 1), BACKOFF_S[1])
                else:
                    record.state, record.error = REFUSED, exc.message or exc.reason
        except (ValueError, CraterError) as exc:  # the builders refused the workload
            with self._lock:
                record.state, record.error = REFUSED, str(exc)
        with self._lock:
            self._refresh(record)

    def cancel(self, uid: str, reason: str, *, code: str = "", args: dict | None = None) -> None:
        """Record the stop on the Job and delete it (foreground): ``Stopping`` while a pod holds a node, then
        ``Cancelled``; a workload none of whose pods holds a node is ``Cancelled`` at once.

        Raises:
            KeyError: an unknown uid.
        """
        with self._lock:
            record = self.records[uid]
            if record.final or record.stop is not None:
                return
            record.stop = Stop(STOP_CANCEL, reason, code, dict(args or {}))
            self._refresh(record)
        self._push(record)

    def extend(self, uid: str, max_runtime_s: int) -> None:
        """Move the deadline to ``max_runtime_s`` seconds after the start (later or earlier): kept on the Job
        (``crater.io/max-runtime-s``) and enforced by :meth:`tick`.

        Raises:
            KeyError: an unknown uid.
        """
        with self._lock:
            record = self.records[uid]
            if record.final or record.stop is not None:
                return
            record.max_runtime_s = max_runtime_s
            for obj in record.manifests[:1]:  # a Job not created yet is created with the new deadline
                obj["metadata"].setdefault("annotations", {})[ANNOTATION_MAX_RUNTIME] = str(max_runtime_s)
            if record.state != CREATED:
                return
        try:
            self.calls.patch("Job", record.namespace, record.name,
                             {"metadata": {"annotations": {ANNOTATION_MAX_RUNTIME: str(max_runtime_s)}}})
        except ApiError as exc:
            log.warning("deadline of %s not written on its Job (enforced all the same): %s", uid, exc)

    def changes(self, cursor: str = "", limit: int = 1000) -> Changes:
        """Statuses logged after ``cursor`` (:class:`.changes.ChangeLog`)."""
        return self.log.read(cursor, limit)

    def list_workloads(self) -> list[WorkloadStatus]:
        """The current status of every workload with a record (created here, or a Job in the cache)."""
        with self._lock:
            return [r.last or self._refresh(r) for r in self.records.values()]

    def status(self, uid: str) -> WorkloadStatus | None:
        """The current status of ``uid``, ``None`` when neither a record nor a Job knows it."""
        with self._lock:
            record = self.records.get(uid)
            return None if record is None else (record.last or self._refresh(record))

    def read_logs(self, uid: str, tail_bytes: int = 65536, *, task: str | None = None, replica: int = 0) -> str:
        """The last ``tail_bytes`` of one replica's pod log (``read_namespaced_pod_log`` with ``tailLines``, cut to
        size; ``""`` for an unknown uid, task or replica, or a pod without a log yet)."""
        with self._lock:
            record = self.records.get(uid)
            pods = self.cache.pods_of(uid)
            if record is None:
                return ""
            task = task if task is not None else record.first_task(self.cache)
        pod = next((p for p in pods if podinfo.task_of(p) == task and podinfo.index_of(p) == replica), None)
        if pod is None:
            return ""
        ns, name = kinds.key_of(pod)
        lines = max(1, tail_bytes // _BYTES_PER_LINE)
        try:
            text = self.calls.pod_log(ns, name, tail_lines=lines)
        except ApiError:
            return ""
        data = text.encode("utf-8")
        return data[-tail_bytes:].decode("utf-8", "ignore") if len(data) > tail_bytes else text

    def ensure_queue(self, project: str, quota: Quota, shares: Mapping[str, Quota] | None = None) -> None:
        """Make ``project``'s Queue (and its members' child queues) say ``quota``; what cannot be written now is
        repaired by :meth:`tick` (and so is any later drift)."""
        self.queues.want(project, project_queues(project, quota, self.options, shares))
        try:
            self._ensure_namespace(project, namespace_of(project, self.options))
        except ApiError as exc:
            log.warning("namespace of project %s not made yet: %s", project, exc)
        with self._lock:
            cached = list(self.cache.queues.values())
        self.queues.sync(project, self.queues.stale(cached))

    def manifests(self, uid: str) -> list[dict]:
        """The objects made for ``uid`` as the API holds them (the cached Job, else the one posted; a session's
        Service), without ``managedFields``."""
        with self._lock:
            record = self.records.get(uid)
            if record is None:
                return []
            return record.objects(self.cache)

    def tick(self) -> None:
        """The leader's round: retry failed calls whose back-off is over, stop workloads past their deadline,
        repair the Queues."""
        now = self._clock()
        due = []
        with self._lock:
            for record in self.records.values():
                if record.final:
                    continue
                if record.deadline_due(now):
                    record.stop = Stop(STOP_DEADLINE, max_runtime_s=record.max_runtime_s or 0)
                    self._refresh(record)
                    due.append(record)
                elif record.needs_push(self.cache) and record.next_try <= now:
                    due.append(record)
            cached = list(self.cache.queues.values())
        for record in due:
            self._push(record)
        self.queues.sync(None, self.queues.stale(cached))

    def adopt(self) -> None:
        """After a restart: wait (a few seconds at most) for the reflectors' first lists, then rebuild the records
        from the Jobs (their attempt, stop and deadline are on them)."""
        if self._watches is not None:
            self._watches.wait_synced()
        with self._lock:
            records_from_jobs(self.records, self.cache, set(self.cache.jobs))
            for record in self.records.values():
                self._refresh(record)

    def close(self) -> None:
        """Stop the reflectors."""
        if self._watches is not None:
            self._watches.stop()

