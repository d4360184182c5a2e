"""domain.field_paths: one way to write where an error is, for every layer."""

from __future__ import annotations

import pytest

from crater_app.domain import field_paths as fp


@pytest.mark.parametrize(("parts", "path"), [
    (("tasks", 1, "resources", "nvidia.com/gpu"), "tasks[1].resources.nvidia.com/gpu"),
    (("command", 0), "command[0]"), (("env", "CUDA_HOME"), "env.CUDA_HOME"), (("prices", 2, "model"), "prices[2].model"),
    (("capability", "nvidia.com/gpu:NVIDIA-A100-SXM4-80GB"), "capability.nvidia.com/gpu:NVIDIA-A100-SXM4-80GB"),
    (("env", "A\x00"), 'env["A\\u0000"]'), (("env", "A\n"), 'env["A\\n"]'), (("resources", ""), 'resources[""]'),
    (("env", "\ud800"), 'env["\\ud800"]'), (("env", "a\u200bb"), 'env["a\\u200bb"]'), (("env", " A"), 'env[" A"]'),
    (("m", 'say "hi"'), 'm["say \\"hi\\""]'), (("m", "a[0]"), 'm["a[0]"]'), (("m", "\U000e0001"), 'm["\\udb40\\udc01"]'),
    (("env", "名前"), "env.名前"), (("a b",), "a b"), ((0, "x"), "[0].x"), ((), None),
])
def test_paths_join_keys_with_dots_and_items_in_brackets(parts, path):
    assert fp.join(parts) == path


def test_long_keys_are_cut_and_every_shown_key_is_printable():
    assert fp.key("env", "A" * 100) == "env." + "A" * 64 + "…"
    assert fp.shown("A\x00B\\") == "A\\u0000B\\\\" and fp.shown("x" * 70) == "x" * 64 + "…"
    assert fp.key_text(1) == "1" and fp.key_text(True) == "true" and fp.key_text(None) == "null"
    assert fp.item(None, 3) == "[3]" and fp.key(None, "name") == "name" and fp.key("", "") == '[""]'


@pytest.mark.parametrize(("loc", "data", "path"), [
    (("command", 1), {"command": ["a", 2]}, "command[1]"),
    (("env", 1, "[key]"), {"env": {1: "a"}}, "env.1"),  # a YAML integer key, not a list item
    (("env", "A"), {"env": {"A": 1}}, "env.A"),
    (("tasks", 0, "name"), {}, "tasks[0].name"),
    (("resources", ""), {"resources": {"": 1}}, 'resources[""]'),
])
def test_pydantic_locations_become_paths(loc, data, path):
    assert fp.from_loc(loc, data) == path
