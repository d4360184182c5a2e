"""domain.quota: quota resource lists (guarantee/deserved/capability/share), their order rule and formatting."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import InvalidInput
from crater_app.domain.quota import (
    MAX_QUOTA_KEYS, Quota, add, devices, fits, format_amount, format_usage, over, parse_quota, parse_quota_list,
    render_quota_list, sub, usage_of,
)
from crater_app.domain.resources import ResourceList, parse_resources

A100 = "nvidia.com/gpu:NVIDIA-A100-SXM4-80GB"


def test_parses_cpu_memory_devices_and_models_to_canonical_units():
    usage = parse_quota_list(
        {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": 8, A100: 4, "huawei.com/Ascend910": "2"}, "capability"
    )
    assert usage == {"cpu": 64_000, "memory": 256 * 1024**3, "nvidia.com/gpu": 8, A100: 4, "huawei.com/Ascend910": 2}


def test_zero_is_kept_and_none_is_empty():
    assert parse_quota_list({"nvidia.com/gpu": 0, "cpu": "0"}, "capability") == {"nvidia.com/gpu": 0, "cpu": 0}
    assert parse_quota_list(None, "guarantee") == {}


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ({"nvidia.com/gpu": -1}, "guarantee.nvidia.com/gpu", "negative"),
        ({"nvidia.com/gpu": "1.5"}, "guarantee.nvidia.com/gpu", "whole number of devices"),
        ({A100: "0.5"}, f"guarantee.{A100}", "whole number of devices"),
        ({A100: -2}, f"guarantee.{A100}", "negative"),
        ({"cpu": "0.0001"}, "guarantee.cpu", "millicores"),
        ({"memory": "lots"}, "guarantee.memory", "not a Kubernetes quantity"),
        ({"gpu": 1}, "guarantee.gpu", "unknown resource"),
        ({"nvidia.com/gpu:": 1}, "guarantee.nvidia.com/gpu:", "model"),
        ({"nvidia.com/gpu:A100/80GB": 1}, "guarantee.nvidia.com/gpu:A100/80GB", "model"),
        ({"nvidia.com/gpu:" + "x" * 129: 1}, "guarantee.nvidia.com/gpu:" + "x" * 49 + "…", "128"),  # paths cut keys at 64
        ({"cpu:fast": 1}, "guarantee.cpu:fast", "only accelerator"),
        ({"nvidia.com/gpu": True}, "guarantee.nvidia.com/gpu", "quantity"),
    ],
)
def test_bad_entries_name_the_field_and_the_rule(raw, field, words):
    with pytest.raises(InvalidInput) as err:
        parse_quota_list(raw, "guarantee")
    assert err.value.field == field
    assert words in err.value.message


def test_not_a_mapping_and_too_many_keys():
    with pytest.raises(InvalidInput) as err:
        parse_quota_list(["cpu"], "deserved")
    assert err.value.field == "deserved"
    many = {f"nvidia.com/gpu:M{i}": 1 for i in range(MAX_QUOTA_KEYS + 1)}
    with pytest.raises(InvalidInput) as err:
        parse_quota_list(many, "deserved")
    assert err.value.field == "deserved" and str(MAX_QUOTA_KEYS) in err.value.message


def test_parse_quota_reads_three_sections():
    quota = parse_quota({"guarantee": {"nvidia.com/gpu": 1}, "deserved": {"nvidia.com/gpu": 4},
                         "capability": {"nvidia.com/gpu": 8, "cpu": "32"}})
    assert quota == Quota({"nvidia.com/gpu": 1}, {"nvidia.com/gpu": 4}, {"nvidia.com/gpu": 8, "cpu": 32_000})
    assert parse_quota({}) == Quota()


@pytest.mark.parametrize(
    ("body", "field", "numbers"),
    [
        ({"guarantee": {"nvidia.com/gpu": 5}, "deserved": {"nvidia.com/gpu": 4}}, "guarantee.nvidia.com/gpu",
         ("5 × nvidia.com/gpu", "4 × nvidia.com/gpu")),
        ({"deserved": {"cpu": "40"}, "capability": {"cpu": "32"}}, "deserved.cpu", ("40 cores", "32 cores")),
        ({"guarantee": {"memory": "2Gi"}, "capability": {"memory": "1Gi"}}, "guarantee.memory", ("2 GiB memory", "1 GiB memory")),
        ({"deserved": {A100: 3}, "capability": {A100: 2}}, f"deserved.{A100}", ("3 × nvidia.com/gpu (NVIDIA-A100",)),
    ],
)
def test_order_guarantee_deserved_capability(body, field, numbers):
    with pytest.raises(InvalidInput) as err:
        parse_quota(body)
    assert err.value.field == field
    for number in numbers:
        assert number in err.value.message


def test_order_only_compares_keys_both_sides_give():
    parse_quota({"guarantee": {"cpu": "8"}, "deserved": {"nvidia.com/gpu": 2}, "capability": {"memory": "1Gi"}})


def test_unknown_section_and_non_object_body():
    with pytest.raises(InvalidInput) as err:
        parse_quota({"limit": {}})
    assert err.value.field == "limit"  # a top-level key of the body
    with pytest.raises(InvalidInput) as err:
        parse_quota([1])
    assert err.value.field == "quota"


def test_render_reads_back_to_the_same_usage():
    usage = {"cpu": 1500, "memory": 3 * 1024**3, "nvidia.com/gpu": 2, A100: 2}
    rendered = render_quota_list(usage)
    assert rendered["cpu"] == "1500m" and rendered["nvidia.com/gpu"] == "2"
    assert parse_quota_list(rendered, "capability") == usage
    assert render_quota_list({"cpu": 4000}) == {"cpu": "4"}


def test_usage_of_a_job_counts_devices_under_name_and_model():
    resources = parse_resources({"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 2})
    assert usage_of(resources, "NVIDIA-A100-SXM4-80GB") == {
        "cpu": 4000, "memory": 16 * 1024**3, "nvidia.com/gpu": 2, A100: 2}
    assert usage_of(resources, None) == {"cpu": 4000, "memory": 16 * 1024**3, "nvidia.com/gpu": 2}
    assert usage_of(ResourceList(), "X") == {}


def test_arithmetic_and_fit():
    a = {"cpu": 1000, "nvidia.com/gpu": 2}
    b = {"nvidia.com/gpu": 1, "memory": 5}
    assert add(a, b) == {"cpu": 1000, "nvidia.com/gpu": 3, "memory": 5}
    assert sub(a, b) == {"cpu": 1000, "nvidia.com/gpu": 1, "memory": -5}
    assert a == {"cpu": 1000, "nvidia.com/gpu": 2}  # inputs untouched
    limit = {"nvidia.com/gpu": 3}
    assert fits(a, b, limit) and over(a, b, limit) is None
    assert over(a, {"nvidia.com/gpu": 2}, limit) == "nvidia.com/gpu"
    assert fits(a, {"cpu": 10**9}, limit)  # no ceiling on a key the limit does not give
    assert devices({"cpu": 1, "nvidia.com/gpu": 2, A100: 2, "huawei.com/Ascend910": 1}) == 3


@pytest.mark.parametrize(
    ("key", "amount", "text"),
    [("cpu", 4000, "4 cores"), ("cpu", 1000, "1 core"), ("cpu", 500, "500m"), ("memory", 16 * 1024**3, "16.0 GiB"),
     ("nvidia.com/gpu", 2, "2 × nvidia.com/gpu"), (A100, 4, "4 × nvidia.com/gpu (NVIDIA-A100-SXM4-80GB)")],
)
def test_format_amount(key, amount, text):
    assert format_amount(key, amount) == text


def test_format_usage():
    assert format_usage({"nvidia.com/gpu": 2, "cpu": 2000}) == "2 cores, 2 × nvidia.com/gpu"
    assert format_usage({}) == "nothing"
