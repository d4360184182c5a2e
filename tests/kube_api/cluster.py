"""A cluster for the Kubernetes API mock: the parts of Volcano (job controller, gang scheduler) and of the kubelet
that Crater relies on, acting on the mock's :class:`~tests.kube_api.store.Store` directly, outside Crater.

:class:`ClusterSimulator` makes nodes (``nvidia.com/gpu`` allocatable, ``nvidia.com/gpu.product`` label) and the
``default`` Queue, and on every :meth:`ClusterSimulator.step`:

1. removes pods whose deletion was asked (the kubelet stopping their containers);
2. runs bound pods: ``Running`` (logs written), then ``Succeeded``/``Failed`` after the time the command says
   (``sh -c "echo x; sleep N; exit K"``, the same language as ``tests/fakes.py``; exit 137 is ``OOMKilled``);
3. binds pending pods gang-wise (at least ``minAvailable`` at once, else none; the queue must be ``Open`` and its
   ``capability`` not exceeded; node readiness, cordon, ``NoSchedule`` taints, ``nodeSelector`` and required
   node affinity respected), else marks them ``Unschedulable`` with the scheduler's message;
4. gives each new ``batch.volcano.sh`` Job a PodGroup (``<job>-<uid>``) and its pods (``<job>-<task>-<index>``,
   owned by the Job, labelled ``volcano.sh/job-name``), and re-creates missing pods of a Pending/Running Job;
5. moves each Job's ``status.state.phase`` as Volcano's state machine does: Pending -> Running (``minAvailable``
   running) -> Completed/Failed when every pod ended; ``policies`` (task's before job's) on ``PodFailed``,
   ``PodEvicted``, ``TaskCompleted`` or an ``exitCode``: ``RestartJob`` (Restarting, up to ``maxRetry``, then
   Failed), ``AbortJob`` (Aborting -> Aborted), ``TerminateJob`` (Terminating -> Terminated), ``CompleteJob``
   (Completing -> Completed); ``ttlSecondsAfterFinished`` deletes a finished Job.

So one step moves a new Job's pods one stage (created, bound, running): a test sees each state between steps.
Time is ``clock()`` seconds (:class:`ManualClock` for tests that advance it). Hooks: :meth:`cordon`,
:meth:`set_ready`, :meth:`taint`, :meth:`evict`, :meth:`fail_image_pull`, :meth:`add_node`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from tests.fakes import _simulate as simulate_command
from tests.kube_api import pods as P
from tests.kube_api import scheduling
from tests.kube_api.store import ApiError, Store

VC = ("batch.volcano.sh", "jobs")
FINAL = ("Completed", "Failed", "Aborted", "Terminated")
ENDING = {"Completing": "Completed", "Aborting": "Aborted", "Terminating": "Terminated"}
ACTION_PHASE = {"AbortJob": "Aborting", "TerminateJob": "Terminating", "CompleteJob": "Completing"}


class ManualClock:
    """A clock that moves only when told: ``clock()`` seconds, :meth:`advance`."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``."""
        self.now += seconds


@dataclass(frozen=True)
class NodeSpec:
    """A node to make: ``accelerators`` devices of ``resource`` of model ``product``; ``cpu`` and ``memory``
    as Kubernetes quantities; extra ``labels``."""

    name: str
    accelerators: int = 4
    resource: str = "nvidia.com/gpu"
    product: str = "NVIDIA-A100-SXM4-80GB"
    cpu: str = "64"
    memory: str = "256Gi"
    labels: tuple[tuple[str, str], ...] = ()


