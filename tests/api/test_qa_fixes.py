"""Defects from the QA pass over issue 3, over HTTP: JSON errors for every path/method under /api/v1, HEAD,
pending sign-ups outside member lists, operation-log details without Python reprs, -0.0 allowances, ``q`` with
control characters."""

from __future__ import annotations

import math

import pytest
from sqlmodel import select

from crater_app.db.models import OperationLog, Project
from crater_app.services import projects
from tests.api.conftest import assert_error
from tests.conftest import USER_PASSWORD

# ---- 5: JSON errors for every path and method under /api/v1 ------------------------------------------------


@pytest.mark.parametrize("method,path", [
    ("OPTIONS", "/api/v1/jobs"), ("TRACE", "/api/v1/jobs"), ("DELETE", "/api/v1/jobs"), ("PUT", "/api/v1/jobs"),
    ("PROPFIND", "/api/v1/jobs"), ("OPTIONS", "/api/v1/me"),
])
def test_unknown_method_on_a_known_path_is_json_405_with_allow(api, method, path):
    r = api.client.request(method, path, headers=api.auth("alice"))
    assert_error(r, 405, "method_not_allowed", None, method)
    allow = {m.strip() for m in r.headers["allow"].split(",")}
    assert {"GET", "HEAD"} <= allow and "OPTIONS" not in allow and method not in allow
    if path == "/api/v1/jobs":
        assert "POST" in allow


@pytest.mark.parametrize("method,path", [
    ("GET", "/api/v1"), ("DELETE", "/api/v1"), ("POST", "/api/v1"), ("OPTIONS", "/api/v1"), ("HEAD", "/api/v1"),
    ("GET", "/api/v1/"), ("GET", "/api/v1/nope"), ("TRACE", "/api/v1/nope/deeper"), ("PROPFIND", "/api/v1/x"),
])
def test_unknown_api_paths_are_json_404(api, method, path):
    r = api.client.request(method, path, headers=api.auth("alice"))
    if method == "HEAD":  # no body, but the status and the JSON content type
        assert r.status_code == 404 and r.content == b""
        assert r.headers["content-type"].startswith("application/json")
        return
    assert_error(r, 404, "not_found", "path", "no route")


def test_head_answers_like_get_without_body(api):
    get = api.client.get("/api/v1/jobs", headers=api.auth("alice"))
    head = api.client.head("/api/v1/jobs", headers=api.auth("alice"))
    assert get.status_code == head.status_code == 200
    assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]
    assert head.headers["content-length"] == get.headers["content-length"]
    # authentication and path parameters apply exactly as for GET
    assert api.client.head("/api/v1/jobs").status_code == 401
    assert api.client.head("/api/v1/jobs/999999", headers=api.auth("alice")).status_code == 404
    assert api.client.head("/api/v1/openapi.json").status_code == 200
    # HEAD on a path that has no GET: 405 naming what it has
    r = api.client.head("/api/v1/auth/token")
    assert r.status_code == 405 and r.headers["allow"] == "POST"


def test_with_the_console_mounted_api_paths_stay_json(world):
    """As in the running app: Reflex mounts the console at "" after the API's routes (``api_transformer``)."""
    from fastapi.testclient import TestClient
    from starlette.responses import HTMLResponse

    from crater_app.api.app import build_api

    async def console(scope, receive, send):
        await HTMLResponse("<html>console</html>", status_code=404 if scope["path"] != "/" else 200)(
            scope, receive, send)

    app = build_api(lambda: world.ctx)
    app.mount("", console)
    auth = {"Authorization": f"Bearer {world.tokens['alice']}"}
    with TestClient(app) as client:
        for method, path, status in (("GET", "/api/v1", 404), ("DELETE", "/api/v1", 404),
                                     ("OPTIONS", "/api/v1/jobs", 405), ("TRACE", "/api/v1/jobs", 405),
                                     ("GET", "/api/v1/nope", 404)):
            assert_error(client.request(method, path, headers=auth), status)
        head = client.head("/api/v1/jobs", headers=auth)
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-type"].startswith("application/json")
        # outside /api/v1 the console answers, /api/v1x included
        for path in ("/", "/jobs", "/api/v1x"):
            assert client.get(path).headers["content-type"].startswith("text/html"), path


def test_fallback_route_is_last_and_outside_the_matrix(api):
    from crater_app.api.fallback import ApiFallback
    routes = api.client.app.router.routes
    fallbacks = [i for i, r in enumerate(routes) if isinstance(r, ApiFallback)]
    assert len(fallbacks) == 1
    assert all(getattr(r, "path", "") in ("", "/metrics", "/healthz") or not getattr(r, "path", "/api/v1").startswith(
        "/api/v1") for r in routes[fallbacks[0] + 1:])


# ---- 6: a pending sign-up is no member until activated -----------------------------------------------------


def _default_members(api) -> list[str]:
    r = api.client.get("/api/v1/projects/default", headers=api.auth("admin"))
    assert r.status_code == 200, r.text
    return [m["username"] for m in r.json()["members"]]


