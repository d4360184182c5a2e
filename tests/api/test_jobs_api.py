"""/api/v1/jobs and its sub-resources, /api/v1/nodes, /healthz, /api/v1/openapi.json."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from crater_app.services.reconcile import LeaderLoop
from tests.api.conftest import assert_error
from tests.helpers import drive_until

JOB_FIELDS = {"id", "name", "project", "user", "phase", "reason", "exit_code", "resources", "devices", "created_at",
              "started_at", "finished_at"}


def utc(value: str) -> datetime:
    parsed = datetime.fromisoformat(value)
    assert parsed.utcoffset() == timedelta(0), value
    return parsed


def test_submit_returns_201_and_the_job(api):
    r = api.submit(name="train-1", command=["python3", "-c", "print(1)"], resources={"cpu": "500m", "nvidia.com/gpu": 2},
                   env={"EPOCHS": "3"}, max_runtime="2h", priority=7)
    assert r.status_code == 201, r.text
    body = r.json()
    assert JOB_FIELDS <= set(body)
    assert isinstance(body["id"], int) and body["name"] == "train-1" and body["project"] == "default"
    assert body["user"] == "alice" and body["phase"] == "Queued" and body["exit_code"] is None
    # memory is left out: it gets the default (settings.default_job_memory)
    assert body["resources"] == {"cpu": "500m", "nvidia.com/gpu": "2", "memory": "2Gi"} and body["devices"] == []
    assert body["gpus"] == 2 and body["max_runtime"] == 7200 and body["priority"] == 7 and body["env"] == {"EPOCHS": "3"}
    assert body["command"] == ["python3", "-c", "print(1)"]
    utc(body["created_at"])
    assert body["started_at"] is None and body["finished_at"] is None
    assert api.client.get(f"/api/v1/jobs/{body['id']}", headers=api.auth("alice")).json() == body


def test_submit_yaml(api):
    yaml_body = """
name: from-yaml
command: [sh, -c, "echo yaml"]
resources:
  nvidia.com/gpu: 1
  memory: 1Gi