class ClusterSimulator:
    """Volcano + kubelet over ``store`` (which it switches to graceful pod deletion). ``nodes`` are created at
    once; ``product_label`` is the node label carrying the accelerator model."""

    def __init__(self, store: Store, nodes: tuple[NodeSpec, ...] = (NodeSpec("node-1"), NodeSpec("node-2")), *,
                 clock: Callable[[], float] = time.monotonic,
                 product_label: str = "nvidia.com/gpu.product") -> None:
        self.store, self.clock, self.product_label = store, clock, product_label
        store.graceful_pods = True
        self._lock = threading.RLock()
        self._started: dict[str, float] = {}  # pod uid -> clock when it started running
        self._finished: dict[str, float] = {}  # job uid -> clock when it reached a final phase
        self._handled: set[str] = set()  # uids of failed pods whose policy was applied
        self._pull_failures: set[str] = set()
        self._events = 0
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        for spec in nodes:
            self.add_node(spec)
        if store.peek("scheduling.volcano.sh", "queues", "", "default") is None:
            store.create("scheduling.volcano.sh", "queues", "", {"metadata": {"name": "default"},
                                                                 "spec": {"weight": 1, "reclaimable": True}})

    # -- hooks ---------------------------------------------------------------------------------------------------
    def add_node(self, spec: NodeSpec) -> None:
        """Create a Ready node with ``spec``'s capacity and labels."""
        capacity = {"cpu": spec.cpu, "memory": spec.memory, "pods": "110"}
        labels = {"kubernetes.io/hostname": spec.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                  **dict(spec.labels)}
        if spec.accelerators:
            capacity[spec.resource] = str(spec.accelerators)
            labels[self.product_label] = spec.product
        self.store.create("", "nodes", "", {
            "metadata": {"name": spec.name, "labels": labels}, "spec": {},
            "status": {"capacity": capacity, "allocatable": dict(capacity),
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}},
            keep_status=True)

    def cordon(self, node: str, cordoned: bool = True) -> None:
        """``kubectl cordon`` / ``uncordon``."""
        self.store.update("", "nodes", "", node, lambda n: {**n, "spec": {**n["spec"], "unschedulable": cordoned}})

    def set_ready(self, node: str, ready: bool) -> None:
        """The node's ``Ready`` condition (``NotReady`` when false)."""
        cond = {"type": "Ready", "status": "True" if ready else "False",
                "reason": "KubeletReady" if ready else "NodeStatusUnknown"}
        self.store.update("", "nodes", "", node, lambda n: {**n, "status": {**n["status"], "conditions": [cond]}},
                          subresource="status")

    def taint(self, node: str, key: str, value: str = "", effect: str = "NoSchedule") -> None:
        """Add a taint to the node."""
        def change(n: dict) -> dict:
            taints = [*(n["spec"].get("taints") or []), {"key": key, "value": value, "effect": effect}]
            return {**n, "spec": {**n["spec"], "taints": taints}}
        self.store.update("", "nodes", "", node, change)

    def evict(self, namespace: str, pod: str, message: str = "The node was low on resource: memory.") -> None:
        """The kubelet evicts the pod (phase Failed, reason Evicted)."""
        self.store.update("", "pods", namespace, pod, lambda p: {**p, "status": P.evicted_status(p, message)},
                          subresource="status")
        self._event(namespace, "Pod", pod, "Evicted", message, "Warning")

    def fail_image_pull(self, image: str) -> None:
        """Pods of ``image`` stay Pending in ``ErrImagePull`` / ``ImagePullBackOff``."""
        self._pull_failures.add(image)

    # -- stepping ------------------------------------------------------------------------------------------------
    def step(self) -> int:
        """One round of every controller (see the module's doc); returns the number of writes it made."""
        with self._lock:
            before = self.store.resource_version
            now = self.clock()
            self._open_queues()
            for pod in self.store.list("", "pods")[0]:
                if pod["metadata"].get("deletionTimestamp"):
                    self.store.finish_pod_deletion(pod["metadata"]["namespace"], pod["metadata"]["name"])
                    self._started.pop(pod["metadata"]["uid"], None)
            self._run(now)
            scheduling.schedule(self)
            by_job = self._pods_by_job()
            for job in self.store.list(*VC)[0]:
                self._sync_job(job, by_job.get((job["metadata"]["namespace"], job["metadata"]["name"]), []), now)
            by_job = self._pods_by_job()
            for job in self.store.list(*VC)[0]:
                self._job_status(job, by_job.get((job["metadata"]["namespace"], job["metadata"]["name"]), []), now)
            return self.store.resource_version - before

    def settle(self, max_steps: int = 50) -> int:
        """Step until a step writes nothing (or ``max_steps``); returns the steps taken."""
        for n in range(1, max_steps + 1):
            if not self.step():
                return n
        return max_steps

    def start(self, interval: float = 0.02) -> None:
        """Step every ``interval`` seconds in a daemon thread (for tests that do not call :meth:`step`)."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, args=(interval,), daemon=True, name="kube-cluster-sim")
        self._thread.start()

    def stop(self) -> None:
        """Stop the background thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def _loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self.step()
            except ApiError:
                pass

    # -- internals -----------------------------------------------------------------------------------------------
    def _pods_by_job(self) -> dict[tuple[str, str], list[dict]]:
        out: dict[tuple[str, str], list[dict]] = {}
        for pod in self.store.list("", "pods")[0]:
            job = (pod["metadata"].get("labels") or {}).get(P.JOB_NAME)
            if job:
                out.setdefault((pod["metadata"]["namespace"], job), []).append(pod)
        return out

    def _open_queues(self) -> None:
        for queue in self.store.list("scheduling.volcano.sh", "queues")[0]:
            if not (queue.get("status") or {}).get("state"):
                self.store.set_status("scheduling.volcano.sh", "queues", "", queue["metadata"]["name"],
                                      {**(queue.get("status") or {}), "state": "Open"})

    def _event(self, namespace: str, kind: str, name: str, reason: str, message: str, type_: str = "Normal") -> None:
        self._events += 1
        ts = P.iso(time.time())
        try:
            self.store.create("", "events", namespace, {
                "metadata": {"name": f"{name}.{self._events:x}"}, "reason": reason, "message": message,
                "type": type_, "count": 1, "firstTimestamp": ts, "lastTimestamp": ts,
                "involvedObject": {"kind": kind, "name": name, "namespace": namespace},
                "source": {"component": "volcano" if kind == "Job" else "kubelet"}})
        except ApiError:
            pass  # the namespace is being deleted

    def _sync_job(self, job: dict, pods: list[dict], now: float) -> None:
        meta, spec = job["metadata"], job["spec"]
        ns, name = meta["namespace"], meta["name"]
        phase = ((job.get("status") or {}).get("state") or {}).get("phase", "")
        if meta.get("deletionTimestamp"):
            return
        if phase in FINAL:
            ttl = spec.get("ttlSecondsAfterFinished")
            done = self._finished.setdefault(meta["uid"], now)
            if ttl is not None and now - done >= ttl:
                self.store.delete(*VC, ns, name, propagation="Background")
            return
        if not phase:
            self._ensure_podgroup(job)
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        if phase in ENDING or (phase == "Restarting" and live):
            for pod in live:
                if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") or phase == "Restarting":
                    self.store.delete("", "pods", ns, pod["metadata"]["name"])
            return
        if phase in ("", "Pending", "Running", "Restarting"):
            have = {p["metadata"]["name"] for p in pods}
            for task in spec.get("tasks") or []:
                for index in range(int(task.get("replicas", 1))):
                    pod = P.make_pod(job, task, index)
                    if pod["metadata"]["name"] not in have:
                        try:
                            self.store.create("", "pods", ns, pod)
                        except ApiError:
                            pass
            if phase in ("", "Restarting"):
                self._set_phase(job, "Pending", "", "")

    def _ensure_podgroup(self, job: dict) -> None:
        ns, spec = job["metadata"]["namespace"], job["spec"]
        replicas = sum(int(t.get("replicas", 1)) for t in spec.get("tasks") or [])
        body = {"metadata": {"name": P.podgroup_name(job), "ownerReferences": [P.owner_ref(job)]},
                "spec": {"minMember": int(spec.get("minAvailable", replicas)), "queue": spec.get("queue") or "default"},
                "status": {"phase": "Pending"}}
        try:
            self.store.create("scheduling.volcano.sh", "podgroups", ns, body)
        except ApiError:
            pass

    def _run(self, now: float) -> None:
        for pod in self.store.list("", "pods")[0]:
            meta, status = pod["metadata"], pod.get("status") or {}
            if meta.get("deletionTimestamp") or not (pod.get("spec") or {}).get("nodeName"):
                continue
            ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
            image = ((pod["spec"].get("containers") or [{}])[0]).get("image", "")
            if status.get("phase") == "Pending":
                if image in self._pull_failures:
                    waiting = [c.get("state", {}).get("waiting", {}).get("reason") for c in
                               status.get("containerStatuses") or []]
                    if "ImagePullBackOff" not in waiting:
                        reason = "ErrImagePull" if "ErrImagePull" not in waiting else "ImagePullBackOff"
                        message = f'Back-off pulling image "{image}"'
                        self.store.set_status("", "pods", ns, name, P.bound_status(
                            pod, pod["spec"]["nodeName"], reason, message))
                        self._event(ns, "Pod", name, "Failed" if reason == "ErrImagePull" else "BackOff", message,
                                    "Warning")
                    continue
                self.store.set_status("", "pods", ns, name, P.running_status(pod, time.time()))
                self._started[uid] = now
                lines, _, _ = simulate_command(P.argv(pod))
                for container in P.containers(pod):
                    self.store.append_log(ns, name, container, lines)
                self._event(ns, "Pod", name, "Started", f"Started container {P.containers(pod)[0]}")
            elif status.get("phase") == "Running":
                _, seconds, code = simulate_command(P.argv(pod))
                if now - self._started.setdefault(uid, now) >= seconds:
                    self.store.set_status("", "pods", ns, name, P.terminated_status(
                        pod, code, status.get("startTime") or P.iso(time.time()), time.time()))

    def _set_phase(self, job: dict, phase: str, reason: str, message: str, **counts) -> None:
        def change(cur: dict) -> dict | None:
            status = dict(cur.get("status") or {})
            state = status.get("state") or {}
            if state.get("phase") != phase:
                state = {"phase": phase, "reason": reason, "message": message, "lastTransitionTime": P.iso(time.time())}
                status["conditions"] = [*(status.get("conditions") or []),
                                        {"status": phase, "lastTransitionTime": state["lastTransitionTime"]}][-10:]
            status.update(state=state, **counts)
            return {**cur, "status": status}
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        before = ((job.get("status") or {}).get("state") or {}).get("phase")
        self.store.update(*VC, ns, name, change, subresource="status")
        if before != phase:
            pg = P.podgroup_name(job)
            pg_phase = {"Running": "Running", "Completed": "Completed"}.get(phase, "Pending" if phase == "Pending"
                                                                            else "Inqueue")
            self.store.update("scheduling.volcano.sh", "podgroups", ns, pg,
                              lambda g: {**g, "status": {**(g.get("status") or {}), "phase": pg_phase}})
            if phase in FINAL:
                self._finished[job["metadata"]["uid"]] = self.clock()

    def _job_status(self, job: dict, pods: list[dict], now: float) -> None:
        from tests.kube_api import volcano
        if job["metadata"].get("deletionTimestamp"):
            return
        volcano.advance(self, job, pods)
