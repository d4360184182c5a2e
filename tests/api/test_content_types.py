"""Request bodies by ``Content-Type``: JSON (also with no type), YAML under its four names, ``+json``/``+yaml``
types; anything else is a 415 naming the accepted types (in the body and the ``Accept`` header) that writes
nothing. Decoding errors come as codes with their numbers (line, column, limits)."""

from __future__ import annotations

from tests.api.conftest import assert_error
from tests.helpers import counts

ACCEPTED = ["application/json", "application/yaml", "application/x-yaml", "text/yaml"]
JSON_BODY = b'{"name": "typed", "command": ["true"]}'
YAML_BODY = b"name: typed\ncommand: ['true']\n"


def _post(api, content: bytes, content_type: str | None, path: str = "/api/v1/jobs", who: str = "alice", **headers):
    extra = {"Content-Type": content_type} if content_type is not None else {}
    return api.client.post(path, content=content, headers={**api.auth(who), **extra, **headers})


UNSUPPORTED = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml",
               "text/html", "application/octet-stream", "image/png", "application/jsonx", "yaml"]


def test_an_unsupported_content_type_is_a_415_naming_the_accepted_types(api):
    before = counts(api.world.ctx)
    for content_type in UNSUPPORTED:
        r = _post(api, JSON_BODY, content_type)
        error = assert_error(r, 415, "unsupported_media_type", "Content-Type", "application/json", "application/yaml",
                             code="http.unsupported_media_type")
        assert error["args"] == {"content_type": content_type.partition(";")[0], "accepted": ACCEPTED}, content_type
        assert [t.strip() for t in r.headers["accept"].split(",")] == ACCEPTED
    assert counts(api.world.ctx) == before


def test_the_415_is_in_the_callers_language_and_applies_to_every_body(api):
    r = _post(api, b'{"name": "vision"}', "text/plain", path="/api/v1/projects", who="admin",
              **{"Accept-Language": "zh-CN"})
    error = assert_error(r, 415, "unsupported_media_type", "Content-Type", code="http.unsupported_media_type")
    assert "无法读取" in error["message"] and "text/plain" in error["message"]
    r = api.client.patch("/api/v1/users/alice", content=b'{"max_sessions": 1}',
                         headers={**api.auth("admin"), "Content-Type": "application/x-www-form-urlencoded"})
    assert_error(r, 415, "unsupported_media_type")
    assert r.headers["accept-patch"] == r.headers["accept"] == ", ".join(ACCEPTED)


READABLE = [
    (None, JSON_BODY), ("", JSON_BODY), ("application/json", JSON_BODY), ("Application/JSON; charset=UTF-8", JSON_BODY),
    ("application/vnd.crater.job+json", JSON_BODY), ("application/yaml", YAML_BODY),
    ("application/x-yaml", YAML_BODY), ("text/yaml; charset=utf-8", YAML_BODY), ("application/vnd.job+yaml", YAML_BODY),
]


def test_json_and_yaml_under_their_names_are_read(api):
    for content_type, body in READABLE:
        r = _post(api, body, content_type)
        assert r.status_code == 201, (content_type, r.text)
        assert r.json()["name"] == "typed" and r.json()["command"] == ["true"]


def test_a_merge_patch_body_updates_a_user(api):
    r = api.client.patch("/api/v1/users/alice", content=b'{"max_sessions": 2}',
                         headers={**api.auth("admin"), "Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200 and r.json()["max_sessions"] == 2


UNDECODABLE = [
    (b'{"name": "x", "command": [}', "application/json", "http.body_json",
     {"line": 1, "column": 27, "detail": "Expecting value"}),
    (b'{\n  "name": "x",\n  "command" ["true"]\n}', "application/json", "http.body_json",
     {"line": 3, "column": 13, "detail": "Expecting ':' delimiter"}),
    (b"\xff\xfe\x00", "application/json", "http.body_encoding", {"offset": 0}),
    (b'{"a": NaN}', "application/json", "http.body_constant", {"name": "NaN"}),
    (b'{"name": "n", "name": "m"}', "application/json", "http.body_duplicate_key", {"key": "name"}),
    (b"name: n\nname: m\n", "application/yaml", "http.body_duplicate_key", {"key": "name"}),
    (b'{"p": ' + b"1" * 5000 + b"}", "application/json", "http.body_number_too_long", {"limit": 4300}),
    (b"name: [x\n", "application/yaml", "http.body_yaml", {"line": 2, "column": 1}),
    (b"   \n", "application/json", "http.body_empty", {}),
    (b"[" * 100_000 + b"]" * 100_000, "application/json", "http.body_nested", {}),
]


def test_undecodable_bodies_name_what_is_wrong(api):
    before = counts(api.world.ctx)
    for body, content_type, code, args in UNDECODABLE:
        error = assert_error(_post(api, body, content_type), 422, "invalid", None, code=code)
        for name, value in args.items():
            assert error["args"][name] == value, error
    assert counts(api.world.ctx) == before


def test_decoding_errors_read_in_chinese(api):
    r = _post(api, b'{"name": "x", "command": [}', "application/json", **{"Accept-Language": "zh-CN"})
    error = assert_error(r, 422, "invalid", None, code="http.body_json")
    assert error["message"].startswith("请求体不是有效的 JSON（第 1 行第 27 列）")
    r = _post(api, b'{"name": "n", "colour": "red"}', "application/json", path="/api/v1/tokens",
              **{"Accept-Language": "zh-CN"})
    error = assert_error(r, 422, "invalid", "colour", code="http.body_unknown_field")
    assert error["args"] == {"name": "colour", "allowed": ["expires_in_days", "name"]}
    assert error["message"] == "未知字段 'colour'；允许的字段：expires_in_days 和 name。"


def test_an_object_is_required_where_fields_are_read(api):
    error = assert_error(_post(api, b"[1, 2]", "application/json", path="/api/v1/tokens"), 422, "invalid", None,
                         "expires_in_days and name", code="http.body_object")
    assert error["args"] == {"fields": ["expires_in_days", "name"]}