max_runtime: 1h30m
"""
    r = api.client.post("/api/v1/jobs", content=yaml_body.encode(),
                        headers={**api.auth("alice"), "Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["name"] == "from-yaml" and body["command"] == ["sh", "-c", "echo yaml"]
    assert body["resources"] == {"nvidia.com/gpu": "1", "memory": "1Gi", "cpu": "1"} and body["max_runtime"] == 5400
    r = api.client.post("/api/v1/jobs", content=b"name: [unclosed", headers={**api.auth("alice"), "Content-Type": "application/yaml"})
    error = assert_error(r, 422, "invalid", None, "not valid YAML", code="http.body_yaml")
    assert error["args"]["line"] == 1 and error["args"]["column"] == 16


@pytest.mark.local_backend
def test_full_lifecycle_over_http(api):
    created = api.submit(name="life", command=["sh", "-c", "echo out-line; echo err-line >&2; exit 3"]).json()
    loop = LeaderLoop(api.world.ctx)
    drive_until(loop, created["id"], "Failed")
    job = api.client.get(f"/api/v1/jobs/{created['id']}", headers=api.auth("alice")).json()
    assert job["phase"] == "Failed" and job["exit_code"] == 3 and "exited with code 3" in job["reason"]
    assert utc(job["started_at"]) <= utc(job["finished_at"])
    logs = api.client.get(f"/api/v1/jobs/{created['id']}/logs", headers=api.auth("alice"))
    assert logs.status_code == 200 and logs.headers["content-type"].startswith("text/plain")
    assert logs.text == "out-line\nerr-line\n"
    tail = api.client.get(f"/api/v1/jobs/{created['id']}/logs?tail_bytes=9", headers=api.auth("alice"))
    assert tail.text == "err-line\n", "a tail starting at a line boundary keeps its first line"
    partial = api.client.get(f"/api/v1/jobs/{created['id']}/logs?tail_bytes=12", headers=api.auth("alice"))
    assert partial.text == "err-line\n", "a partial first line is dropped"
    assert_error(api.client.get(f"/api/v1/jobs/{created['id']}/logs?tail_bytes=0", headers=api.auth("alice")), 422,
                 "invalid", "tail_bytes")
    evs = api.client.get(f"/api/v1/jobs/{created['id']}/events", headers=api.auth("alice")).json()
    assert [e["phase"] for e in evs][0] == "Queued" and evs[-1]["phase"] == "Failed" and evs[-1]["reason"] == "Error"
    assert "Running" in [e["phase"] for e in evs]
    assert set(evs[0]) == {"id", "at", "phase", "reason", "message", "code", "args"} and all(utc(e["at"]) for e in evs)

    again = api.client.post(f"/api/v1/jobs/{created['id']}/resubmit", headers=api.auth("alice"))
    assert again.status_code == 201
    assert again.json()["resubmitted_from"] == created["id"] and again.json()["phase"] == "Queued"
    assert again.json()["command"] == created["command"]

    assert_error(api.client.delete(f"/api/v1/jobs/{created['id']}", headers=api.auth("alice")), 409, "conflict")


def test_cancel_over_http(api):
    created = api.submit(name="sleeper", command=["sleep", "60"]).json()
    loop = LeaderLoop(api.world.ctx)
    drive_until(loop, created["id"], "Running")
    r = api.client.delete(f"/api/v1/jobs/{created['id']}", headers=api.auth("alice"))
    assert r.status_code == 202 and r.json()["id"] == created["id"], r.text
    body = r.json()
    assert body["phase"] == "Stopping" and body["stop_requested_at"] and body["reason_code"] == "job.stopping_cancelled"
    assert body["reason"] == "stopping: cancelled by alice"
    again = api.client.delete(f"/api/v1/jobs/{created['id']}", headers=api.auth("alice"))
    assert again.status_code == 202 and again.json()["stop_requested_at"] == body["stop_requested_at"]
    drive_until(loop, created["id"], "Cancelled")
    assert api.client.get(f"/api/v1/jobs/{created['id']}", headers=api.auth("alice")).json()["phase"] == "Cancelled"


def test_list_jobs(api):
    ids = [api.submit(name=f"list-{i}", command=["sleep", "60"]).json()["id"] for i in range(5)]
    api.submit("bob", name="bobs-job")
    r = api.client.get("/api/v1/jobs", headers=api.auth("alice"))
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"items", "total", "page", "page_size"}
    assert body["total"] == 5 and body["page"] == 1 and body["page_size"] == 20
    assert [j["id"] for j in body["items"]] == ids[::-1], "newest first"
    assert all(JOB_FIELDS <= set(j) for j in body["items"])
    page = api.client.get("/api/v1/jobs?page=2&page_size=2", headers=api.auth("alice")).json()
    assert [j["id"] for j in page["items"]] == [ids[2], ids[1]] and page["total"] == 5
    assert api.client.get("/api/v1/jobs?page=9", headers=api.auth("alice")).json()["items"] == []
    assert api.client.get("/api/v1/jobs?q=list-3", headers=api.auth("alice")).json()["total"] == 1
    assert api.client.get("/api/v1/jobs?q=list", headers=api.auth("alice")).json()["total"] == 5
    assert api.client.get("/api/v1/jobs?q=%25", headers=api.auth("alice")).json()["total"] == 0
    assert api.client.get("/api/v1/jobs?phase=Queued", headers=api.auth("alice")).json()["total"] == 5
    assert api.client.get("/api/v1/jobs?phase=Running", headers=api.auth("alice")).json()["total"] == 0
    assert api.client.get("/api/v1/jobs", headers=api.auth("admin")).json()["total"] == 6
    assert api.client.get("/api/v1/jobs", headers=api.auth("bob")).json()["total"] == 1
    for query, field in (("page_size=0", "page_size"), ("page_size=201", "page_size"), ("page=0", "page"),
                         ("page=abc", "page"), ("phase=Done", "phase"), ("q=" + "x" * 64, "q")):
        assert_error(api.client.get(f"/api/v1/jobs?{query}", headers=api.auth("alice")), 422, "invalid", field)


def test_visibility(api):
    job = api.submit(name="alices", command=["sleep", "60"]).json()
    for method, path in (("GET", f"/api/v1/jobs/{job['id']}"), ("DELETE", f"/api/v1/jobs/{job['id']}"),
                         ("GET", f"/api/v1/jobs/{job['id']}/logs"), ("GET", f"/api/v1/jobs/{job['id']}/events"),
                         ("POST", f"/api/v1/jobs/{job['id']}/resubmit")):
        assert_error(api.client.request(method, path, headers=api.auth("bob")), 404, "not_found", "id")
    assert api.client.get(f"/api/v1/jobs/{job['id']}", headers=api.auth("admin")).status_code == 200
    assert api.client.get(f"/api/v1/jobs/{job['id']}", headers=api.auth("alice")).status_code == 200
    for missing in ("424242", "0", "2147483648", "9223372036854775808", "99999999999999999999"):
        for method, suffix in (("GET", ""), ("DELETE", ""), ("GET", "/logs"), ("GET", "/events"), ("POST", "/resubmit")):
            r = api.client.request(method, f"/api/v1/jobs/{missing}{suffix}", headers=api.auth("alice"))
            assert_error(r, 404, "not_found", "id")
    # an id is its digits: anything else is not an id (not another spelling of job 1)
    for bad in ("abc", "-1", "1.0", "%201", "+1", "1e0", "１", "9" * 65):
        assert_error(api.client.get(f"/api/v1/jobs/{bad}", headers=api.auth("alice")), 422, "invalid", "id",
                     code="request.integer_digits")
    r = api.client.delete(f"/api/v1/jobs/{job['id']}", headers=api.auth("admin"))
    assert r.status_code == 202
    drive_until(LeaderLoop(api.world.ctx), job["id"], "Cancelled")


def test_guest_cannot_submit(api):
    assert_error(api.submit("gus", name="guest-job"), 403, "forbidden", "project")
    assert api.client.get("/api/v1/jobs", headers=api.auth("gus")).json()["total"] == 0


@pytest.mark.local_backend
def test_nodes(api):
    busy = api.submit(name="holder", command=["sleep", "60"], resources={"nvidia.com/gpu": 2}).json()
    drive_until(LeaderLoop(api.world.ctx), busy["id"], "Running")
    r = api.client.get("/api/v1/nodes", headers=api.auth("alice"))
    assert r.status_code == 200
    [node] = r.json()
    assert node["backend"] == "local" and node["cpu_m"] > 0 and node["memory_bytes"] > 0
    assert node["models"] == ["NVIDIA-A100-SXM4-80GB"]
    devices = node["devices"]
    assert [d["index"] for d in devices] == [0, 1, 2, 3]
    assert [(d["busy"], d["job_id"], d["user"]) for d in devices] == [
        (True, busy["id"], "alice"), (True, busy["id"], "alice"), (False, None, None), (False, None, None)]
    hidden = api.client.get("/api/v1/nodes", headers=api.auth("bob")).json()[0]["devices"]
    assert [(d["busy"], d["job_id"], d["job_name"], d["user"]) for d in hidden[:2]] == [(True, None, None, None)] * 2
    assert api.client.get("/api/v1/nodes", headers=api.auth("gus")).status_code == 200
    assert_error(api.client.get("/api/v1/nodes"), 401, "unauthenticated")


@pytest.mark.local_backend
def test_healthz_and_openapi(api):
    r = api.client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok", "backend": "local", "nodes": 1}
    spec = api.client.get("/api/v1/openapi.json")
    assert spec.status_code == 200
    paths = spec.json()["paths"]
    for path in ("/api/v1/auth/token", "/api/v1/me", "/api/v1/users", "/api/v1/jobs", "/api/v1/jobs/{id}",
                 "/api/v1/jobs/{id}/resubmit", "/api/v1/jobs/{id}/logs", "/api/v1/jobs/{id}/events",
                 "/api/v1/nodes", "/healthz"):
        assert path in paths, path
    assert {"get", "post"} <= set(paths["/api/v1/jobs"]) and {"get", "delete"} <= set(paths["/api/v1/jobs/{id}"])
    # Bodies the API decodes itself are still described, and bearer auth is declared.
    body = paths["/api/v1/jobs"]["post"]["requestBody"]["content"]
    assert set(body) == {"application/json", "application/yaml"}
    assert {"name", "command", "resources"} <= set(body["application/json"]["schema"]["properties"])
    assert set(paths["/api/v1/auth/token"]["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"]) == {
        "username", "password"}
    assert "HTTPBearer" in spec.json()["components"]["securitySchemes"]
    assert paths["/api/v1/jobs"]["get"]["security"] == [{"HTTPBearer": []}, {"APIKeyCookie": []}]  # either


def test_unknown_routes_and_methods_use_the_envelope(api):
    assert_error(api.client.get("/api/v1/nothing-here", headers=api.auth("alice")), 404, "not_found")
    assert_error(api.client.put("/api/v1/jobs", headers=api.auth("alice"), json={}), 405, "method_not_allowed")
    assert_error(api.client.post("/api/v1/jobs/1/cancel", headers=api.auth("alice")), 404, "not_found", "path")
    assert_error(api.client.delete("/api/v1/nodes/x/y"), 404, "not_found", "path")
