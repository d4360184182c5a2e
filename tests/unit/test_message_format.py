"""Values inside translated sentences (crater_app.i18n.format) and errors rendered from codes (domain.errors)."""

from __future__ import annotations

import pytest

from crater_app import i18n
from crater_app.domain.errors import InvalidInput, NotFound
from crater_app.i18n import format as fmt

GPU = "nvidia.com/gpu"


@pytest.mark.parametrize(("lang", "seconds", "text"), [
    ("en", 0, "0s"), ("zh-CN", 0, "0秒"),
    ("en", 45, "45s"), ("zh-CN", 45, "45秒"),
    ("en", 90, "1m 30s"), ("zh-CN", 90, "1分钟30秒"),
    ("en", 3600, "1h"), ("zh-CN", 3600, "1小时"),
    ("en", 5400, "1h 30m"), ("zh-CN", 5400, "1小时30分钟"),
    ("en", 26 * 3600 + 5, "1d 2h"), ("zh-CN", 26 * 3600 + 5, "1天2小时"),
    ("en", -90, "-1m 30s"),
    ("en", "soon", "soon"),  # not a number: shown as given
])
def test_durations(lang, seconds, text):
    assert fmt.duration(lang, seconds) == text


@pytest.mark.parametrize(("amount", "text"), [
    (0, "0 B"), (512, "512 B"), (1536, "1.5 KiB"), (128 * 2**20, "128 MiB"), (2**31, "2 GiB"), (3 * 2**40, "3 TiB"),
])
def test_sizes_in_binary_units(amount, text):
    assert fmt.size("en", amount) == text == fmt.size("zh-CN", amount)


@pytest.mark.parametrize(("lang", "amounts", "text"), [
    ("en", {GPU: 2}, "2 × nvidia.com/gpu"),
    ("en", {"cpu": 1000}, "1 core"),
    ("en", {"cpu": 1500, "memory": 2**31, GPU: 2}, "2 × nvidia.com/gpu, 1.5 cores, 2 GiB memory"),
    ("zh-CN", {"cpu": 1500, "memory": 2**31, GPU: 2}, "2 × nvidia.com/gpu、1.5 核 CPU、2 GiB 内存"),
    ("en", {f"{GPU}:NVIDIA-A100-SXM4-80GB": 4}, "4 × nvidia.com/gpu (NVIDIA-A100-SXM4-80GB)"),
    ("en", {"memory": "2Gi"}, "memory 2Gi"),  # a quantity as the user wrote it
    ("en", {}, "nothing"), ("zh-CN", {}, "无"),
])
def test_resource_lists(lang, amounts, text):
    assert fmt.resources(lang, amounts) == text


@pytest.mark.parametrize(("lang", "items", "text"), [
    ("en", [], ""), ("en", ["a"], "a"), ("en", ["a", "b"], "a and b"), ("en", ["a", "b", "c"], "a, b and c"),
    ("zh-CN", ["a", "b", "c"], "a、b 和 c"),
])
def test_lists(lang, items, text):
    assert fmt.listing(lang, items) == text


def test_formatter_writes_each_placeholder_in_its_format():
    formatter = fmt.MessageFormatter("en", lambda key: {"phase.Running": "Running"}.get(key))
    template = "{n:plural:job|jobs} {p:phase} for {t:duration}, {at:time}, {x}, {y:>4}"
    assert formatter.format(template, n=1, p="Running", t=60, at="2026-12-01T10:00:00+00:00", x=3, y="ab") == \
        "1 job Running for 1m, 2026-12-01 10:00 UTC, 3,   ab"
    assert formatter.format("{n:plural:job|jobs}", n=2) == "2 jobs"


def test_placeholder_maps_ignore_plural_words():
    assert fmt.placeholders("{jobs:plural:job|jobs} of {used:resources}") == {"jobs": "", "used": "resources"}
    assert fmt.placeholders("{jobs} 个作业，{used:resources}") == {"jobs": "", "used": "resources"}


def test_render_falls_back_to_english_then_to_the_given_text():
    assert i18n.render("zh-CN", "error.request.missing", {"field_name": "name"}) == "缺少必填项 name。"
    assert i18n.render("fr", "error.request.missing", {"field_name": "name"}) == "name is required."
    assert i18n.render("en", "error.no.such.key", {}, fallback="as written") == "as written"
    # arguments that do not fit the template lose nothing: the fallback is shown
    assert i18n.render("en", "error.request.missing", {}, fallback="kept") == "kept"


def test_errors_carry_code_field_and_arguments_and_render_per_language():
    exc = InvalidInput("request.number_max", "page_size", field_name="page_size", limit=200)
    assert exc.to_dict("zh-CN") == {"code": "request.number_max", "kind": "invalid", "message": "page_size 不能大于 200。",
                                    "field": "page_size", "args": {"field_name": "page_size", "limit": 200}}
    assert exc.message == str(exc) == "page_size must be at most 200."
    assert NotFound("http.not_found", "path", path="/x").http_status == 404
