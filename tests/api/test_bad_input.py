"""Every bad input gets a 4xx error envelope naming the field and the limit, and writes nothing."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import assert_error
from tests.helpers import counts

BIG_ARG = "x" * (1024 * 1024)

CASES = [
    # (id, spec overrides, status, code, field, words in the message)
    ("upper-name", {"name": "Train"}, 422, "invalid", "name", ["DNS-1123"]),
    ("underscore-name", {"name": "my_job"}, 422, "invalid", "name", ["DNS-1123"]),
    ("64-char-name", {"name": "a" * 64}, 422, "invalid", "name", ["64 characters", "63"]),
    ("script-name", {"name": "<script>alert(1)</script>"}, 422, "invalid", "name", []),
    ("empty-name", {"name": ""}, 422, "invalid", "name", []),
    ("bad-project", {"project": "Team_A"}, 422, "invalid", "project", []),
    ("unknown-project", {"project": "no-such-team"}, 404, "not_found", "project", ["no-such-team"]),
    ("unparseable-cpu", {"resources": {"cpu": "lots"}}, 422, "invalid", "resources.cpu", ["lots"]),
    ("unparseable-memory", {"resources": {"memory": "4GB"}}, 422, "invalid", "resources.memory", ["4GB"]),
    ("negative-memory", {"resources": {"memory": "-1Gi"}}, 422, "invalid", "resources.memory", ["negative"]),
    ("negative-gpu", {"resources": {"nvidia.com/gpu": -2}}, 422, "invalid", "resources.nvidia.com/gpu", ["negative"]),
    ("fractional-gpu", {"resources": {"nvidia.com/gpu": "0.5"}}, 422, "invalid", "resources.nvidia.com/gpu", ["fractional"]),
    ("fractional-gpu-number", {"resources": {"nvidia.com/gpu": 1.5}}, 422, "invalid", "resources.nvidia.com/gpu", ["fractional"]),
    ("boolean-gpu", {"resources": {"nvidia.com/gpu": True}}, 422, "invalid", "resources.nvidia.com/gpu", []),
    ("infinite-cpu", {"resources": {"cpu": "inf"}}, 422, "invalid", "resources.cpu", ["finite"]),
    ("unknown-resource", {"resources": {"gpu": 1}}, 422, "invalid", "resources.gpu", ["unknown resource"]),
    ("too-many-gpus", {"resources": {"nvidia.com/gpu": 5}}, 422, "unschedulable", "resources.nvidia.com/gpu",
     ["requested 5 × nvidia.com/gpu", "this machine has 4"]),
    ("too-much-memory", {"resources": {"memory": "64Pi"}}, 422, "unschedulable", "resources.memory", ["this machine has"]),
    ("missing-model", {"resources": {"nvidia.com/gpu": 1}, "accelerator_model": "NVIDIA-H100-80GB-HBM3"}, 422,
     "unschedulable", "accelerator_model", ["NVIDIA-H100-80GB-HBM3", "4 × NVIDIA-A100-SXM4-80GB"]),
    ("empty-command", {"command": []}, 422, "invalid", "command", ["at least one"]),
    ("missing-command", {"command": None}, 422, "invalid", "command", []),
    ("1mb-argument", {"command": ["echo", "start", BIG_ARG]}, 422, "invalid", "command.2", ["1048576", "8192"]),
    ("1mb-in-many-args", {"command": ["echo"] + ["y" * 4096] * 250}, 422, "invalid", "command", ["65536 bytes"]),
    ("too-many-args", {"command": ["echo"] * 300}, 422, "invalid", "command", ["300 arguments", "256"]),
    ("nul-in-arg", {"command": ["echo", "a\x00b"]}, 422, "invalid", "command.1", ["NUL"]),
    ("command-string", {"command": "echo hi"}, 422, "invalid", "command", []),
    ("command-number", {"command": ["echo", 3]}, 422, "invalid", "command.1", []),
    ("unknown-field", {"gpus": 2}, 422, "invalid", "gpus", ["unknown field"]),
    ("priority-string", {"priority": "high"}, 422, "invalid", "priority", []),
    ("priority-range", {"priority": 5000}, 422, "invalid", "priority", ["1000"]),
    ("env-list", {"env": ["A=1"]}, 422, "invalid", "env", []),
    ("env-number", {"env": {"A": 1}}, 422, "invalid", "env.A", []),
    ("env-reserved", {"env": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}}, 422, "invalid", "env.CUDA_VISIBLE_DEVICES", ["set by Crater"]),
    ("env-bad-name", {"env": {"1X": "v"}}, 422, "invalid", "env.1X", []),
    ("working-dir-absolute", {"working_dir": "/etc"}, 422, "invalid", "working_dir", []),
    ("working-dir-escape", {"working_dir": "../../x"}, 422, "invalid", "working_dir", []),
    ("max-runtime-31-days", {"max_runtime": "31d"}, 422, "invalid", "max_runtime", ["2592000"]),
    ("max-runtime-zero", {"max_runtime": 0}, 422, "invalid", "max_runtime", ["at least 1 second"]),
    ("max-runtime-junk", {"max_runtime": "soon"}, 422, "invalid", "max_runtime", []),
    ("bad-image", {"image": "Not An Image"}, 422, "invalid", "image", []),
]


@pytest.mark.parametrize(("overrides", "status", "code", "field", "words"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_job_specs_are_rejected_and_write_nothing(api, overrides, status, code, field, words):
    before = counts(api.world.ctx)
    body = {"name": "job", "command": ["sh", "-c", "echo hi"]}
    body.update(overrides)
    if body["command"] is None:
        del body["command"]
    r = api.client.post("/api/v1/jobs", json=body, headers=api.auth("alice"))
    assert_error(r, status, code, field, *words)
    assert counts(api.world.ctx) == before


def test_html_in_a_command_is_accepted_and_returned_verbatim_as_json_data(api):
    payload = ["sh", "-c", "echo '<script>alert(\"x\")</script>'", "<img src=x onerror=alert(1)>", "&lt;b&gt;"]
    r = api.submit(name="html-cmd", command=payload)
    assert r.status_code == 201 and r.headers["content-type"] == "application/json"
    assert r.json()["command"] == payload
    again = api.client.get(f"/api/v1/jobs/{r.json()['id']}", headers=api.auth("alice"))
    assert again.json()["command"] == payload
    listed = api.client.get("/api/v1/jobs", headers=api.auth("alice")).json()["items"][0]
    assert listed["command"] == payload


def _raw_post(api, data: bytes, content_type: str = "application/json", **headers):
    return api.client.post("/api/v1/jobs", content=data, headers={**api.auth("alice"), "Content-Type": content_type, **headers})


def test_bodies_over_2_mib_get_413(api):
    before = counts(api.world.ctx)
    big = json.dumps({"name": "big", "command": ["echo", "z" * (2 * 1024 * 1024)]}).encode()
    assert_error(_raw_post(api, big), 413, "too_large", None, "2097152")

    def chunks():  # no Content-Length: the limit holds for a streamed body too
        for _ in range(5):
            yield b" " * (1024 * 1024)

    assert_error(api.client.post("/api/v1/jobs", content=chunks(), headers={**api.auth("alice"),
                                                                             "Content-Type": "application/json"}),
                 413, "too_large")
    assert counts(api.world.ctx) == before


def test_undecodable_bodies_get_422(api):
    before = counts(api.world.ctx)
    assert_error(_raw_post(api, b'{"name": "x", "command": [}'), 422, "invalid", None, "not valid JSON")
    assert_error(_raw_post(api, b"\xff\xfe\x00"), 422, "invalid", None, "not valid JSON")
    assert_error(_raw_post(api, b""), 422, "invalid", None, "empty")
    assert_error(_raw_post(api, b"[1, 2]"), 422, "invalid", None, "object")
    assert_error(_raw_post(api, b'"just a string"'), 422, "invalid", None, "object")
    assert_error(_raw_post(api, b"- a\n- b\n", "application/yaml"), 422, "invalid", None, "object")
    assert_error(_raw_post(api, b"name: x\ncommand: !!python/object/apply:os.system ['true']\n", "application/yaml"),
                 422, "invalid")
    deep = b"[" * 500_000 + b"]" * 500_000
    assert_error(_raw_post(api, deep), 422, "invalid", None, "nested too deeply")
    assert_error(_raw_post(api, b"[" * 50_000 + b"]" * 50_000, "application/yaml"), 422, "invalid", None, "too deeply")
    assert counts(api.world.ctx) == before
