"""YAML bodies read as YAML 1.2 (what people who write YAML today expect), not PyYAML's YAML 1.1: ``0600`` is 600,
``yes`` is text, ``on:`` is a key named ``on``; errors say where, with a reason in the caller's language."""

from __future__ import annotations

from tests.api.conftest import assert_error
from tests.helpers import counts


def _post_yaml(api, text: str, path: str = "/api/v1/jobs", who: str = "alice", **headers):
    return api.client.post(path, content=text.encode(), headers={**api.auth(who), "Content-Type": "application/yaml",
                                                                 **headers})


def test_numbers_with_leading_zeros_are_decimal(api):
    r = _post_yaml(api, "name: zeros\ncommand: ['true']\nmax_runtime: 0600\npriority: 010\n")
    assert r.status_code == 201, r.text
    assert (r.json()["max_runtime"], r.json()["priority"]) == (600, 10)
    r = _post_yaml(api, "name: hex\ncommand: ['true']\npriority: 0x10\nmax_runtime: 0o17\n")
    assert (r.json()["priority"], r.json()["max_runtime"]) == (16, 15)


def test_yes_no_on_off_are_words_not_booleans(api):
    before = counts(api.world.ctx)
    error = assert_error(_post_yaml(api, "name: x\ncommand: ['true']\npreemptible: yes\n"), 422, "invalid",
                         "preemptible", "true or false")
    assert error["code"] == "job.field_boolean"
    error = assert_error(_post_yaml(api, "name: x\ncommand: ['true']\non: 1\n"), 422, "invalid", "on",
                         code="job.unknown_field")
    assert error["args"] == {"name": "on"}
    assert counts(api.world.ctx) == before
    r = _post_yaml(api, "name: no\ncommand: [echo, no, off, yes, y, n]\npreemptible: True\n")
    assert r.status_code == 201, r.text
    assert r.json()["name"] == "no" and r.json()["command"] == ["echo", "no", "off", "yes", "y", "n"]
    assert r.json()["preemptible"] is True


def test_yaml_errors_say_where_and_why_in_both_languages(api):
    for lang, words in (("en", "a ':' is not allowed here"), ("zh-CN", "此处不能有 ':'")):
        error = assert_error(_post_yaml(api, "name: a: b\ncommand: ['true']\n", **{"Accept-Language": lang}), 422,
                             "invalid", None, words, code="http.body_yaml")
        assert error["args"] == {"line": 1, "column": 8, "reason": "mapping_value"}
    error = assert_error(_post_yaml(api, "name: x\ncommand:\n\t- 'true'\n"), 422, "invalid", None, code="http.body_yaml")
    assert error["args"]["reason"] == "character" and error["args"]["line"] == 3
    error = assert_error(_post_yaml(api, "name: x\ncommand: !!python/object/apply:os.system [id]\n"), 422, "invalid",
                         None, code="http.body_yaml")
    assert error["args"]["reason"] == "tag" and "python" not in error["message"]
    error = assert_error(_post_yaml(api, 'name: "x\\0"\ncommand: [x]\n'), 422, "invalid", "name",
                         code="http.body_text")


def test_a_key_given_twice_names_its_path(api):
    r = _post_yaml(api, "name: x\ncommand: ['true']\nenv:\n  A: '1'\n  A: '2'\n")
    error = assert_error(r, 422, "invalid", "env.A", "env.A", code="http.body_duplicate_key")
    assert error["args"] == {"key": "A", "path": "env.A"}
    r = _post_yaml(api, "name: x\ncommand: ['true']\nresources: {cpu: 1, cpu: 2}\n", **{"Accept-Language": "zh-CN"})
    error = assert_error(r, 422, "invalid", "resources.cpu", code="http.body_duplicate_key")
    assert "“cpu”出现了两次（位置 resources.cpu）" in error["message"]


def test_a_stream_of_job_specs_is_refused_and_a_trailing_separator_is_fine(api):
    before = counts(api.world.ctx)
    error = assert_error(_post_yaml(api, "name: a\ncommand: ['true']\n---\nname: b\ncommand: ['true']\n"), 422,
                         "invalid", None, "2 YAML documents", code="http.body_documents")
    assert error["args"] == {"count": 2}
    assert counts(api.world.ctx) == before
    r = _post_yaml(api, "---\nname: one\ncommand: ['true']\n---\n")  # kubectl-style separators around one spec
    assert r.status_code == 201 and r.json()["name"] == "one"
