"""What the Kubernetes backend knows of each workload beyond the caches: what Crater asked for (the run's attempt and
manifests, a stop, a deadline) and where its Job's creation stands (:class:`Record`).

States: ``pending`` (the Job is to be POSTed: first try, or again after a failure, with back-off), ``created``
(POSTed, or found: a 409 or a Job in the cache), ``replacing`` (a next attempt waits for the earlier run's Job to be
deleted), ``refused`` (the API or the builders refused the Job: the workload is ``Failed``). A record is made by
``create`` or, after a restart, from a Job in the cache (:func:`records_from_jobs`: its attempt, stop and deadline
are annotations on it).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

from crater_app.cluster.base import Workload, WorkloadStatus
from crater_app.cluster.kube import pods as podinfo
from crater_app.cluster.kube.cache import ClusterCache
from crater_app.cluster.kube.job_manifest import workload_objects
from crater_app.cluster.kube.object_names import ANNOTATION_PROJECT
from crater_app.cluster.kube.options import KubeOptions
from crater_app.cluster.kube.status import (ANNOTATION_MAX_RUNTIME, Stop, attempt_of, pending_replicas, say,
                                            workload_status)
from crater_app.domain.errors import CraterError
from crater_app.domain.jobs import JobPhase
from crater_app.domain.times import utcnow

PENDING, CREATED, REPLACING, REFUSED = "pending", "created", "replacing", "refused"


def build(workload: Workload, options: KubeOptions) -> list[dict]:
    """The objects of ``workload`` (:func:`~crater_app.cluster.kube.job_manifest.workload_objects`: its Volcano Job,
    and a session's Service), the Job with the ``crater.io/max-runtime-s`` annotation when it has a deadline.

    Raises:
        InvalidInput, ValueError: what the builders raise for a workload they cannot express.
    """
    objects = workload_objects(workload, options)
    if workload.max_runtime_s:
        objects[0]["metadata"].setdefault("annotations", {})[ANNOTATION_MAX_RUNTIME] = str(workload.max_runtime_s)
    return objects


@dataclass
class Record:
    """One workload (see the module). ``last`` is the last status logged."""

    uid: str
    namespace: str
    name: str
    project: str
    attempt: int = 1
    state: str = PENDING
    manifests: list[dict] = field(default_factory=list)
    posted: dict[str, dict] = field(default_factory=dict)
    stop: Stop | None = None
    stop_sent: bool = False
    max_runtime_s: int | None = None
    seen: bool = False
    error: str = ""
    tries: int = 0
    next_try: float = 0.0
    last: WorkloadStatus | None = None

    @classmethod
    def new(cls, workload: Workload, options: KubeOptions) -> "Record":
        """The record of a workload ``create`` was given (``refused`` when the builders cannot express it)."""
        record = cls(uid=workload.uid, namespace="", name="", project=workload.project)
        record.start(workload, options)
        return record

    def start(self, workload: Workload, options: KubeOptions) -> None:
        """Begin the run ``workload.attempt``: its manifests, no stop."""
        self.attempt, self.stop, self.stop_sent, self.seen = workload.attempt, None, False, False
        self.max_runtime_s, self.posted, self.error, self.tries, self.next_try = workload.max_runtime_s, {}, "", 0, 0.0
        self.state = PENDING
        try:
            self.manifests = build(workload, options)
        except (CraterError, ValueError) as exc:
            self.manifests, self.state, self.error = [], REFUSED, str(exc)
            return
        meta = self.manifests[0]["metadata"]
        self.namespace, self.name = meta.get("namespace", ""), meta["name"]

    @classmethod
    def adopted(cls, job: dict) -> "Record":
        """The record of a Job found in the cache (after a restart, or made by another Crater process)."""
        m = podinfo.meta(job)
        ann = m.get("annotations") or {}
        raw = ann.get(ANNOTATION_MAX_RUNTIME, "")
        return cls(uid=(m.get("labels") or {}).get("crater.io/job-uid", ""), namespace=m.get("namespace", ""),
                   name=m.get("name", ""), project=ann.get(ANNOTATION_PROJECT, ""), attempt=attempt_of(job),
                   state=CREATED, stop=Stop.from_job(job), stop_sent=Stop.from_job(job) is not None,
                   max_runtime_s=int(raw) if raw.isdigit() else None, seen=True)

    @property
    def final(self) -> bool:
        """Whether the run's last status is final."""
        return self.last is not None and self.last.phase is not None and self.last.phase.terminal \
            and self.last.attempt == self.attempt

    def next_run(self, workload: Workload, options: KubeOptions, cache: ClusterCache) -> bool:
        """Start ``workload``'s run when it is a later attempt and this run is final (the earlier Job, if still
        there, is deleted first: ``replacing``); ``False`` (nothing to do) otherwise."""
        if workload.attempt <= self.attempt or not self.final:
            return False
        self.start(workload, options)
        if self.state == PENDING and self.old_job(cache) is not None:
            self.state = REPLACING
        return True

    def old_job(self, cache: ClusterCache) -> dict | None:
        """The cached Job of an earlier attempt, if one is still there."""
        job = cache.jobs.get(self.uid)
        return job if job is not None and attempt_of(job) < self.attempt else None

    def needs_push(self, cache: ClusterCache) -> bool:
        """Whether :meth:`KubernetesBackend._push` has something to send: a Job to create or an old one to
        delete, or a stop not sent yet. A ``replacing`` record whose old Job is gone becomes ``pending``."""
        if self.state == REPLACING and self.old_job(cache) is None:
            self.state, self.tries, self.stop_sent = PENDING, 0, False
        if self.state == REPLACING:
            return not self.stop_sent
        return (self.state == PENDING and self.stop is None) or \
            (self.stop is not None and self.state == CREATED and not self.stop_sent)

    def deadline_due(self, now: float) -> bool:
        """Whether the run is past its ``max_runtime_s`` (seconds since its start) and not being stopped yet."""
        last = self.last
        if self.stop is not None or not self.max_runtime_s or last is None or last.started_at is None:
            return False
        return last.phase == JobPhase.RUNNING and now >= last.started_at.timestamp() + self.max_runtime_s

    def compute(self, cache: ClusterCache, accelerators: tuple[str, ...]) -> WorkloadStatus:
        """The workload's status now, from the cache and the record (see :mod:`.status`). Before its Job is seen
        the status is the one the Job will first have (``Queued`` in its queue), so the watch's first event of it
        changes nothing."""
        job = cache.jobs.get(self.uid)
        pods = cache.pods_of(self.uid)
        manifest = self.manifests[0] if self.manifests else None

        def queued(said) -> WorkloadStatus:
            return WorkloadStatus(uid=self.uid, phase=JobPhase.QUEUED, raw_state="", reason="Pending",
                                  message=said.message, code=said.code, args=said.args, attempt=self.attempt,
                                  replicas=pending_replicas(manifest, []))
        if self.state == REFUSED:
            said = say("kube.create_refused", error=self.error)
            return dataclasses.replace(queued(said), phase=JobPhase.FAILED, reason="CreateRefused",
                                       finished_at=utcnow())
        if job is not None and attempt_of(job) == self.attempt:
            self.seen = True
            return workload_status(self.uid, job, pods, accelerators=accelerators, stop=self.stop,
                                   gone=cache.gone_of(self.uid), devices=cache.devices)
        if self.seen:
            return workload_status(self.uid, cache.last_jobs.get(self.uid), pods, accelerators=accelerators,
                                   stop=self.stop, deleted=True, gone=cache.gone_of(self.uid), devices=cache.devices)
        if self.stop is not None:  # stopped before its Job was seen: nothing holds a node
            return dataclasses.replace(workload_status(self.uid, manifest, [], accelerators=accelerators,
                                                       stop=self.stop), attempt=self.attempt)
        if self.state == REPLACING:
            return queued(say("kube.waiting_for_earlier_run"))
        if self.error:
            return queued(say("kube.create_retrying", error=self.error, delay_s=min(2 ** max(self.tries - 1, 0), 60)))
        return workload_status(self.uid, manifest, [], accelerators=accelerators)

    def first_task(self, cache: ClusterCache) -> str:
        """The name of the workload's first task (``""`` when unknown)."""
        job = cache.jobs.get(self.uid) or cache.last_jobs.get(self.uid) or (self.manifests or [{}])[0]
        tasks = (job.get("spec") or {}).get("tasks") or []
        return tasks[0].get("name", "") if tasks else ""

    def objects(self, cache: ClusterCache) -> list[dict]:
        """The workload's objects as the API holds them, ``managedFields`` left out."""
        job = cache.jobs.get(self.uid) or self.posted.get("Job") or cache.last_jobs.get(self.uid)
        if job is None and self.manifests:
            job = self.manifests[0]
        out = [job] if job is not None else []
        service = self.posted.get("Service")
        if service is not None:
            out.append(service)
        cleaned = []
        for obj in out:
            obj = copy.deepcopy(obj)
            (obj.get("metadata") or {}).pop("managedFields", None)
            cleaned.append(obj)
        return cleaned


def records_from_jobs(records: dict[str, Record], cache: ClusterCache, uids: set[str]) -> None:
    """Give every cached Job of ``uids`` without a record one (:meth:`Record.adopted`)."""
    for uid in uids:
        job = cache.jobs.get(uid)
        if job is not None and uid not in records:
            records[uid] = Record.adopted(job)
