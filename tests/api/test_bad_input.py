"""Every bad input gets a 4xx error envelope naming the field and the limit, and writes nothing."""

from __future__ import annotations

import json
import time

import pytest

from tests.api.conftest import assert_error
from tests.helpers import counts, within

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
     ["largest node has 4 × nvidia.com/gpu", "one replica cannot get 5"]),
    ("too-much-memory", {"resources": {"memory": "64Pi"}}, 422, "unschedulable", "resources.memory", ["largest node has", "of memory"]),
    ("missing-model", {"resources": {"nvidia.com/gpu": 1}, "accelerator_model": "NVIDIA-H100-80GB-HBM3"}, 422,
     "unschedulable", "accelerator_model", ["NVIDIA-H100-80GB-HBM3", "4 × NVIDIA-A100-SXM4-80GB"]),
    ("empty-command", {"command": []}, 422, "invalid", "command", ["at least one"]),
    ("missing-command", {"command": None}, 422, "invalid", "command", []),
    ("1mb-argument", {"command": ["echo", "start", BIG_ARG]}, 422, "invalid", "command[2]", ["1048576", "8192"]),
    ("1mb-in-many-args", {"command": ["echo"] + ["y" * 4096] * 250}, 422, "invalid", "command", ["65536 bytes"]),
    ("too-many-args", {"command": ["echo"] * 300}, 422, "invalid", "command", ["300 arguments", "256"]),
    ("nul-in-arg", {"command": ["echo", "a\x00b"]}, 422, "invalid", "command[1]", ["NUL"]),
    ("command-string", {"command": "echo hi"}, 422, "invalid", "command", []),
    ("command-number", {"command": ["echo", 3]}, 422, "invalid", "command[1]", []),
    ("unknown-field", {"gpus": 2}, 422, "invalid", "gpus", ["unknown field"]),
    ("volcano-field", {"restartPolicy": "OnFailure"}, 422, "invalid", "restartPolicy",
     ["unknown field 'restartPolicy'", "did you mean 'restart_policy'"]),
    ("misspelt-field", {"resouces": {}, "workingDir": "x"}, 422, "invalid", "resouces",
     ["did you mean 'resources'", "1 more unknown field: workingDir"]),
    ("volcano-restart", {"restart_policy": "RestartJob"}, 422, "invalid", "restart_policy",
     ["restart, fail, ignore", "did you mean 'restart'"]),
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
    # '$' in a pattern also matches before a final newline; '\d' and Decimal also read other scripts' digits.
    ("name-trailing-newline", {"name": "job\n"}, 422, "invalid", "name", ["DNS-1123"]),
    ("image-trailing-newline", {"image": "ubuntu\n"}, 422, "invalid", "image", []),
    ("env-name-trailing-newline", {"env": {"A\n": "1"}}, 422, "invalid", 'env["A\\n"]', []),
    ("model-trailing-newline", {"resources": {"nvidia.com/gpu": 1}, "accelerator_model": "NVIDIA-A100-SXM4-80GB\n"},
     422, "invalid", "accelerator_model", []),
    ("max-runtime-other-digits", {"max_runtime": "\u0663h"}, 422, "invalid", "max_runtime", []),
    ("max-runtime-5000-digits", {"max_runtime": "1" * 5000}, 422, "invalid", "max_runtime", ["limit is 32"]),
    ("quantity-underscore", {"resources": {"cpu": "1_000"}}, 422, "invalid", "resources.cpu", ["not a Kubernetes quantity"]),
    ("quantity-other-digits", {"resources": {"memory": "\u0661"}}, 422, "invalid", "resources.memory", ["quantity"]),
    # Was a 500: the 'never fits' message formatted 1e400 bytes as a float.
    ("huge-memory", {"resources": {"memory": "1e400"}}, 422, "invalid", "resources.memory", ["too large"]),
    ("huge-cpu-exponent", {"resources": {"cpu": "1e99999"}}, 422, "invalid", "resources.cpu", ["too large"]),
    ("huge-gpu-number", {"resources": {"nvidia.com/gpu": 10**30}}, 422, "invalid", "resources.nvidia.com/gpu", ["too large"]),
    # A folder name over 255 bytes cannot be created: it failed every placement round (no job started any more).
    ("working-dir-long-name", {"working_dir": "\u76ee" * 100}, 422, "invalid", "working_dir", ["255 bytes"]),
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
    error = assert_error(_raw_post(api, big), 413, "too_large", None, "2 MiB", code="http.body_too_large")
    assert error["args"] == {"limit": 2097152}

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
    assert_error(_raw_post(api, b"\xff\xfe\x00"), 422, "invalid", None, "not UTF-8")
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


