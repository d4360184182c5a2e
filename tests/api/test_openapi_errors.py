"""The OpenAPI document describes the errors the API really sends: every 4xx/5xx of every operation with Crater's
envelope (``ErrorBody``), never FastAPI's ``HTTPValidationError``; the statuses an operation gives where they
happen; and request bodies as they are read (a quota section may be ``null``)."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import assert_error

REF = "#/components/schemas/ErrorBody"


@pytest.fixture
def document(api) -> dict:
    r = api.client.get("/api/v1/openapi.json")
    assert r.status_code == 200
    return r.json()


def _operations(document: dict):
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            yield method.upper(), path, operation


def test_every_error_answer_is_the_envelope(document):
    assert "HTTPValidationError" not in json.dumps(document) and "ValidationError" not in document["components"]["schemas"]
    body = document["components"]["schemas"]["ErrorBody"]
    assert body["properties"]["error"]["$ref"] == "#/components/schemas/ErrorDetail"
    detail = document["components"]["schemas"]["ErrorDetail"]
    assert set(detail["properties"]) == set(detail["required"]) == {"code", "kind", "message", "field", "args"}
    for method, path, operation in _operations(document):
        errors = {s: r for s, r in operation["responses"].items() if s[0] in "45"}
        assert "500" in errors, (method, path)
        for status, answer in errors.items():
            assert answer["content"] == {"application/json": {"schema": {"$ref": REF}}}, (method, path, status)
            assert answer["description"], (method, path, status)


@pytest.mark.parametrize(("method", "path", "statuses"), [
    ("GET", "/api/v1/jobs/{id}", {"401", "404", "422", "500"}),
    ("POST", "/api/v1/jobs", {"401", "402", "403", "404", "409", "413", "415", "422", "500"}),
    ("DELETE", "/api/v1/jobs/{id}", {"401", "403", "404", "409", "422", "500"}),
    ("GET", "/api/v1/jobs/{id}/logs", {"401", "404", "422", "500"}),
    ("GET", "/api/v1/jobs/{id}/replicas", {"401", "404", "422", "500"}),
    ("GET", "/api/v1/jobs/{id}/manifest", {"401", "404", "422", "500"}),
    ("PUT", "/api/v1/projects/{name}/quota", {"401", "403", "404", "413", "415", "422", "500"}),
    ("GET", "/api/v1/operation-logs", {"401", "403", "422", "500"}),
    ("POST", "/api/v1/auth/token", {"401", "413", "415", "422", "429", "500"}),
    ("POST", "/api/v1/approvals/{id}/approve", {"401", "403", "404", "409", "413", "415", "422", "500"}),
    ("GET", "/api/v1/me", {"401", "500"}),
    ("GET", "/healthz", {"500"}),
])
def test_operations_document_the_statuses_they_give(document, method, path, statuses):
    responses = document["paths"][path][method.lower()]["responses"]
    assert {s for s in responses if s[0] in "45"} == statuses
    if path.endswith("/logs"):  # the answer is text, its errors are JSON
        assert "text/plain" in responses["200"]["content"]
    if path.endswith("/manifest"):  # YAML, or JSON when asked for
        assert {"application/yaml", "application/json"} <= set(responses["200"]["content"])
        assert "runs processes" in responses["404"]["description"]
    if path.endswith("/logs"):
        assert "`task`" in responses["404"]["description"] and "`replica`" in responses["404"]["description"]


def test_statuses_the_api_gives_are_documented(api, document):
    """A sample of real refusals: each status is in its operation's responses."""
    c, alice, admin = api.client, api.auth("alice"), api.auth("admin")
    job = api.submit(name="done", command=["true"]).json()
    cases = [
        ("GET", "/api/v1/jobs/{id}", c.get("/api/v1/jobs/abc", headers=alice)),
        ("GET", "/api/v1/jobs/{id}", c.get("/api/v1/jobs/424242", headers=alice)),
        ("GET", "/api/v1/jobs/{id}", c.get("/api/v1/jobs/1")),
        ("POST", "/api/v1/jobs", c.post("/api/v1/jobs", content=b"x", headers={**alice, "Content-Type": "text/plain"})),
        ("POST", "/api/v1/jobs", c.post("/api/v1/jobs", json={"name": "x", "command": ["true"], "project": "nope"},
                                        headers=alice)),
        ("GET", "/api/v1/operation-logs", c.get("/api/v1/operation-logs", headers=alice)),
        ("GET", "/api/v1/users", c.get("/api/v1/users", headers=alice)),
        ("POST", "/api/v1/auth/token", c.post("/api/v1/auth/token", json={"username": "alice", "password": "wrong!!"})),
        ("POST", "/api/v1/projects", c.post("/api/v1/projects", json={"name": "default"}, headers=admin)),
        ("DELETE", "/api/v1/projects/{name}/members/{username}",
         c.delete("/api/v1/projects/default/members/alice", headers=admin)),
    ]
    for method, path, r in cases:
        assert r.status_code >= 400, (path, r.text)
        assert str(r.status_code) in document["paths"][path][method.lower()]["responses"], (method, path, r.status_code)
    assert job["id"]


def test_a_null_quota_section_is_documented_and_accepted(api, document):
    body = document["paths"]["/api/v1/projects/{name}/quota"]["put"]["requestBody"]["content"]["application/json"]
    capability = body["schema"]["properties"]["capability"]
    assert {"type": "null"} in capability["anyOf"] and "null" in capability["description"]
    r = api.client.put("/api/v1/projects/default/quota", json={"capability": None, "deserved": {}, "guarantee": None},
                       headers=api.auth("admin"))
    assert r.status_code == 200 and r.json()["capability"] == {} and r.json()["guarantee"] == {}
    assert_error(api.client.put("/api/v1/projects/default/quota", json={"capability": []}, headers=api.auth("admin")),
                 422, "invalid", "capability")
