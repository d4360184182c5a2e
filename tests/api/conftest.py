"""API fixtures: a FastAPI TestClient on ``build_api(lambda: ctx)`` over the test's ``world`` (its database and
backend: see tests/conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from crater_app.api.app import build_api
from tests.conftest import World


@dataclass
class Api:
    client: TestClient
    world: World

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.world.tokens[who]}"}

    def submit(self, who: str = "alice", **spec):
        body = {"name": "job", "command": ["sh", "-c", "echo hi"]}
        body.update(spec)
        return self.client.post("/api/v1/jobs", json=body, headers=self.auth(who))


@pytest.fixture
def api(world):
    app = build_api(lambda: world.ctx)
    with TestClient(app) as client:
        yield Api(client, world)


def assert_error(response, status: int, kind: str | None = None, field: str | None = "<any>", *words: str,
                 code: str | None = None) -> dict:
    """The response is the error envelope with ``status`` (and ``kind``/``field``/message words/``code`` when given)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "kind", "message", "field", "args"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert isinstance(body["error"]["args"], dict), body
    if kind is not None:
        assert body["error"]["kind"] == kind, body
    if code is not None:
        assert body["error"]["code"] == code, body
    if field != "<any>":
        assert body["error"]["field"] == field, body
    for word in words:
        assert word in body["error"]["message"], body
    return body["error"]
