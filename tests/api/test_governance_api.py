"""/api/v1/projects, /members, /tokens, /operation-logs: answers, bad input (4xx naming the field, writing nothing)."""

from __future__ import annotations

import csv
import io

from tests.api.conftest import assert_error
from tests.helpers import counts


def test_projects_flow(api):
    c, admin = api.client, api.auth("admin")
    r = c.post("/api/v1/projects", headers=admin, json={"name": "vision", "display_name": "Vision",
                                                        "expires_at": "2099-01-01T00:00:00Z"})
    assert r.status_code == 201, r.text
    assert r.json()["expires_at"].startswith("2099-01-01T00:00:00") and r.json()["members"] is None
    r = c.put("/api/v1/projects/vision/members/alice", headers=admin, json={"role": "admin"})
    assert r.status_code == 200 and r.json() == {"username": "alice", "display_name": "", "role": "admin",
                                                 "default": False, "share": {}}
    # alice is now a project admin, effective on her next request
    r = c.put("/api/v1/projects/vision/members/bob", headers=api.auth("alice"), json={"role": "viewer"})
    assert r.status_code == 200, r.text
    r = c.get("/api/v1/projects/vision", headers=api.auth("alice"))
    assert [m["username"] for m in r.json()["members"]] == ["alice", "bob"]
    r = c.get("/api/v1/projects/vision", headers=api.auth("bob"))
    assert r.status_code == 200 and r.json()["members"] is None and r.json()["role"] == "viewer"
    r = c.get("/api/v1/projects", headers=api.auth("bob"))
    assert [(p["name"], p["role"]) for p in r.json()] == [("default", "member"), ("vision", "viewer")]
    assert_error(c.get("/api/v1/projects/vision", headers=api.auth("gus")), 404, "not_found", "name")
    r = c.delete("/api/v1/projects/vision/members/bob", headers=api.auth("alice"))
    assert r.status_code == 204 and r.content == b""
    assert_error(c.get("/api/v1/projects/vision", headers=api.auth("bob")), 404, "not_found")
    # removing the only (default) project of a user: 409, nothing written
    before = counts(api.world.ctx)
    assert_error(c.delete("/api/v1/projects/default/members/bob", headers=admin), 409, "conflict", "username",
                 "no other project")
    assert counts(api.world.ctx) == before


def test_projects_bad_input_writes_nothing(api):
    c, admin = api.client, api.auth("admin")
    c.post("/api/v1/projects", headers=admin, json={"name": "vision"})
    before = counts(api.world.ctx)
    for body, status, field in (
        ({"name": "Vision"}, 422, "name"), ({}, 422, "name"), ({"name": "x" * 64}, 422, "name"),
        ({"name": "ok", "quota": 1}, 422, "quota"), ({"name": "ok", "display_name": "d" * 129}, 422, "display_name"),
        ({"name": "ok", "description": 5}, 422, "description"),
        ({"name": "ok", "expires_at": "2001-01-01T00:00:00Z"}, 422, "expires_at"),
        ({"name": "ok", "expires_at": "2099-01-01"}, 422, "expires_at"),
        ({"name": "vision"}, 409, "name"),
    ):
        assert_error(c.post("/api/v1/projects", headers=admin, json=body), status, None, field)
    assert_error(c.post("/api/v1/projects", headers=admin, json=["vision"]), 422, "invalid")
    for body, field in (({"role": "owner"}, "role"), ({}, "role"), ({"role": "admin", "x": 1}, "x"),
                        ({"role": None}, "role")):
        assert_error(c.put("/api/v1/projects/vision/members/alice", headers=admin, json=body), 422, "invalid", field)
    assert_error(c.put("/api/v1/projects/vision/members/nobody", headers=admin, json={"role": "member"}), 404,
                 "not_found", "username")
    assert_error(c.put("/api/v1/projects/nope/members/alice", headers=admin, json={"role": "member"}), 404,
                 "not_found", "name")
    assert_error(c.delete("/api/v1/projects/vision/members/alice", headers=admin), 404, "not_found", "username")
    assert counts(api.world.ctx) == before


