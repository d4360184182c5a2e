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


@pytest.mark.parametrize(("value", "text"), [
    (2**63 - 1, "9,223,372,036,854,775,807"),  # an int is never written through a float (…808)
    (-(2**63), "-9,223,372,036,854,775,808"),
    (10**40, "1e+40"),  # more digits than anyone reads: scientific
    (1e308, "1e+308"),  # not a 309-digit number
    (-1.5e20, "-1.5e+20"),
    (3653.0, "3,653"),  # a whole float without ".0"
    (12.5, "12.5"), (0.125, "0.12"), (-0.0, "0"), (-0.001, "0"),
    (999_999_999_999.99, "999,999,999,999.99"),
    (float("inf"), "inf"),
])
def test_numbers_are_exact_for_ints_and_compact_when_huge(value, text):
    assert fmt.number("en", value) == text == fmt.number("zh-CN", value)


@pytest.mark.parametrize(("value", "text"), [
    (3653.0, "3653"), (0.125, "0.125"), (2**63 - 1, "9223372036854775807"), (1e308, "1e+308"), (7, "7"),
    ("text", "text"), (True, "True"),
])
def test_a_placeholder_without_format_writes_numbers_plainly(value, text):
    assert fmt.MessageFormatter("en", lambda key: None).format("{x}", x=value) == text


@pytest.mark.parametrize(("lang", "millicores", "text"), [
    ("en", 2**63 - 1, "9223372036854775.807 cores"),  # exact, not 9.223e+15
    ("en", 125, "0.125 cores"), ("en", 1, "0.001 cores"), ("en", 1000, "1 core"), ("zh-CN", 2500, "2.5 核"),
])
def test_cores_are_written_exactly(lang, millicores, text):
    assert fmt.cpu(lang, millicores) == text


def test_device_counts_and_byte_sizes_near_the_64_bit_limit():
    assert fmt.resources("en", {GPU: 2**63 - 1}) == "9223372036854775807 × nvidia.com/gpu"
    assert fmt.size("en", 2**63 - 1) == "8 EiB"


@pytest.mark.parametrize(("value", "text"), [
    (0, "0"), (0.035, "0.035"), (0.0351, "0.035"), (0.5, "0.5"), (0.000123, "0.00012"), (0.96, "0.96"),
    (0.999, "1"), (1, "1"), (1.04, "1"), (12.34, "12.3"), (1234.56, "1,234.6"),
])
def test_small_amounts_keep_two_significant_digits(value, text):
    assert fmt.significant(value) == text


@pytest.mark.parametrize(("value", "text"), [
    ("2020-01-01T00:00:00+00:00", "2020-01-01 00:00 UTC"),
    ("2020-01-01T00:00:30+00:00", "2020-01-01 00:00:30 UTC"),  # seconds only when there are some
    ("2020-01-01T08:00:00+08:00", "2020-01-01 00:00 UTC"),
    ("0001-01-01T00:00:00+00:00", "0001-01-01 00:00 UTC"),  # four-digit years
    ("not a time", "not a time"),
])
def test_instants(value, text):
    assert fmt.instant("en", value) == text == fmt.instant("zh-CN", value)


def test_usage_window_messages_write_times_and_whole_days():
    order = InvalidInput("usage.window_order", "to", start="2020-01-02T00:00:00+00:00", end="2020-01-01T00:00:00+00:00")
    assert order.message == "to (2020-01-01 00:00 UTC) must be after from (2020-01-02 00:00 UTC)"
    assert "2020-01-01 00:00 UTC" in order.message_in("zh-CN")
    long = InvalidInput("usage.window_too_long", "from", days=3653.0, max=366)
    assert long.message == "from .. to covers 3,653 days; the limit is 366 days"


@pytest.mark.parametrize(("code", "args", "en", "zh"), [
    ("approval.job_id_required", {"kind": "extend_runtime"},
     "job_id is required: a request of kind extend_runtime (Longer run time) is about one job",
     "必须指定 job_id：类型为 extend_runtime（延长运行时间）的申请针对一个作业"),
    ("approval.duplicate", {"kind": "quota", "target": fmt.part("approval.target.project", project="vision"), "id": 4},
     "you already have a pending request of kind quota (More project quota) for project vision (#4)", None),
])
def test_kinds_read_with_their_label_not_after_an_article(code, args, en, zh):
    exc = InvalidInput(code, None, **args)
    assert exc.message == en
    if zh:
        assert exc.message_in("zh-CN") == zh
