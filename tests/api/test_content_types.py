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
     {"line": 1, "column": 27, "reason": "value_expected"}),
    (b'{\n  "name": "x",\n  "command" ["true"]\n}', "application/json", "http.body_json",
     {"line": 3, "column": 13, "reason": "colon_expected"}),
    (b"\xff\xfe\x00", "application/json", "http.body_encoding", {"offset": 0}),
    (b'{"a": NaN}', "application/json", "http.body_constant", {"name": "NaN"}),
    (b'{"name": "n", "name": "m"}', "application/json", "http.body_duplicate_key", {"key": "name", "path": "name"}),
    (b"name: n\nname: m\n", "application/yaml", "http.body_duplicate_key", {"key": "name", "path": "name"}),
    (b'{"p": ' + b"1" * 5000 + b"}", "application/json", "http.body_number_too_long", {"limit": 4300}),
    (b"name: [x\n", "application/yaml", "http.body_yaml", {"line": 2, "column": 1, "reason": "sequence_end"}),
    (b"   \n", "application/json", "http.body_empty", {}),
    (b"[" * 100_000 + b"]" * 100_000, "application/json", "http.body_nested", {}),
]


def test_undecodable_bodies_name_what_is_wrong(api):
    before = counts(api.world.ctx)
    for body, content_type, code, args in UNDECODABLE:
        error = assert_error(_post(api, body, content_type), 422, "invalid", args.get("path"), code=code)
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


def test_an_optional_body_of_a_declared_unsupported_type_is_a_415_even_when_empty(api):
    """An approval is not decided, nor notifications marked read, by a request whose declared type Crater does not
    read: the 415 comes whether or not a body is sent."""
    job = api.submit("alice", name="lock-me", command=["sleep", "30"]).json()
    approval = api.client.post("/api/v1/approvals", headers=api.auth("alice"),
                               json={"kind": "reclaim_lock", "reason": "a long run", "job_id": job["id"]}).json()
    api.client.put("/api/v1/projects/default/members/bob", headers=api.auth("admin"), json={"role": "member"})
    unread = api.client.get("/api/v1/notifications", headers=api.auth("admin")).json()["unread"]
    assert unread >= 1
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin-1"):
        for content in (None, b""):
            r = api.client.post(f"/api/v1/approvals/{approval['id']}/approve", content=content,
                                headers={**api.auth("admin"), "Content-Type": content_type})
            assert_error(r, 415, "unsupported_media_type", "Content-Type")
            r = api.client.post("/api/v1/notifications/read", content=content,
                                headers={**api.auth("admin"), "Content-Type": content_type})
            assert_error(r, 415, "unsupported_media_type", "Content-Type")
    assert api.client.get(f"/api/v1/approvals/{approval['id']}", headers=api.auth("admin")).json()["status"] == "pending"
    assert api.client.get("/api/v1/notifications", headers=api.auth("admin")).json()["unread"] == unread
    # without a type, or with JSON's, an empty body is still "no note" / "all of them"
    r = api.client.post("/api/v1/notifications/read", headers={**api.auth("admin"), "Content-Type": "application/json"})
    assert r.status_code == 200 and r.json()["unread"] == 0
    r = api.client.post(f"/api/v1/approvals/{approval['id']}/approve", headers=api.auth("admin"))
    assert r.status_code == 200 and r.json()["status"] == "approved"


def test_a_charset_other_than_utf_8_or_a_malformed_type_is_a_415(api):
    before = counts(api.world.ctx)
    for content_type, charset in (("application/json; charset=utf-16", "utf-16"),
                                  ("application/yaml; charset=latin1", "latin1"),
                                  ('application/json; charset="iso-8859-1"', "iso-8859-1")):
        error = assert_error(_post(api, JSON_BODY, content_type), 415, "unsupported_media_type", "Content-Type",
                             "utf-8", charset, code="http.unsupported_charset")
        assert error["args"] == {"charset": charset, "charsets": ["utf-8"], "accepted": ACCEPTED}
    for content_type in (";;;", "application/json, text/plain", "application/", "/json", "application/json; x",
                         b"application/json\xc2\xa0", "application/json; charset"):
        error = assert_error(_post(api, JSON_BODY, content_type), 415, "unsupported_media_type", "Content-Type",
                             code="http.unsupported_media_type")
        assert error["args"]["accepted"] == ACCEPTED, content_type
    assert counts(api.world.ctx) == before
    for content_type in ('application/json; charset="UTF-8"', "application/json;;", " application/json ",
                         "application/json ; charset=utf-8 ; q=1"):
        r = _post(api, JSON_BODY, content_type)
        assert r.status_code == 201, (content_type, r.text)


def test_the_415_offers_the_types_as_alternatives(api):
    error = assert_error(_post(api, JSON_BODY, "text/plain"), 415, "unsupported_media_type")
    assert "application/json, application/yaml, application/x-yaml or text/yaml" in error["message"]
    error = assert_error(_post(api, JSON_BODY, "text/plain", **{"Accept-Language": "zh-CN"}), 415,
                         "unsupported_media_type")
    assert "application/json、application/yaml、application/x-yaml 或 text/yaml" in error["message"]


def test_json_errors_give_line_column_and_a_reason_in_the_callers_language(api):
    cases = [
        (b'{"name": "x",}', "name_expected"), (b'{"name" "x"}', "colon_expected"), (b'["a" "b"]', "comma_expected"),
        (b'{"name": "x', "unterminated_string"), (b'{"name": "\\q"}', "escape"), (b'{"name": "\\u12"}', "unicode_escape"),
        (b'{"name": "a\x01"}', "control_character"), (b'{} {}', "extra_data"), (b'{"a": }', "value_expected"),
    ]
    for body, reason in cases:
        en = assert_error(_post(api, body, "application/json"), 422, "invalid", None, code="http.body_json")
        zh = assert_error(_post(api, body, "application/json", **{"Accept-Language": "zh-CN"}), 422, "invalid", None,
                          code="http.body_json")
        assert en["args"]["reason"] == zh["args"]["reason"] == reason, (body, en)
        assert set(en["args"]) == {"line", "column", "reason"}
        assert not any(word in zh["message"] for word in ("Expecting", "Unterminated", "Invalid", "Extra", "delimiter"))
        assert "行" in zh["message"] and "列" in zh["message"], zh
