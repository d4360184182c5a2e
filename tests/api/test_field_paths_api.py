"""Every error names its field in one style, as the README promises (``tasks[1].resources.nvidia.com/gpu``): list
items in brackets, object keys after dots, a key that cannot be shown bare as a JSON string in brackets, and a path
parameter by its name - the same name for a malformed id (422) as for a missing object (404)."""

from __future__ import annotations

import pytest

from tests.api.conftest import assert_error
from tests.helpers import counts

JSON = {"Content-Type": "application/json"}


def _post(api, body: bytes, path: str = "/api/v1/jobs", **headers):
    return api.client.post(path, content=body, headers={**api.auth("alice"), **JSON, **headers})


@pytest.mark.parametrize(("body", "field", "code"), [
    (b'{"name": "x", "command": [" ", "a"]}', "command[0]", "job.command_program_blank"),
    (b'{"name": "x", "command": ["echo", 3]}', "command[1]", "job.field_string"),
    (b'{"name": "x", "command": ["echo", "a\\u0000b"]}', "command[1]", "http.body_text"),
    (b'{"name": "x", "command": ["true"], "env": {"1X": "v"}}', "env.1X", "job.env_name"),
    (b'{"name": "x", "command": ["true"], "env": {"A": 1}}', "env.A", "job.field_string"),
    (b'{"name": "x", "command": ["true"], "env": {"A\\u0000": "v"}}', 'env["A\\u0000"]', "http.body_text"),
    (b'{"name": "x", "command": ["true"], "env": {"A\\n": "v"}}', 'env["A\\n"]', "job.env_name"),
    (b'{"name": "x", "command": ["true"], "env": {"A": "1", "B": "2", "A": "3"}}', "env.A", "http.body_duplicate_key"),
    (b'{"name": "x", "command": ["true"], "resources": {"": 1}}', 'resources[""]', "resources.unknown_name"),
    (b'{"name": "x", "command": ["true"], "resources": {"nvidia.com/gpu": "1.5"}}', "resources.nvidia.com/gpu",
     "resources.devices_fraction"),
])
def test_job_spec_fields_are_named_by_their_full_path(api, body, field, code):
    before = counts(api.world.ctx)
    error = assert_error(_post(api, body), 422, "invalid", field, code=code)
    assert "'A\\x00'" not in error["message"] and "\\x" not in (error["field"] or "")
    assert counts(api.world.ctx) == before


def test_shown_keys_are_escaped_not_python_reprs(api):
    error = assert_error(_post(api, b'{"name": "x", "command": ["true"], "env": {"A\\n": "v"}}'), 422, "invalid",
                         code="job.env_name")
    assert error["args"]["name"] == "A\\n" and "env name 'A\\n'" in error["message"]
    error = assert_error(_post(api, b'{"name": "x", "command": ["true"], "env": {"A\\u0000": "v"}}'), 422, "invalid",
                         code="http.body_text")
    assert error["message"].startswith('env["A\\u0000"]:') and error["args"]["path"] == 'env["A\\u0000"]'


def test_a_yaml_integer_key_is_a_key_not_a_list_item(api):
    r = api.client.post("/api/v1/jobs", content=b"name: x\ncommand: ['true']\nenv: {1: a}\n",
                        headers={**api.auth("alice"), "Content-Type": "application/yaml"})
    assert_error(r, 422, "invalid", "env.1")


def test_a_key_given_twice_deep_inside_is_named_by_its_path(api):
    body = b'{"name": "x", "command": ["true"], "resources": {"cpu": "1", "memory": "1Gi", "cpu": "2"}}'
    error = assert_error(_post(api, body), 422, "invalid", "resources.cpu", code="http.body_duplicate_key")
    assert error["args"] == {"key": "cpu", "path": "resources.cpu"} and "resources.cpu" in error["message"]
    body = b'{"name": "x", "command": ["true"], "env": {"A": "1"}, "env": {"B": "2"}}'
    assert_error(_post(api, body), 422, "invalid", "env", code="http.body_duplicate_key")


def test_quota_keys_and_price_rows_use_the_same_style(api):
    api.client.post("/api/v1/projects", json={"name": "vision"}, headers=api.auth("admin"))
    r = api.client.put("/api/v1/projects/vision/quota", json={"capability": {"": 1}}, headers=api.auth("admin"))
    assert_error(r, 422, "invalid", 'capability[""]')
    r = api.client.put("/api/v1/projects/vision/quota", json={"guarantee": {"cpu": "4"}, "capability": {"cpu": "2"}},
                       headers=api.auth("admin"))
    error = assert_error(r, 422, "invalid", "guarantee.cpu", code="quota.order")
    assert (error["args"]["low"], error["args"]["high"]) == ("guarantee.cpu", "capability.cpu")
    r = api.client.put("/api/v1/projects/vision/quota", json={"capacity": {}}, headers=api.auth("admin"))
    assert_error(r, 422, "invalid", "capacity")
    r = api.client.put("/api/v1/billing/prices", json=[{"resource": "cpu", "points_per_hour": 1},
                                                       {"resource": "cpu", "points_per_hour": 1, "colour": "red"}],
                       headers=api.auth("admin"))
    assert_error(r, 422, "invalid", "prices[1].colour")


ID_ROUTES = [
    ("GET", "/api/v1/jobs/{}"), ("DELETE", "/api/v1/jobs/{}"), ("GET", "/api/v1/jobs/{}/events"),
    ("GET", "/api/v1/jobs/{}/logs"), ("POST", "/api/v1/jobs/{}/resubmit"), ("GET", "/api/v1/approvals/{}"),
    ("POST", "/api/v1/approvals/{}/approve"), ("POST", "/api/v1/approvals/{}/reject"), ("DELETE", "/api/v1/tokens/{}"),
    ("DELETE", "/api/v1/auth/sessions/{}"),
]


@pytest.mark.parametrize(("method", "path"), ID_ROUTES)
def test_a_path_id_is_digits_only_and_named_id_in_every_error(api, method, path):
    auth = api.auth("admin")
    for bad in ("1.0", "%201", "+1", "-1", "0x1", "1e0", "abc"):
        assert_error(api.client.request(method, path.format(bad), headers=auth), 422, "invalid", "id",
                     code="request.integer_digits")
    assert_error(api.client.request(method, path.format("987654"), headers=auth), 404, "not_found", "id")
