"""/api/v1/jobs with tasks: a PyTorch DDP spec is accepted and read back with its tasks and options; every bad spec
is a 4xx naming the field path and writes nothing."""

from __future__ import annotations

import pytest
from sqlmodel import func, select

from crater_app.cluster.base import ENFORCES_DEADLINES, HOST_PROCESSES, PVC_VOLUMES, NodeInventory
from crater_app.db.models import Job
from tests.api.conftest import assert_error
from tests.conftest import gpu_devices

GPU = "nvidia.com/gpu"


def task(name: str, replicas: int = 1, gpus: int = 1, **over) -> dict:
    raw = {"name": name, "replicas": replicas, "image": "pytorch/pytorch:2.4.0-cuda12.1",
           "command": ["torchrun", "train.py"], "resources": {"cpu": "1", "memory": "1Gi", GPU: gpus}}
    raw.update(over)
    return raw


def ddp(**over) -> dict:
    raw = {"name": "ddp", "kind": "pytorch", "tasks": [task("master"), task("worker", replicas=2)],
           "restart_policy": "restart", "max_retry": 2, "shm_size": "512Mi", "ttl_after_finished": "1h",
           "node_selector": {"kubernetes.io/os": "linux"},
           "volumes": [{"source": "project", "mount_path": "/data", "read_only": True}]}
    raw.update(over)
    return raw


def jobs_written(api) -> int:
    with api.world.ctx.session() as s:
        return s.exec(select(func.count()).select_from(Job)).one()


def post(api, body: dict, who: str = "alice", lang: str | None = None):
    headers = api.auth(who)
    if lang:
        headers["Accept-Language"] = lang
    return api.client.post("/api/v1/jobs", json=body, headers=headers)


def test_a_ddp_spec_is_accepted_with_its_tasks_totals_and_options(api):
    r = post(api, ddp())
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["kind"] == "pytorch" and body["min_available"] is None
    master, worker = body["tasks"]
    assert (master["name"], master["replicas"], master["ends_job"]) == ("master", 1, True)
    assert (worker["name"], worker["replicas"], worker["ends_job"]) == ("worker", 2, False)
    assert master["ports"] == worker["ports"] == [{"name": "pytorchjob-port", "port": 23456, "protocol": "TCP"}]
    assert worker["resources"] == {"cpu": "1", "memory": "1Gi", GPU: "1"}  # per replica, as submitted
    # the job's resources are the totals over its three replicas: what quotas, admission and usage count
    assert body["gpus"] == 3 and body["resources"] == {"cpu": "3", "memory": "3Gi", GPU: "3"}
    assert body["command"] == ["torchrun", "train.py"] and body["image"] == "pytorch/pytorch:2.4.0-cuda12.1"
    assert (body["restart_policy"], body["max_retry"], body["shm_size_bytes"], body["ttl_after_finished"]) == (
        "restart", 2, 512 * 1024**2, 3600)
    assert body["node_selector"] == {"kubernetes.io/os": "linux"}
    assert body["volumes"] == [{"source": "project", "mount_path": "/data", "claim": None, "sub_path": "",
                                "read_only": True}]
    assert api.client.get(f"/api/v1/jobs/{body['id']}", headers=api.auth("alice")).json() == body
    listed = api.client.get("/api/v1/jobs", headers=api.auth("alice")).json()["items"]
    assert [j["tasks"] for j in listed if j["id"] == body["id"]] == [body["tasks"]]


def test_the_single_task_form_is_read_back_as_one_task_main(api):
    r = api.submit(name="one", command=["python3", "x.py"], resources={"cpu": "500m", "memory": "1Gi"})
    assert r.status_code == 201, r.text
    (only,) = r.json()["tasks"]
    assert (only["name"], only["replicas"], only["command"], only["resources"]) == (
        "main", 1, ["python3", "x.py"], {"cpu": "500m", "memory": "1Gi"})
    assert r.json()["resources"] == {"cpu": "500m", "memory": "1Gi"}