def test_tokens_flow(api):
    c = api.client
    r = c.post("/api/v1/tokens", headers=api.auth("alice"), json={"name": "laptop", "expires_in_days": 7})
    assert r.status_code == 201, r.text
    body = r.json()
    secret, token_id = body["access_token"], body["id"]
    assert secret.startswith("crt_") and body["token_type"] == "bearer" and body["revoked"] is False
    me = c.get("/api/v1/me", headers={"Authorization": f"Bearer {secret}"})
    assert me.status_code == 200 and me.json()["username"] == "alice"
    listed = c.get("/api/v1/tokens", headers=api.auth("alice")).json()
    assert [t["name"] for t in listed] == ["laptop"] and listed[0]["last_used_at"] is not None
    assert set(listed[0]) == {"id", "name", "user", "created_at", "expires_at", "last_used_at", "revoked",
                              "revoked_at"}
    assert secret not in str(listed)
    assert_error(c.delete(f"/api/v1/tokens/{token_id}", headers=api.auth("bob")), 404, "not_found", "id")
    r = c.delete(f"/api/v1/tokens/{token_id}", headers=api.auth("alice"))
    assert r.status_code == 200 and r.json()["revoked"] is True
    assert_error(c.get("/api/v1/me", headers={"Authorization": f"Bearer {secret}"}), 401, "unauthenticated")


def test_tokens_bad_input_writes_nothing(api):
    c = api.client
    before = counts(api.world.ctx)
    for body, field in (({}, "name"), ({"name": ""}, "name"), ({"name": "n" * 65}, "name"),
                        ({"name": "x", "expires_in_days": 0}, "expires_in_days"),
                        ({"name": "x", "expires_in_days": 366}, "expires_in_days"),
                        ({"name": "x", "expires_in_days": "7"}, "expires_in_days"),
                        ({"name": "x", "expires_in_days": True}, "expires_in_days"),
                        ({"name": "x", "scope": "all"}, "scope")):
        err = assert_error(c.post("/api/v1/tokens", headers=api.auth("alice"), json=body), 422, "invalid", field)
        if field == "expires_in_days":
            assert "1 to 365" in err["message"]
    assert_error(c.delete("/api/v1/tokens/abc", headers=api.auth("alice")), 422, "invalid", "id")
    assert_error(c.delete(f"/api/v1/tokens/{2**70}", headers=api.auth("alice")), 404, "not_found")
    assert counts(api.world.ctx) == before


def test_operation_logs(api):
    c, admin = api.client, api.auth("admin")
    c.post("/api/v1/projects", headers=admin, json={"name": "vision"})
    c.put("/api/v1/projects/vision/members/alice", headers=admin, json={"role": "member"})
    r = c.get("/api/v1/operation-logs", headers=admin, params={"action": "project:member:set"})
    assert r.status_code == 200, r.text
    page = r.json()
    assert page["total"] == 1 and page["items"][0]["target"] == "vision/alice"
    assert page["items"][0]["actor"] == "admin" and page["items"][0]["result"] == "ok"
    r = c.get("/api/v1/operation-logs", headers=admin, params={"target": "vision", "page_size": 1})
    assert r.json()["total"] == 2 and [i["action"] for i in r.json()["items"]] == ["project:member:set"]
    r = c.get("/api/v1/operation-logs", headers=admin, params={"format": "csv", "target": "vision"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert r.headers["x-crater-truncated"] == "false"
    rows = list(csv.reader(io.StringIO(r.text)))
    assert rows[0][:3] == ["id", "at", "actor"] and [x[4] for x in rows[1:]] == ["project:member:set", "project:create"]
    for params, field in (({"from": "nope"}, "from"), ({"to": "2026-01-01T00:00:00"}, "to"),
                          ({"page": 0}, "page"), ({"page_size": 501}, "page_size"), ({"format": "xml"}, "format"),
                          ({"from": "2026-02-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, "from"),
                          ({"actor": "a" * 65}, "actor")):
        assert_error(c.get("/api/v1/operation-logs", headers=admin, params=params), 422, "invalid", field)
    assert_error(c.get("/api/v1/operation-logs", headers=api.auth("alice")), 403, "forbidden")
    # there is no route that edits or deletes the log
    for method in ("PUT", "PATCH", "DELETE", "POST"):
        assert c.request(method, "/api/v1/operation-logs", headers=admin).status_code == 405
