"""/api/v1/jobs with tasks: a PyTorch DDP spec is accepted and read back with its tasks and options; every bad spec
is a 4xx naming the field path and writes nothing."""

from __future__ import annotations

import pytest
from sqlmodel import func, select

from crater_app.db.models import Job
from tests.api.conftest import assert_error

GPU = "nvidia.com/gpu"


def task(name: str, replicas: int = 1, gpus: int = 1, **over) -> dict:
    raw = {"name": name, "replicas": replicas, "image": "pytorch/pytorch:2.4.0-cuda12.1",
           "command": ["torchrun", "train.py"], "resources": {"cpu": "1", "memory": "1Gi", GPU: gpus}}
    raw.update(over)
    return raw


def ddp(**over) -> dict:
    raw = {"name": "ddp", "kind": "pytorch", "tasks": [task("master"), task("worker", replicas=2)],
           "restart_policy": "restart", "max_retry": 2, "shm_size": "512Mi", "ttl_after_finished": "1h",
           "node_selector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
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
    assert body["gpus"] == 3 and body["resources"] == {"cpu": "3", "memory": str(3 * 1024**3), GPU: "3"}
    assert body["command"] == ["torchrun", "train.py"] and body["image"] == "pytorch/pytorch:2.4.0-cuda12.1"
    assert (body["restart_policy"], body["max_retry"], body["shm_size_bytes"], body["ttl_after_finished"]) == (
        "restart", 2, 512 * 1024**2, 3600)
    assert body["node_selector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
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