@pytest.mark.parametrize("body, status, field, code, words", [
    (ddp(tasks=[task("master"), task("worker"), task("worker")]), 422, "tasks[2].name", "job.task_name_duplicate",
     ["'worker' is already used by tasks[1]"]),
    (ddp(min_available=4), 422, "min_available", "job.min_available_range", ["1 to 3"]),
    (ddp(command=["python"]), 422, "command", "job.tasks_conflict", ["cannot be given together with tasks"]),
    (ddp(tasks=[task("worker", replicas=2)]), 422, "tasks", "job.kind_task_missing", ["master"]),
    (ddp(tasks=[task("master"), task("worker", ports=[{"name": "x", "port": 0}])]), 422,
     "tasks[1].ports[0].port", "job.port_number", ["1 to 65535"]),
    (ddp(volumes=[{"source": "pvc", "mount_path": "/d"}]), 422, "volumes[0].claim", "job.volume_claim_required", []),
    (ddp(shm_size="2Gi"), 422, "shm_size", "job.shm_size_memory", ["task master"]),
    (ddp(node_selector={"bad key": "x"}), 422, "node_selector.bad key", "job.node_selector_key", []),
    (ddp(restart_policy="always"), 422, "restart_policy", "job.restart_policy", []),
    (ddp(restart_policy="OnFailure"), 422, "restart_policy", "job.restart_policy_suggestion",
     ["did you mean 'restart'"]),
    (ddp(tasks=[task("master"), {**task("worker"), "replica": 2}]), 422, "tasks[1].replica",
     "job.unknown_field_suggestion", ["did you mean 'replicas'"]),
    (ddp(minAvailable=2), 422, "minAvailable", "job.unknown_field_suggestion", ["did you mean 'min_available'"]),
    # a replica larger than the largest node (4 devices)
    (ddp(tasks=[task("master"), task("worker", gpus=8)]), 422, "tasks[1].resources.nvidia.com/gpu",
     "job.replica_never_fits_devices", ["largest node has 4 × nvidia.com/gpu; one replica cannot get 8"]),
    (ddp(tasks=[task("master"), task("worker", resources={"memory": "100Pi"})]), 422, "tasks[1].resources.memory",
     "job.replica_never_fits_memory", ["largest node has"]),
    # a gang larger than the cluster (1 + 4 replicas of one device each, 4 devices)
    (ddp(tasks=[task("master"), task("worker", replicas=4)]), 422, "tasks", "job.gang_exceeds_cluster",
     ["a gang of 5 replicas needs 5 × nvidia.com/gpu"]),
    (ddp(tasks=[task("master"), task("worker", replicas=5)], min_available=5), 422, "min_available",
     "job.gang_exceeds_cluster", ["a gang of 5 replicas"]),
    # a selector no node matches: the key, the value and how many nodes have the key
    (ddp(node_selector={"kubernetes.io/os": "linux", "zone": "a"}), 422, "node_selector.zone",
     "job.node_selector_unmatched", ["no schedulable node has the label zone=a", "0 of the 1 schedulable nodes"]),
    (ddp(node_selector={"kubernetes.io/hostname": "gpu-99"}), 422, "node_selector.kubernetes.io/hostname",
     "job.node_selector_unmatched", ["1 of the 1 schedulable nodes have the label kubernetes.io/hostname"]),
    # variables the kind or the gang gets from the platform
    (ddp(tasks=[task("master"), task("worker", env={"RANK": "1"})]), 422, "tasks[1].env.RANK", "job.env_reserved",
     ["RANK is set by Crater"]),
    (ddp(tasks=[task("master", env={"VC_WORKER_HOSTS": "x"}), task("worker")]), 422, "tasks[0].env.VC_WORKER_HOSTS",
     "job.env_reserved", []),
    ({"name": "mpi", "kind": "mpi", "tasks": [task("launcher", gpus=0, env={"MPI_HOST": "a,b"}), task("worker")]},
     422, "tasks[0].env.MPI_HOST", "job.env_reserved", []),
    # what the container runtime mounts itself; objects deleted before Crater read the end
    (ddp(volumes=[{"source": "project", "mount_path": "/sys/fs"}]), 422, "volumes[0].mount_path",
     "job.volume_mount_path_system", ["at or under /sys"]),
    (ddp(ttl_after_finished=0), 422, "ttl_after_finished", "job.ttl_after_finished_min", ["at least 60 seconds"]),
    # this backend mounts no PersistentVolumeClaim (capability PVC_VOLUMES)
    (ddp(volumes=[{"source": "pvc", "claim": "imagenet", "mount_path": "/d"}]), 422, "volumes[0].source",
     "job.volume_pvc_unsupported", ["cannot mount a PersistentVolumeClaim"]),
])
def test_every_bad_spec_is_a_4xx_naming_the_field_and_writes_nothing(api, body, status, field, code, words):
    before = jobs_written(api)
    assert_error(post(api, body), status, None, field, *words, code=code)
    assert jobs_written(api) == before


def test_the_messages_follow_the_readers_language(api):
    r = post(api, ddp(tasks=[task("master"), task("worker", gpus=8)]), lang="zh-CN")
    assert_error(r, 422, "unschedulable", "tasks[1].resources.nvidia.com/gpu", "最大的节点只有 4 × nvidia.com/gpu",
                 code="job.replica_never_fits_devices")
    assert r.json()["error"]["args"] == {"resource": GPU, "have": 4, "request": 8}


def test_a_gang_larger_than_the_projects_capability_is_refused(api):
    r = api.client.put("/api/v1/projects/default/quota", json={"capability": {GPU: 2}}, headers=api.auth("admin"))
    assert r.status_code == 200, r.text
    before = jobs_written(api)
    error = assert_error(post(api, ddp()), 422, "unschedulable", "tasks", "the project's capability is",
                         code="job.gang_exceeds_capability")
    assert error["args"] == {"gang": 3, "request": {GPU: 3}, "capability": {GPU: 2}}
    assert jobs_written(api) == before


