"""The Kubernetes backend through the real ``kubernetes`` client against the HTTP-level API mock and the cluster
simulator (tests/kube_api): what is Kubernetes-specific (409 idempotency, Jobs without a record and records without
a Job, foreground deletion, queue drift, 410 re-lists, logs per pod, manifests valid against the CRD schemas)."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime, timezone

import pytest

from crater_app.cluster.base import Port, Task, Workload
from crater_app.cluster.kube.backend import KubernetesBackend
from crater_app.cluster.kube.object_names import job_name, member_queue_name, others_queue_name, project_queue_name
from crater_app.cluster.kube.options import KubeOptions
from crater_app.cluster.kube.status import ANNOTATION_STOP
from crater_app.domain.jobs import JobPhase
from crater_app.domain.quota import parse_quota
from crater_app.domain.resources import ResourceList
from tests.helpers import wait_for

NS = "crater-jobs"
T0 = datetime(2026, 12, 1, tzinfo=timezone.utc)
VC = ("batch.volcano.sh", "jobs")


def make_workload(command: str = "exit 0", *, gpus: int = 0, uid: str | None = None, attempt: int = 1,
                  tasks: tuple[Task, ...] | None = None, max_runtime_s: int | None = None, kind: str = "batch"
                  ) -> Workload:
    resources = ResourceList(cpu_m=500, memory_bytes=1 << 30, accelerators={"nvidia.com/gpu": gpus} if gpus else {})
    tasks = tasks or (Task(name="main", replicas=1, image="busybox:1.36", command=("sh", "-c", command),
                           resources=resources),)
    return Workload(uid=uid or str(uuid.uuid4()), name="train", project="vision", user="alice", tasks=tasks,
                    created_at=T0, attempt=attempt, max_runtime_s=max_runtime_s, kind=kind)


@pytest.fixture
def options():
    return KubeOptions(namespace=NS)


@pytest.fixture
def kube(kube_api, kube_client, kube_cluster, options):
    kube_api.store.create("", "namespaces", "", {"metadata": {"name": NS}})
    backends = []

    def make() -> KubernetesBackend:
        be = KubernetesBackend(options, kube_client)
        be.adopt()
        be.ensure_queue("vision", parse_quota({"capability": {"nvidia.com/gpu": 8}}))  # as the services do
        backends.append(be)
        return be
    yield make
    for be in backends:
        be.close()


def until(be: KubernetesBackend, sim, uid: str, phases: set[JobPhase], timeout: float = 10.0):
    def step():
        sim.step()
        be.tick()
    return wait_for(lambda: (st := be.status(uid)) is not None and st.phase in phases and st, timeout, step=step,
                    what=f"{uid} in {phases}")


def test_runs_to_success_with_placements_logs_and_change_log(kube, kube_cluster):
    be = kube()
    w = make_workload("echo hello-from-pod; sleep 0.2; exit 0", gpus=2)
    start = be.changes("").cursor
    be.create(w)
    running = until(be, kube_cluster, w.uid, {JobPhase.RUNNING})
    assert running.raw_state == "Running" and len(running.devices) == 2 and running.nodes
    done = until(be, kube_cluster, w.uid, {JobPhase.SUCCEEDED})
    assert done.exit_code == 0 and done.started_at is not None and done.finished_at >= done.started_at
    assert "hello-from-pod" in be.read_logs(w.uid) and be.read_logs(w.uid, task="nope") == ""
    phases = [s.phase for s in be.changes(start).statuses if s.uid == w.uid]
    assert phases[0] == JobPhase.QUEUED and phases[-1] == JobPhase.SUCCEEDED and JobPhase.RUNNING in phases


def test_create_is_idempotent_and_a_409_is_the_same_object(kube, kube_api, kube_cluster):
    be, other = kube(), kube()
    w = make_workload("sleep 5")
    be.create(w)
    be.create(w)
    other.create(w)  # another Crater process: its POST gets 409 AlreadyExists
    jobs, _ = kube_api.store.list(*VC)
    assert [j["metadata"]["name"] for j in jobs] == [job_name(w.uid)]
    assert other.status(w.uid).phase == JobPhase.QUEUED


def test_a_job_without_a_record_is_listed_and_a_record_without_a_job_is_reported(kube, kube_api, kube_cluster):
    be = kube()
    w = make_workload("sleep 30")
    be.create(w)
    until(be, kube_cluster, w.uid, {JobPhase.RUNNING})
    restarted = kube()  # a Crater restart: a record made from the Job alone
    assert w.uid in {s.uid for s in restarted.list_workloads()}
    assert restarted.status(w.uid).phase == JobPhase.RUNNING
    kube_api.store.delete(*VC, NS, job_name(w.uid), propagation="Foreground")  # deleted by hand
    gone = until(be, kube_cluster, w.uid, {JobPhase.FAILED})
    assert (gone.reason, gone.code) == ("Deleted", "kube.deleted")


def test_cancel_deletes_in_the_foreground_and_is_stopping_until_the_last_pod_is_gone(kube, kube_api, kube_cluster):
    be = kube()
    w = make_workload("sleep 60", gpus=1)
    be.create(w)
    until(be, kube_cluster, w.uid, {JobPhase.RUNNING})
    be.cancel(w.uid, "cancelled by alice", code="job.cancelled_by", args={"user": "alice"})
    job = kube_api.store.peek(*VC, NS, job_name(w.uid))
    assert job is not None and job["metadata"].get("deletionTimestamp"), "foreground: the Job waits for its pods"
    assert "cancel" in job["metadata"]["annotations"][ANNOTATION_STOP]
    st = be.status(w.uid)
    assert (st.phase, st.reason) == (JobPhase.STOPPING, "CancelRequested") and st.devices
    done = until(be, kube_cluster, w.uid, {JobPhase.CANCELLED})
    assert (done.code, done.args, done.message) == ("job.cancelled_by", {"user": "alice"}, "cancelled by alice")
    assert kube_api.store.list("", "pods", NS)[0] == []
    with pytest.raises(KeyError):
        be.cancel("nope", "x")


def test_a_queued_job_is_cancelled_at_once(kube, kube_cluster):
    be = kube()
    w = make_workload("sleep 60", gpus=64)  # more than any node: never placed
    be.create(w)
    kube_cluster.step()
    be.cancel(w.uid, "no longer needed")
    st = be.status(w.uid)
    assert (st.phase, st.code) == (JobPhase.CANCELLED, "kube.cancelled_because")


def test_a_later_attempt_replaces_the_finished_job(kube, kube_api, kube_cluster):
    be = kube()
    w = make_workload("exit 3")
    be.create(w)
    failed = until(be, kube_cluster, w.uid, {JobPhase.FAILED})
    assert failed.exit_code == 3 and failed.attempt == 1
    again = make_workload("exit 0", uid=w.uid, attempt=2)
    be.create(again)
    assert be.status(w.uid).attempt == 2 and be.status(w.uid).phase == JobPhase.QUEUED
    done = until(be, kube_cluster, w.uid, {JobPhase.SUCCEEDED})
    assert done.attempt == 2
    [job] = kube_api.store.list(*VC)[0]
    assert job["metadata"]["annotations"]["crater.io/attempt"] == "2"


def test_failed_creates_are_retried_with_back_off(kube, kube_api, kube_cluster):
    be = kube()
    w = make_workload("exit 0")
    kube_api.fail_next(1, 503, match=lambda method, path: method == "POST")
    be.create(w)
    st = be.status(w.uid)
    assert (st.phase, st.code) == (JobPhase.QUEUED, "kube.create_retrying")
    assert be.records[w.uid].next_try > be._clock(), "the next try waits"
    be.tick()  # within the back-off: no second POST yet
    assert kube_api.store.peek(*VC, NS, job_name(w.uid)) is None
    assert be.status(w.uid).code == "kube.create_retrying"
    be.records[w.uid].next_try = 0  # the back-off is over
    until(be, kube_cluster, w.uid, {JobPhase.SUCCEEDED})


def test_queue_drift_is_repaired(kube, kube_api, kube_cluster, options):
    be = kube()
    quota = parse_quota({"capability": {"nvidia.com/gpu": 4, "cpu": "16"}, "deserved": {"nvidia.com/gpu": 2}})
    be.ensure_queue("vision", quota)
    name = project_queue_name("vision", options)
    queue = kube_api.store.get("scheduling.volcano.sh", "queues", "", name)
    assert queue["spec"]["capability"]["nvidia.com/gpu"] in ("4", 4)
    kube_api.store.update("scheduling.volcano.sh", "queues", "", name,
                          lambda q: {**q, "spec": {**q["spec"], "capability": {"nvidia.com/gpu": "64"}}})
    wait_for(lambda: be.cache.queues.get(name, {}).get("spec", {}).get("capability") == {"nvidia.com/gpu": "64"})
    be.tick()
    assert kube_api.store.get("scheduling.volcano.sh", "queues", "", name)["spec"]["capability"] == \
        queue["spec"]["capability"]
    kube_api.store.delete("scheduling.volcano.sh", "queues", "", name)
    wait_for(lambda: name not in be.cache.queues)
    be.tick()
    assert kube_api.store.peek("scheduling.volcano.sh", "queues", "", name) is not None


def test_a_410_mid_run_loses_no_final_status(kube, kube_api, kube_cluster):
    be = kube()
    w = make_workload("sleep 0.3; exit 0")
    cursor = be.changes("").cursor
    be.create(w)
    until(be, kube_cluster, w.uid, {JobPhase.RUNNING})
    kube_api.restart(lose_history=True, outage_s=0.3)
    kube_cluster.settle()  # the job ends while the watches are down
    done = until(be, kube_cluster, w.uid, {JobPhase.SUCCEEDED})
    assert done.exit_code == 0 and be._watches.lists["jobs"] >= 2, "the jobs were listed again after the 410"
    read = be.changes(cursor)
    assert not read.relist and read.statuses[-1].phase == JobPhase.SUCCEEDED


def test_logs_per_pod_of_a_multi_task_job(kube, kube_cluster):
    be = kube()
    res = ResourceList(cpu_m=100, memory_bytes=1 << 28)
    tasks = (Task(name="master", replicas=1, image="busybox", command=("sh", "-c", "echo from-master; sleep 1"),
                  resources=res, ends_job=True),
             Task(name="worker", replicas=2, image="busybox", command=("sh", "-c", "echo from-worker; sleep 1"),
                  resources=res))
    w = make_workload(tasks=tasks, kind="pytorch")
    be.create(w)
    st = until(be, kube_cluster, w.uid, {JobPhase.RUNNING})
    wait_for(lambda: len([r for r in be.status(w.uid).replicas if r.phase == "Running"]) == 3,
             step=kube_cluster.step)
    assert {(r.task, r.replica) for r in be.status(w.uid).replicas} == {("master", 0), ("worker", 0), ("worker", 1)}
    assert "from-master" in be.read_logs(w.uid) and "from-worker" in be.read_logs(w.uid, task="worker", replica=1)
    assert be.read_logs(w.uid, task="worker", replica=5) == "" and st.phase == JobPhase.RUNNING


def test_manifests_are_the_objects_made_and_valid_against_the_crds(kube, kube_cluster):
    from tests.kube_schemas import validate

    be = kube()
    w = make_workload("sleep 5")
    be.create(w)
    until(be, kube_cluster, w.uid, {JobPhase.RUNNING})
    [job] = be.manifests(w.uid)
    assert (job["kind"], job["metadata"]["name"]) == ("Job", job_name(w.uid))
    assert "managedFields" not in job["metadata"]
    validate(job)
    assert be.manifests("nope") == []


def test_inventory_from_the_nodes_and_pods(kube, kube_cluster):
    be = kube()
    nodes = be.inventory()
    assert [n.name for n in nodes] == ["node-1", "node-2"]
    assert all(len(n.devices) == 4 and n.devices[0].model == "NVIDIA-A100-SXM4-80GB" for n in nodes)
    w = make_workload("sleep 30", gpus=3)
    be.create(w)
    until(be, kube_cluster, w.uid, {JobPhase.RUNNING})
    held = [n for n in be.inventory() if n.allocations]
    assert len(held) == 1 and sorted(held[0].allocations.values()) == [w.uid] * 3
    kube_cluster.cordon("node-2")
    wait_for(lambda: [n.schedulable for n in be.capacity()] == [True, False])
    assert be.capacity()[1].conditions == ("cordoned",) and be.capacity()[0].allocations == {}


def test_per_project_namespaces_are_made_with_a_default_deny_policy(kube_api, kube_client, kube_cluster):
    options = KubeOptions(namespace_mode="per-project")
    be = KubernetesBackend(options, kube_client)
    try:
        be.adopt()
        be.ensure_queue("vision", parse_quota({"capability": {"nvidia.com/gpu": 8}}))
        w = make_workload("exit 0")
        be.create(w)
        [ns] = [n for n in kube_api.store.list("", "namespaces")[0] if n["metadata"]["name"].startswith("crater-")]
        assert ns["metadata"]["labels"]["crater.io/project"] == "vision"
        policies = kube_api.store.list("networking.k8s.io", "networkpolicies", ns["metadata"]["name"])[0]
        deny = [p for p in policies if p["spec"].get("podSelector") == {} and "Ingress" in p["spec"]["policyTypes"]]
        assert deny, "a default-deny policy"
        done = until(be, kube_cluster, w.uid, {JobPhase.SUCCEEDED})
        assert done.exit_code == 0
    finally:
        be.close()


def test_a_session_has_its_service_among_its_manifests(kube, kube_api, kube_cluster):
    from tests.kube_schemas import validate

    be = kube()
    task = Task(name="main", replicas=1, image="jupyter/base", command=("sh", "-c", "sleep 30"),
                resources=ResourceList(cpu_m=500, memory_bytes=1 << 30), ports=(Port("http", 8888),))
    w = make_workload(tasks=(task,), kind="interactive")
    be.create(w)
    until(be, kube_cluster, w.uid, {JobPhase.RUNNING})
    kinds = [(o["kind"], o["metadata"]["name"]) for o in be.manifests(w.uid)]
    assert kinds == [("Job", job_name(w.uid)), ("Service", f"{job_name(w.uid)}-session")]
    assert kube_api.store.peek("", "services", NS, f"{job_name(w.uid)}-session") is not None
    for obj in be.manifests(w.uid):
        validate(obj)


def test_jobs_of_a_project_with_shares_go_to_leaf_queues(kube, kube_api, kube_client, options):
    """With member shares the project's Queue has children, and Volcano places jobs only in leaf queues: a member
    with a share submits to their own child queue, the others to the project's others queue - read from the cached
    Queues, so that a Crater process that never synced them (another web worker) picks the same."""
    be = kube()
    quota = parse_quota({"capability": {"nvidia.com/gpu": 8}, "deserved": {"nvidia.com/gpu": 4}})
    be.ensure_queue("vision", quota, {"alice": parse_quota({"capability": {"nvidia.com/gpu": 2}})})
    member, others = member_queue_name("vision", "alice", options), others_queue_name("vision", options)
    worker = KubernetesBackend(options, kube_client)  # another process: it has synced no queue
    try:
        worker.adopt()
        wait_for(lambda: member in worker.cache.queues and others in worker.cache.queues)
        alice, bob = make_workload(), dataclasses.replace(make_workload(), user="bob")
        worker.create(alice)
        worker.create(bob)
        for w in (alice, bob):
            wait_for(lambda w=w: kube_api.store.peek(*VC, NS, job_name(w.uid)) is not None)
        assert [kube_api.store.peek(*VC, NS, job_name(w.uid))["spec"]["queue"] for w in (alice, bob)] == \
            [member, others]
    finally:
        worker.close()