@pytest.mark.both_databases
def test_text_no_layer_can_store_is_refused_and_the_job_list_keeps_working(api):
    """A JSON escape of a lone surrogate (\\ud800) decodes to a str that cannot be encoded: it was stored, then
    every job list of its owner and the admin answered 500 and the placement loop failed every round (starting
    the jobs placed before it again each time). NUL is refused by PostgreSQL text columns (a 500 there)."""
    before = counts(api.world.ctx)
    bodies = [
        (b'{"name": "s", "command": ["echo", "\\ud800"]}', "command[1]"),
        (b'{"name": "s", "command": ["echo"], "env": {"A": "x\\udfff"}}', "env.A"),
        (b'{"name": "s", "command": ["echo"], "env": {"\\ud800": "x"}}', None),
        (b'{"name": "s", "command": ["echo"], "working_dir": "a\\ud800"}', "working_dir"),
        (b'name: s\ncommand: ["echo", "\\ud800"]\n', "command[1]"),
    ]
    for body, field in bodies:
        ctype = "application/yaml" if body.startswith(b"name:") else "application/json"
        error = assert_error(_raw_post(api, body, ctype), 422, "invalid")
        assert field is None or error["field"] == field, error
        assert "Unicode" in error["message"]
    assert counts(api.world.ctx) == before
    assert api.client.get("/api/v1/jobs", headers=api.auth("alice")).status_code == 200
    admin = {**api.auth("admin"), "Content-Type": "application/json"}
    for body, field in [
        (b'{"username": "zed", "password": "user-pass-1", "display_name": "\\udc00"}', "display_name"),
        (b'{"username": "zed", "password": "user-pass-1", "display_name": "a\\u0000b"}', "display_name"),
        (b'{"username": "zed", "password": "user-pass-1", "email": "a\\u0000@b"}', "email"),
        (b'{"username": "zed", "password": "\\ud800user-pass-1"}', "password"),
    ]:
        assert_error(api.client.post("/api/v1/users", content=body, headers=admin), 422, "invalid", field)
    for body, field in [
        (b'{"username": "alice\\u0000", "password": "user-password-1"}', "username"),
        (b'{"username": "alice", "password": "\\ud800"}', "password"),
    ]:
        assert_error(api.client.post("/api/v1/auth/token", content=body, headers={"Content-Type": "application/json"}),
                     422, "invalid", field)
    assert_error(api.client.get("/api/v1/jobs?q=%00", headers=api.auth("alice")), 422, "invalid", "q")
    assert api.client.get("/api/v1/users", headers=api.auth("admin")).status_code == 200


def test_numbers_json_does_not_have_duplicate_keys_and_unordered_commands_are_refused(api):
    before = counts(api.world.ctx)
    ok = b'"name": "n", "command": ["true"]'
    for body, ctype, words in [
        (b"{" + ok + b', "priority": NaN}', "application/json", "NaN"),
        (b"{" + ok + b', "resources": {"cpu": Infinity}}', "application/json", "Infinity"),
        (b"{" + ok + b', "priority": ' + b"1" * 5000 + b"}", "application/json", "4300"),  # was a 500
        (b'name: n\ncommand: ["true"]\npriority: ' + b"1" * 5000 + b"\n", "application/yaml", "4300"),  # was a 500
        (b"{" + ok + b', "name": "other"}', "application/json", "twice"),
        (b'name: n\ncommand: ["true"]\nname: other\n', "application/yaml", "twice"),
        (b"name: n\ncommand: !!set {sh: null, -c: null}\n", "application/yaml", "list"),
    ]:
        assert_error(_raw_post(api, body, ctype), 422, "invalid", "<any>", words)
    assert counts(api.world.ctx) == before


def test_a_yaml_alias_bomb_is_refused_quickly(api):
    levels = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for prev, name in zip("abcdefgh", "bcdefghi"):
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    for tail in ("name: bomb\ncommand: *i", "name: bomb\ncommand: [x]\nenv: {A: *i}", "x: *i"):
        body = ("\n".join(levels) + "\n" + tail + "\n").encode()
        started = time.monotonic()
        assert_error(_raw_post(api, body, "application/yaml"), 422, "invalid")
        assert time.monotonic() - started < within(2)
