"""domain.resources: Kubernetes quantities -> canonical units, and every way a resource list can be wrong."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import InvalidInput
from kubernetes.utils import parse_quantity

from crater_app.domain.resources import (
    MAX_RESOURCE_NAMES, ResourceList, canonical_quantity, format_bytes, parse_resources,
)


@pytest.mark.parametrize(
    ("raw", "cpu_m"),
    [("500m", 500), ("2", 2000), (2, 2000), ("0.5", 500), (1.5, 1500), ("1500m", 1500), ("0", 0), ("1k", 1_000_000)],
)
def test_cpu_in_millicores(raw, cpu_m):
    assert parse_resources({"cpu": raw}).cpu_m == cpu_m


@pytest.mark.parametrize(
    ("raw", "memory"),
    [("4Gi", 4 * 1024**3), ("512Mi", 512 * 1024**2), ("1G", 10**9), ("128974848", 128974848), (1024, 1024),
     ("129e6", 129_000_000), ("1Ki", 1024)],
)
def test_memory_in_bytes(raw, memory):
    assert parse_resources({"memory": raw}).memory_bytes == memory


def test_accelerators_are_whole_devices_by_extended_name():
    parsed = parse_resources({"nvidia.com/gpu": "2", "huawei.com/Ascend910": 1, "cpu": "4", "memory": "8Gi"})
    assert parsed.accelerators == {"nvidia.com/gpu": 2, "huawei.com/Ascend910": 1}
    assert parsed.gpus == 3
    assert parsed.cpu_m == 4000 and parsed.memory_bytes == 8 * 1024**3


def test_zero_accelerators_are_dropped_and_none_is_empty():
    assert parse_resources({"nvidia.com/gpu": "0"}).accelerators == {}
    assert parse_resources(None) == ResourceList()
    assert parse_resources({}) == ResourceList()


def test_round_trip_to_kubernetes_resource_list():
    parsed = parse_resources({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 2})
    assert parsed.to_k8s() == {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "2"}
    assert parse_resources({"memory": "1536Mi"}).to_k8s() == {"memory": "1536Mi"}
    assert parse_resources({"memory": "1000"}).to_k8s() == {"memory": "1000"}
    assert parse_resources({"cpu": "3"}).to_k8s() == {"cpu": "3"}
    assert parse_resources(parsed.to_k8s()) == parsed


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ({"cpu": "-1"}, "resources.cpu", "negative"),
        ({"memory": "-4Gi"}, "resources.memory", "negative"),
        ({"nvidia.com/gpu": -1}, "resources.nvidia.com/gpu", "negative"),
        ({"nvidia.com/gpu": "0.5"}, "resources.nvidia.com/gpu", "fractional"),
        ({"nvidia.com/gpu": 1.5}, "resources.nvidia.com/gpu", "fractional"),
        ({"nvidia.com/gpu": "500m"}, "resources.nvidia.com/gpu", "fractional"),
        ({"cpu": "0.0001"}, "resources.cpu", "millicores"),
        ({"memory": "0.5"}, "resources.memory", "bytes"),
        ({"cpu": "lots"}, "resources.cpu", "not a Kubernetes quantity"),
        ({"memory": "4GB"}, "resources.memory", "not a Kubernetes quantity"),
        ({"memory": "4GiB"}, "resources.memory", "not a Kubernetes quantity"),
        ({"cpu": "inf"}, "resources.cpu", "not a finite quantity"),
        ({"memory": "Infinity"}, "resources.memory", "not a finite quantity"),
        ({"nvidia.com/gpu": "inf"}, "resources.nvidia.com/gpu", "not a finite quantity"),
        ({"cpu": "nan"}, "resources.cpu", "not a Kubernetes quantity"),
        ({"cpu": "0x10"}, "resources.cpu", "not a Kubernetes quantity"),
        ({"cpu": ""}, "resources.cpu", "not a Kubernetes quantity"),
        ({"cpu": "1" * 40}, "resources.cpu", "limit is 32"),
        ({"cpu": True}, "resources.cpu", "quantity"),
        ({"cpu": None}, "resources.cpu", "quantity"),
        ({"cpu": ["1"]}, "resources.cpu", "quantity"),
        ({"gpu": "1"}, "resources.gpu", "unknown resource"),
        ({"GPU": "1"}, "resources.GPU", "unknown resource"),
        ({"nvidia.com/": "1"}, "resources.nvidia.com/", "unknown resource"),
        ({"<script>": "1"}, "resources.<script>", "unknown resource"),
        # Decimal reads these; Kubernetes does not.
        ({"cpu": "1_000"}, "resources.cpu", "not a Kubernetes quantity"),
        ({"memory": "\u0661Gi"}, "resources.memory", "not a Kubernetes quantity"),
        # Canonical amounts are 64-bit: '1e99999' would build a 100,000-digit int (and fail to print).
        ({"cpu": "1e99999"}, "resources.cpu", "too large"),
        ({"cpu": "1e999999"}, "resources.cpu", "too large"),  # Decimal overflows multiplying this by 1000
        ({"cpu": "9223372036854776"}, "resources.cpu", "too large"),
        ({"memory": "8Ei"}, "resources.memory", "too large"),
        ({"memory": "1e400"}, "resources.memory", "too large"),
        ({"nvidia.com/gpu": 10**30}, "resources.nvidia.com/gpu", "too large"),
    ],
)
def test_bad_quantities_and_names_name_the_field(raw, field, words):
    with pytest.raises(InvalidInput) as info:
        parse_resources(raw)
    assert info.value.field == field
    assert words in info.value.message


def test_more_than_sixteen_entries_is_rejected_with_the_limit():
    raw = {f"example.com/dev{i}": "1" for i in range(MAX_RESOURCE_NAMES + 1)}
    with pytest.raises(InvalidInput) as info:
        parse_resources(raw)
    assert info.value.field == "resources"
    assert f"{MAX_RESOURCE_NAMES + 1} entries" in info.value.message and f"limit is {MAX_RESOURCE_NAMES}" in info.value.message
    ok = {f"example.com/dev{i}": "1" for i in range(MAX_RESOURCE_NAMES)}
    assert parse_resources(ok).gpus == MAX_RESOURCE_NAMES


def test_resources_must_be_a_mapping():
    with pytest.raises(InvalidInput) as info:
        parse_resources(["cpu", "1"])
    assert info.value.field == "resources"


def test_format_bytes():
    assert format_bytes(512) == "512 B"
    assert format_bytes(4 * 1024**3) == "4.0 GiB"
    assert format_bytes(1536 * 1024) == "1.5 MiB"


# What `kubectl` shows for each (k8s.io/apimachinery resource.Quantity's canonical form).
@pytest.mark.parametrize(("raw", "canonical"), [
    (" 1 ", "1"), ("1.0", "1"), ("-0", "0"), ("0", "0"), ("+2", "2"), ("1.", "1"), (2, "2"), (1.0, "1"),
    ("0.5", "500m"), (".5", "500m"), (2.5, "2500m"), ("0.001", "1m"), ("100m", "100m"), ("1500m", "1500m"),
    ("1000", "1k"), ("1500", "1500"), ("2.5k", "2500"), ("1000000", "1M"), ("1E", "1E"),
    ("1073741824", "1073741824"),  # plain bytes are decimal: no power of ten to take out
    ("2Gi", "2Gi"), ("1.5Gi", "1536Mi"), ("1024Mi", "1Gi"), ("1025Ki", "1025Ki"), ("8Ei", "8Ei"),
    ("0.5Ki", "512"),  # under 1024 a binary quantity is written in decimal
    ("1e3", "1e3"), ("1E3", "1e3"), ("12e-1", "1200e-3"), ("1.5e3", "1500"),
])
def test_canonical_quantities(raw, canonical):
    assert canonical_quantity(raw) == canonical
    assert parse_quantity(canonical) == parse_quantity(str(raw).strip()), "the same amount"
    assert canonical_quantity(canonical) == canonical, "canonical text is its own canonical form"


def test_canonical_quantity_refuses_what_is_no_quantity():
    for raw in ("1_000", "inf", "1 Gi", "١"):
        with pytest.raises(ValueError):
            canonical_quantity(raw)
