"""/api/v1/jobs/{id}/replicas, /logs per task and replica (also followed while the job runs) and /manifest: the
answers, the refusals (in English and Chinese) and who may read them."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
import uvicorn
import yaml

from crater_app.api.app import build_api
from crater_app.services.leader import LeaderLoop
from tests.api.conftest import assert_error
from tests.helpers import drive_until, free_port, job_row, wait_for

ZH = {"Accept-Language": "zh-CN"}
GPU = "nvidia.com/gpu"


def gang(api, who: str = "alice", seconds: int = 5):
    """A batch job of task ``master`` (1 replica) and ``worker`` (2), one GPU each, that each print a line."""
    tasks = [{"name": "master", "replicas": 1, "command": ["sh", "-c", f"echo master-out; sleep {seconds}"],
              "resources": {GPU: 1}},
             {"name": "worker", "replicas": 2, "command": ["sh", "-c", f"echo worker-out; sleep {seconds}"],
              "resources": {GPU: 1}}]
    r = api.client.post("/api/v1/jobs", json={"name": "gang", "tasks": tasks}, headers=api.auth(who))
    assert r.status_code == 201, r.text
    return r.json()


def get(api, job: dict, suffix: str, who: str = "alice", headers: dict | None = None, **params):
    return api.client.get(f"/api/v1/jobs/{job['id']}/{suffix}", params=params,
                          headers={**api.auth(who), **(headers or {})})


def test_replicas_of_a_running_gang_with_their_devices(api):
    job = gang(api)
    drive_until(LeaderLoop(api.world.ctx), job["id"], "Running")
    r = get(api, job, "replicas")
    assert r.status_code == 200, r.text
    rows = r.json()
    assert [(x["task"], x["replica"], x["phase"], x["node"]) for x in rows] == [
        ("master", 0, "Running", "fake-node"), ("worker", 0, "Running", "fake-node"),
        ("worker", 1, "Running", "fake-node")]
    devices = [tuple(x["devices"]) for x in rows]
    assert all(len(d) == 1 for d in devices) and len(set(devices)) == 3, "each replica holds its own GPU"
    assert set(rows[0]) == {"task", "replica", "phase", "node", "devices", "exit_code", "reason", "message",
                            "restarts"}
    assert rows[0]["exit_code"] is None and rows[0]["restarts"] == 0


def test_logs_per_task_and_replica_and_the_default_first_task(api):
    job = gang(api)
    drive_until(LeaderLoop(api.world.ctx), job["id"], "Running")
    assert get(api, job, "logs", task="worker", replica=1).text == "worker-out\n"
    assert get(api, job, "logs", task="master").text == "master-out\n"
    default = get(api, job, "logs")
    assert default.status_code == 200 and default.headers["content-type"].startswith("text/plain")
    assert default.text == "master-out\n", "without task and replica: the first task's first replica, as before"


@pytest.mark.parametrize(("params", "code", "field", "en", "zh"), [
    ({"task": "launcher"}, "replicas.task_unknown", "task", "has no task 'launcher'; its tasks are master and worker",
     "没有任务“launcher”"),
    ({"task": "worker", "replica": 2}, "replicas.replica_unknown", "replica",
     "task 'worker' of job", "没有副本 2"),
    ({"replica": 1}, "replicas.replica_unknown", "replica", "task 'master'", "共 1 个副本"),
])
def test_an_unknown_task_or_replica_is_a_404_naming_it_in_both_languages(api, params, code, field, en, zh):
    job = gang(api)
    drive_until(LeaderLoop(api.world.ctx), job["id"], "Running")
    error = assert_error(get(api, job, "logs", **params), 404, "not_found", field, en, code=code)
    assert error["args"]["id"] == job["id"]
    assert_error(get(api, job, "logs", headers=ZH, **params), 404, "not_found", field, zh, code=code)
    followed = get(api, job, "logs", follow="true", **params)
    assert_error(followed, 404, "not_found", field, en, code=code)


def test_bad_replica_and_task_parameters_are_422(api):
    job = gang(api)
    assert_error(get(api, job, "logs", replica=-1), 422, "invalid", "replica")
    assert_error(get(api, job, "logs", task="x" * 64), 422, "invalid", "task")
    assert_error(get(api, job, "logs", tail_bytes=0, follow="true"), 422, "invalid", "tail_bytes")


def test_a_job_the_backend_forgot_has_no_replicas_and_its_tasks_still_checked(api):
    job = gang(api)
    loop = LeaderLoop(api.world.ctx)
    drive_until(loop, job["id"], "Running")
    api.world.ctx.backend.forget(job_row(api.world.ctx, job["id"]).uid)
    assert get(api, job, "replicas").json() == []
    assert get(api, job, "logs", task="worker", replica=1).text == ""
    assert_error(get(api, job, "logs", task="launcher"), 404, "not_found", "task", code="replicas.task_unknown")


def test_other_users_learn_nothing(api):
    job = gang(api)
    for suffix in ("replicas", "logs", "manifest"):
        for who in ("bob", "gus"):
            assert_error(get(api, job, suffix, who=who), 404, "not_found", "id", code="job.unknown")
        assert_error(api.client.get(f"/api/v1/jobs/{job['id']}/{suffix}"), 401, "unauthenticated")
    assert get(api, job, "replicas", who="admin").status_code == 200


MANIFESTS = [
    {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
     "metadata": {"name": "gang-1", "labels": {"crater.io/project": "default"}},
     "spec": {"schedulerName": "volcano", "minAvailable": 3, "tasks": [{"name": "master", "replicas": 1}]}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "gang-1"}, "spec": {"clusterIP": "None"}},
]


def test_the_manifest_as_yaml_or_json_from_a_backend_that_keeps_objects(api):
    job = gang(api)
    uid = job_row(api.world.ctx, job["id"]).uid
    assert_error(get(api, job, "manifest"), 404, "not_found", "id", code="replicas.manifest_none")
    api.world.ctx.backend.keep_manifests(uid, MANIFESTS)
    r = get(api, job, "manifest")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/yaml")
    assert list(yaml.safe_load_all(r.text)) == MANIFESTS and r.text.count("\n---\n") == 1
    assert r.text.startswith("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n"), "keys in the backend's order"
    as_json = get(api, job, "manifest", headers={"Accept": "application/json"})
    assert as_json.headers["content-type"].startswith("application/json")
    assert as_json.json() == {"apiVersion": "v1", "kind": "List", "items": MANIFESTS}
    assert get(api, job, "manifest", headers={"Accept": "application/json;q=0.5, application/yaml"}).text == r.text


@pytest.mark.local_backend
def test_the_local_backend_keeps_no_manifest_and_says_why(api):
    job = api.submit(command=["true"]).json()
    assert_error(get(api, job, "manifest"), 404, "not_found", "id", "the local backend runs processes, not Kubernetes",
                 code="replicas.manifest_processes")
    assert_error(get(api, job, "manifest", headers=ZH), 404, "not_found", "id", "运行的是进程",
                 code="replicas.manifest_processes")


@pytest.fixture
def server(api):
    """The API served by a real HTTP server (uvicorn) on a free port, with the leader loop running beside it: an
    answer streamed in pieces arrives in pieces (the test client would gather the whole body first)."""
    loop = LeaderLoop(api.world.ctx)
    leader = threading.Thread(target=loop.run, daemon=True)
    leader.start()
    port = free_port()
    http = uvicorn.Server(uvicorn.Config(build_api(lambda: api.world.ctx), host="127.0.0.1", port=port,
                                         log_level="warning", lifespan="off"))
    serving = threading.Thread(target=http.run, daemon=True)
    serving.start()
    wait_for(lambda: http.started, 10, what="uvicorn to start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        http.should_exit = True
        serving.join(10)
        loop.stop()
        leader.join(10)


@pytest.mark.local_backend
def test_follow_streams_a_running_local_job_until_it_ends(api, server):
    job = api.submit(name="ticker", command=["sh", "-c", "echo one; sleep 1.5; echo two; sleep 1.5; echo three"]).json()
    pieces: list[tuple[float, str]] = []
    with httpx.stream("GET", f"{server}/api/v1/jobs/{job['id']}/logs", params={"follow": "true"},
                      headers=api.auth("alice"), timeout=30) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        for text in r.iter_text():
            pieces.append((time.monotonic(), text))
    ended = time.monotonic()
    assert "".join(t for _, t in pieces) == "one\ntwo\nthree\n", pieces
    assert len(pieces) >= 2, "what the job writes comes while it runs, not all at the end"
    first_one = next(at for at, t in pieces if "one" in t)
    assert ended - first_one > 2, "'one' arrived seconds before the stream ended"
    assert job_row(api.world.ctx, job["id"]).phase == "Succeeded", "the stream ends once the job is final"


@pytest.mark.local_backend
def test_a_local_gang_has_a_log_and_a_status_per_replica(api):
    small = {GPU: 1, "cpu": "100m", "memory": "64Mi"}
    tasks = [{"name": "master", "replicas": 1, "command": ["sh", "-c", "echo master-out; sleep 2"], "resources": small},
             {"name": "worker", "replicas": 2, "command": ["sh", "-c", "echo worker-out $VC_TASK_INDEX; sleep 2"],
              "resources": small}]
    r = api.client.post("/api/v1/jobs", json={"name": "gang", "tasks": tasks},
                        headers=api.auth("alice"))
    assert r.status_code == 201, r.text
    job = r.json()
    loop = LeaderLoop(api.world.ctx)
    drive_until(loop, job["id"], "Running")
    rows = get(api, job, "replicas").json()
    assert [(r["task"], r["replica"], r["phase"]) for r in rows] == [
        ("master", 0, "Running"), ("worker", 0, "Running"), ("worker", 1, "Running")], rows
    assert all(r["node"] == rows[0]["node"] != "" for r in rows), rows
    assert sorted(d for r in rows for d in r["devices"]) == [0, 1, 2], "each replica its own device"
    drive_until(loop, job["id"], "Succeeded")
    assert get(api, job, "logs", task="master").text == "master-out\n"
    assert get(api, job, "logs", task="worker", replica=0).text == "worker-out 0\n"
    assert get(api, job, "logs", task="worker", replica=1).text == "worker-out 1\n"
    assert get(api, job, "logs").text == "master-out\n"
    assert_error(get(api, job, "logs", task="worker", replica=2), 404, "not_found", "replica",
                 code="replicas.replica_unknown")
