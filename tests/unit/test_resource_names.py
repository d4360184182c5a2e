"""domain.resource_names: a requested resource no node offers, and the offered name it was probably meant to be."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import Unschedulable
from crater_app.domain.resource_names import check_offered, closest

OFFERED = ["nvidia.com/gpu", "nvidia.com/gpu", "huawei.com/Ascend910"]


@pytest.mark.parametrize(("name", "candidates", "expected"), [
    ("nvidia.com/gpus", ["cpu", "memory", "nvidia.com/gpu"], "nvidia.com/gpu"),
    ("nvidia.com/GPU", ["cpu", "memory", "nvidia.com/gpu"], "nvidia.com/gpu"),
    ("nvida.com/gpu", ["cpu", "memory", "nvidia.com/gpu"], "nvidia.com/gpu"),
    ("huawei.com/ascend910", ["cpu", "memory", "nvidia.com/gpu", "huawei.com/Ascend910"], "huawei.com/Ascend910"),
    ("huawei.com/Ascend-910", ["cpu", "memory", "huawei.com/Ascend910"], "huawei.com/Ascend910"),
    ("example.com/fpga", ["cpu", "memory", "nvidia.com/gpu"], None),
    ("nvidia.com/gpu", ["cpu", "memory"], None),
    ("cpus", ["cpu", "memory"], "cpu"),
    ("x", [], None),
])
def test_closest_offered_name(name, candidates, expected):
    assert closest(name, candidates) == expected


@pytest.mark.parametrize("requested", [[], ["nvidia.com/gpu"], ["cpu", "memory"], ["huawei.com/Ascend910", "nvidia.com/gpu"]])
def test_offered_names_pass(requested):
    check_offered(requested, OFFERED)


def test_offered_names_are_read_only_as_far_as_needed():
    read = []

    def devices():
        for name in ["nvidia.com/gpu"] * 3:
            read.append(name)
            yield name
        raise AssertionError("read past the first match")

    check_offered(["nvidia.com/gpu"], devices())
    assert read == ["nvidia.com/gpu"]


def test_a_close_name_is_suggested():
    with pytest.raises(Unschedulable) as caught:
        check_offered(["nvidia.com/gpus"], OFFERED)
    exc = caught.value
    assert (exc.code, exc.field) == ("job.resource_not_offered_suggestion", "resources.nvidia.com/gpus")
    assert exc.params == {"resource": "nvidia.com/gpus", "suggestion": "nvidia.com/gpu",
                          "offered": ["cpu", "memory", "huawei.com/Ascend910", "nvidia.com/gpu"]}
    assert "did you mean nvidia.com/gpu?" in exc.message
    assert "您是否想用 nvidia.com/gpu？" in exc.message_in("zh-CN")


def test_without_a_close_name_the_offered_ones_are_listed():
    with pytest.raises(Unschedulable) as caught:
        check_offered(["example.com/fpga"], [], field_prefix="tasks.0.resources")
    exc = caught.value
    assert (exc.code, exc.field) == ("job.resource_not_offered", "tasks.0.resources.example.com/fpga")
    assert exc.params == {"resource": "example.com/fpga", "offered": ["cpu", "memory"]}
    assert exc.message == ("No node offers example.com/fpga, so the job could never start; this cluster offers cpu "
                           "and memory.")
