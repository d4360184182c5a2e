"""The cluster simulator acts as Volcano and the kubelet do for the Jobs the Kubernetes backend creates: pods per
task and replica, gang scheduling, runs, logs, Volcano's phases and policies, foreground deletion."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kube_api.cluster import ManualClock, NodeSpec

VC = ("batch.volcano.sh", "v1alpha1")


def task(name: str, script: str, replicas: int = 1, gpus: int = 1, policies: list | None = None) -> dict:
    container = {"name": name, "image": "pytorch:2", "command": ["sh", "-c", script],
                 "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
    return {"name": name, "replicas": replicas, "template": {"spec": {"containers": [container]}},
            **({"policies": policies} if policies else {})}


def vcjob(name: str, tasks: list[dict], **spec) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"schedulerName": "volcano", "queue": "default", "tasks": tasks, **spec}}


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def sim(make_kube_cluster, clock):
    return make_kube_cluster(clock=clock)


@pytest.fixture
def custom(kube_client):
    return client.CustomObjectsApi(kube_client)


@pytest.fixture
def core(kube_client):
    return client.CoreV1Api(kube_client)


def phase(custom, name: str) -> str:
    return custom.get_namespaced_custom_object(*VC, "default", "jobs", name)["status"]["state"]["phase"]


def pods(core) -> dict[str, str]:
    return {p.metadata.name: p.status.phase for p in core.list_namespaced_pod("default").items}


def test_a_job_runs_through_pending_running_completed_with_logs(sim, clock, custom, core):
    custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("train", [
        task("master", "echo ready; sleep 5; exit 0"), task("worker", "echo w; sleep 5; exit 0", replicas=2)]))
    sim.step()
    assert phase(custom, "train") == "Pending"
    made = core.read_namespaced_pod("train-worker-1", "default")
    assert made.metadata.labels["volcano.sh/job-name"] == "train"
    assert made.metadata.owner_references[0].kind == "Job" and made.metadata.owner_references[0].controller
    sim.step()
    assert {p.spec.node_name for p in core.list_namespaced_pod("default").items} <= {"node-1", "node-2"}
    sim.step()
    assert phase(custom, "train") == "Running" and set(pods(core).values()) == {"Running"}
    assert core.read_namespaced_pod_log("train-master-0", "default") == "ready\n"
    clock.advance(5)
    sim.step()
    status = custom.get_namespaced_custom_object(*VC, "default", "jobs", "train")["status"]
    assert status["state"]["phase"] == "Completed" and status["succeeded"] == 3
    assert custom.list_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", "default", "podgroups")[
        "items"][0]["status"]["phase"] == "Completed"


def test_a_gang_that_does_not_fit_stays_pending_with_the_schedulers_message(sim, custom, core):
    custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("big", [task("w", "sleep 1", 3, gpus=4)]))
    sim.settle()
    assert phase(custom, "big") == "Pending" and set(pods(core).values()) == {"Pending"}
    cond = core.read_namespaced_pod("big-w-0", "default").status.conditions[0]
    assert (cond.reason, cond.message) == ("Unschedulable", "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu.")
    assert "FailedScheduling" in {e.reason for e in core.list_namespaced_event("default").items}


def test_a_failed_pod_with_restart_job_restarts_until_max_retry(sim, clock, custom, core):
    custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob(
        "flaky", [task("main", "sleep 1; exit 3")], maxRetry=1,
        policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    seen = []
    for _ in range(30):
        sim.step()
        clock.advance(1)
        state = phase(custom, "flaky")
        if not seen or seen[-1] != state:
            seen.append(state)
        if state == "Failed":
            break
    assert seen == ["Pending", "Running", "Restarting", "Pending", "Running", "Failed"]
    assert custom.get_namespaced_custom_object(*VC, "default", "jobs", "flaky")["status"]["retryCount"] == 1


def test_oom_and_eviction_are_reported_as_the_kubelet_does(sim, clock, custom, core):
    custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("oom", [task("main", "sleep 1; exit 137")]))
    custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("ev", [task("main", "sleep 100")]))
    sim.settle()
    sim.evict("default", "ev-main-0")
    clock.advance(1)
    sim.settle()
    oom = core.read_namespaced_pod("oom-main-0", "default").status.container_statuses[0].state.terminated
    assert (oom.exit_code, oom.reason) == (137, "OOMKilled")
    assert core.read_namespaced_pod("ev-main-0", "default").status.reason == "Evicted"
    assert (phase(custom, "oom"), phase(custom, "ev")) == ("Failed", "Failed")


def test_queue_capability_cordon_and_model_selector_keep_pods_pending(make_kube_cluster, custom, core):
    sim = make_kube_cluster(nodes=(NodeSpec("a100", 4), NodeSpec("h100", 4, product="NVIDIA-H100-80GB-HBM3")))
    custom.create_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "p1"},
        "spec": {"capability": {"nvidia.com/gpu": "2"}}})
    custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("over", [task("w", "sleep 9", gpus=3)],
                                                                       queue="p1"))
    sim.cordon("h100")
    h100 = task("w", "sleep 9")
    h100["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("h", [h100]))
    sim.settle()
    messages = {p.metadata.name: p.status.conditions[0].message for p in core.list_namespaced_pod("default").items}
    assert messages == {"over-w-0": "queue p1 resource quota insufficient: nvidia.com/gpu",
                        "h-w-0": "0/2 nodes are unavailable: 1 node(s) didn't match Pod's node affinity/selector, "
                                 "1 node(s) were unschedulable."}
    sim.cordon("h100", False)
    sim.settle()
    assert pods(core)["h-w-0"] == "Running"


def test_foreground_delete_of_a_running_job_waits_for_its_pods(sim, custom, core):
    custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("j", [task("w", "sleep 100", 2)]))
    sim.settle()
    custom.delete_namespaced_custom_object(*VC, "default", "jobs", "j", propagation_policy="Foreground")
    stopping = custom.get_namespaced_custom_object(*VC, "default", "jobs", "j")
    assert stopping["metadata"]["deletionTimestamp"] and len(core.list_namespaced_pod("default").items) == 2
    sim.step()
    assert core.list_namespaced_pod("default").items == []
    assert custom.list_namespaced_custom_object(*VC, "default", "jobs")["items"] == []