def node(name: str, gpus: int) -> NodeInventory:
    return NodeInventory(name=name, cpu_m=64000, memory_bytes=256 * 1024**3, devices=tuple(gpu_devices(gpus)),
                         source="test",
                         labels={"kubernetes.io/os": "linux", "kubernetes.io/hostname": name})


def test_a_gang_whose_replicas_do_not_pack_onto_the_nodes_is_refused(api, monkeypatch):
    # nodes of 4 and 2 devices: 6 in all, yet a replica of 3 fits only the first
    monkeypatch.setattr(api.world.ctx.backend, "capacity", lambda: [node("four", 4), node("two", 2)])
    before = jobs_written(api)
    body = {"name": "pair", "tasks": [task("w", replicas=2, gpus=3)]}
    error = assert_error(post(api, body), 422, "unschedulable", "tasks[0].resources",
                         "a gang of 2 replicas of", "hold only 1 of them at once (four: 1, two: 0)",
                         code="job.gang_cannot_pack_task")
    assert (error["args"]["gang"], error["args"]["placed"], error["args"]["nodes"]) == (2, 1, 2)
    assert_error(post(api, ddp(tasks=[task("master", gpus=3), task("worker", gpus=3)])), 422, "unschedulable",
                 "tasks", code="job.gang_cannot_pack")
    # the selector leaves out the node of 4: no node holds one replica of 3
    assert_error(post(api, {**body, "node_selector": {"kubernetes.io/hostname": "two"}}), 422, "unschedulable",
                 "tasks[0].resources.nvidia.com/gpu", "largest node has 2 × nvidia.com/gpu; one replica cannot get 3",
                 code="job.replica_never_fits_devices")
    assert jobs_written(api) == before
    r = post(api, {"name": "fits", "tasks": [task("w", replicas=2, gpus=2)]})  # one on each node
    assert r.status_code == 201, r.text


def with_claims(api, monkeypatch, claims: dict) -> None:
    ctx = api.world.ctx
    monkeypatch.setattr(ctx.backend, "capabilities", frozenset({ENFORCES_DEADLINES, PVC_VOLUMES}))
    monkeypatch.setattr(ctx, "settings", ctx.settings.model_copy(update={"volume_claims": claims}))


def pvc(claim: str) -> dict:
    return ddp(volumes=[{"source": "project", "mount_path": "/data"},
                        {"source": "pvc", "claim": claim, "sub_path": "train", "mount_path": "/datasets"}])


def test_a_pvc_is_mounted_only_where_it_is_registered_for_the_project(api, monkeypatch):
    with_claims(api, monkeypatch, {"imagenet": ["*"], "vision-ckpt": ["vision"], "coco": ["default"]})
    before = jobs_written(api)
    error = assert_error(post(api, pvc("vision-ckpt")), 422, None, "volumes[1].claim",
                         "'vision-ckpt' is not registered for project default", "it may mount coco, imagenet",
                         code="job.volume_claim_not_registered")
    assert error["args"] == {"claim": "vision-ckpt", "project": "default", "claims": "coco, imagenet"}
    # the claim of every project's and user's spaces: never as a pvc
    assert_error(post(api, pvc("crater-spaces")), 422, None, "volumes[1].claim", "every project's and user's spaces",
                 code="job.volume_claim_spaces")
    assert_error(post(api, pvc("vision-ckpt"), lang="zh-CN"), 422, None, "volumes[1].claim", "未登记给项目 default",
                 code="job.volume_claim_not_registered")
    assert jobs_written(api) == before
    r = post(api, pvc("imagenet"))
    assert r.status_code == 201, r.text
    assert r.json()["volumes"][1] == {"source": "pvc", "claim": "imagenet", "sub_path": "train",
                                      "mount_path": "/datasets", "read_only": False}


def test_without_a_registry_no_pvc_is_mounted(api, monkeypatch):
    with_claims(api, monkeypatch, {})
    before = jobs_written(api)
    assert_error(post(api, pvc("imagenet")), 422, None, "volumes[1].claim", "no claim is", "CRATER_VOLUME_CLAIMS",
                 code="job.volume_claim_none_registered")
    assert jobs_written(api) == before


def test_a_backend_of_host_processes_mounts_no_volume_but_takes_shm_size_and_ttl(api, monkeypatch):
    monkeypatch.setattr(api.world.ctx.backend, "capabilities", frozenset({ENFORCES_DEADLINES, HOST_PROCESSES}))
    before = jobs_written(api)
    assert_error(post(api, ddp()), 422, None, "volumes[0]", "processes on this machine", "mounts nothing",
                 code="job.volume_host_processes")
    assert_error(post(api, ddp(), lang="zh-CN"), 422, None, "volumes[0]", "本机", code="job.volume_host_processes")
    assert jobs_written(api) == before
    r = post(api, ddp(volumes=[]))  # shm_size and ttl_after_finished: accepted, documented as not applying
    assert r.status_code == 201, r.text
    assert (r.json()["shm_size_bytes"], r.json()["ttl_after_finished"]) == (512 * 1024**2, 3600)
