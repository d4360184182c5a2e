"""Every path and method under /api/v1 answers JSON: unknown paths 404, other methods 405 with ``Allow``, HEAD as
GET without a body; with the console mounted after the API (as Reflex does) too; the fallback route stays last."""

from __future__ import annotations

import pytest

from tests.api.conftest import assert_error


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