def test_pending_signup_joins_default_project_only_when_activated(api):
    api.world.ctx.settings = api.world.ctx.settings.model_copy(update={"signup_enabled": True})
    before = _default_members(api)
    for name in ("newbie", "spammer"):
        r = api.client.post("/api/v1/auth/signup", json={"username": name, "password": USER_PASSWORD})
        assert r.status_code == 201, r.text
        assert r.json()["default_project"] == "default"
    assert _default_members(api) == before  # pending accounts do not inflate the member list
    r = api.client.patch("/api/v1/users/newbie", json={"status": "active"}, headers=api.auth("admin"))
    assert r.status_code == 200, r.text
    r = api.client.patch("/api/v1/users/spammer", json={"status": "disabled"}, headers=api.auth("admin"))
    assert r.status_code == 200, r.text
    members = _default_members(api)
    assert "newbie" in members and "spammer" not in members and len(members) == len(before) + 1
    # the activated account can work in its default project
    token = api.client.post("/api/v1/auth/token", json={"username": "newbie", "password": USER_PASSWORD})
    assert token.status_code == 200
    headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
    r = api.client.post("/api/v1/jobs", json={"name": "first", "command": ["true"]}, headers=headers)
    assert r.status_code == 201, r.text
    # toggling the status again does not add a second membership or fail
    api.client.patch("/api/v1/users/newbie", json={"status": "disabled"}, headers=api.auth("admin"))
    r = api.client.patch("/api/v1/users/newbie", json={"status": "active"}, headers=api.auth("admin"))
    assert r.status_code == 200 and _default_members(api).count("newbie") == 1
    with api.world.ctx.session(read_only=True) as s:
        details = [row.details for row in s.exec(select(OperationLog).where(
            OperationLog.target == "newbie", OperationLog.action == "user:update"))]
    assert any("joined its default project" in d for d in details)


def test_admin_created_account_is_a_member_at_once(api):
    r = api.client.post("/api/v1/users", json={"username": "carol", "password": USER_PASSWORD},
                        headers=api.auth("admin"))
    assert r.status_code == 201, r.text
    assert "carol" in _default_members(api)


# ---- 4: operation-log details say "none", never Python reprs ------------------------------------------------


def _details(api, action: str, target: str) -> list[str]:
    with api.world.ctx.session(read_only=True) as s:
        return [row.details for row in s.exec(select(OperationLog).where(
            OperationLog.action == action, OperationLog.target == target).order_by(OperationLog.id))]


def test_operation_log_details_have_no_python_reprs(api):
    admin = api.auth("admin")
    api.client.patch("/api/v1/users/alice", json={"max_sessions": 1, "max_runtime": "1h"}, headers=admin)
    api.client.patch("/api/v1/users/alice", json={"max_sessions": None, "max_runtime": None}, headers=admin)
    last = _details(api, "user:update", "alice")[-1]
    assert "max_sessions: 1 -> none" in last and "max_runtime_s: 3600 -> none" in last, last
    first = _details(api, "user:update", "alice")[0]
    assert "max_sessions: none -> 1" in first, first
    projects.create_project(api.world.ctx, api.world.admin, "vision")
    r = api.client.put("/api/v1/projects/vision/members/alice", headers=admin,
                       json={"role": "member", "share": {"nvidia.com/gpu": "2", "cpu": "4"}})
    assert r.status_code == 200, r.text
    api.client.put("/api/v1/projects/vision/members/alice", headers=admin, json={"role": "member", "share": {}})
    rows = _details(api, "project:member:set", "vision/alice")
    joined = " | ".join(rows)
    for repr_text in ("None", "{'", "{}", "'"):
        assert repr_text not in joined, joined
    assert rows[0].startswith("role=none->member"), rows
    assert "share=none->cpu=4 cores,nvidia.com/gpu=2" in rows[0] or "share=none->cpu=4,nvidia.com/gpu=2" in rows[0], rows
    assert rows[-1].endswith("->none"), rows


# ---- 7: -0.0 allowance; q with control characters ------------------------------------------------------------


def test_negative_zero_allowance_is_stored_as_zero(api):
    projects.create_project(api.world.ctx, api.world.admin, "vision")
    r = api.client.put("/api/v1/projects/vision/billing", content=b'{"member_allowance_points": -0.0}',
                       headers={**api.auth("admin"), "Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    assert math.copysign(1.0, r.json()["member_allowance_points"]) == 1.0
    assert "-0" not in r.text
    with api.world.ctx.session(read_only=True) as s:
        stored = s.exec(select(Project.member_allowance_points).where(Project.name == "vision")).one()
    assert stored == 0.0 and math.copysign(1.0, stored) == 1.0


@pytest.mark.both_databases
@pytest.mark.parametrize("q", ["\x00", "a\x00b", "\x07", "x\ty", "\x7f"])
def test_q_with_control_characters_says_so(api, q):
    r = api.client.get("/api/v1/jobs", params={"q": q}, headers=api.auth("alice"))
    err = assert_error(r, 422, "invalid", "q", "control characters")
    assert "63" not in err["message"]


def test_q_too_long_still_names_the_limit(api):
    r = api.client.get("/api/v1/jobs", params={"q": "a" * 64}, headers=api.auth("alice"))
    assert_error(r, 422, "invalid", "q", "63 characters")
    assert api.client.get("/api/v1/jobs", params={"q": "ä" * 63}, headers=api.auth("alice")).status_code == 200
