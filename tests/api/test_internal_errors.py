"""An exception that no handler maps is answered with the error envelope (500, code ``internal``) in the caller's
language, never with a text/plain "Internal Server Error", and logged once with the request id that the answer
names."""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from crater_app.api.app import build_api
from tests.api.conftest import assert_error


class BrokenInventory:
    """The cluster boundary failing in a way no service expects (the backend's own bug)."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def inventory(self):
        raise RuntimeError("the inventory cache is corrupt")


@pytest.fixture
def broken(world):
    world.ctx.backend = BrokenInventory(world.ctx.backend)
    with TestClient(build_api(lambda: world.ctx), raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize(("lang", "words"), [("en", "error on the server"), ("zh-CN", "服务器出错")])
def test_an_unhandled_exception_is_the_envelope_in_the_callers_language(world, broken, caplog, lang, words):
    with caplog.at_level(logging.ERROR, logger="crater_app.api"):
        r = broken.get("/api/v1/nodes", headers={"Authorization": f"Bearer {world.tokens['alice']}",
                                                 "Accept-Language": lang})
    error = assert_error(r, 500, "internal", None, words, code="http.internal")
    request_id = error["args"]["request_id"]
    assert len(request_id) == 32 and request_id in error["message"]
    assert r.headers["x-request-id"] == request_id
    assert r.headers["content-language"] == lang and "Internal Server Error" not in r.text
    logged = [rec for rec in caplog.records if request_id in rec.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info and "inventory cache is corrupt" in str(logged[0].exc_info[1])
    assert "GET /api/v1/nodes" in logged[0].getMessage()


def test_each_failure_has_its_own_request_id(world, broken):
    auth = {"Authorization": f"Bearer {world.tokens['admin']}"}
    ids = {broken.get("/api/v1/nodes", headers=auth).json()["error"]["args"]["request_id"] for _ in range(3)}
    assert len(ids) == 3
    # the health check fails the same way (outside /api/v1), and the API keeps answering other requests
    assert_error(broken.get("/healthz"), 500, "internal", code="http.internal")
    assert broken.get("/api/v1/me", headers=auth).status_code == 200
