"""domain.resource_names: a requested resource no node offers, and the offered name it was probably meant to be."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import InvalidInput, Unschedulable
from crater_app.domain.resource_names import Offered, check_offered, check_offered_key, check_offered_keys, closest

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


A100, H100 = "NVIDIA-A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"
CLUSTER = Offered.of([("nvidia.com/gpu", A100), ("nvidia.com/gpu", A100), ("nvidia.com/gpu", H100),
                      ("huawei.com/Ascend910", "Ascend910B")])


@pytest.mark.parametrize(("resource", "model"), [
    ("cpu", None), ("memory", None), ("ephemeral-storage", None), ("pods", None),  # Kubernetes' standard names
    ("nvidia.com/gpu", None), ("nvidia.com/gpu", A100), ("nvidia.com/gpu", H100), ("huawei.com/Ascend910", None),
])
def test_offered_resources_and_models_pass(resource, model):
    check_offered_key(resource, model, CLUSTER, "capability.x")


@pytest.mark.parametrize(("resource", "model", "code", "args"), [
    ("nvidia.com/gpus", None, "resource.not_offered_suggestion",
     {"resource": "nvidia.com/gpus", "suggestion": "nvidia.com/gpu",
      "offered": ["cpu", "memory", "huawei.com/Ascend910", "nvidia.com/gpu"]}),
    ("example.com/fpga", None, "resource.not_offered",
     {"resource": "example.com/fpga", "offered": ["cpu", "memory", "huawei.com/Ascend910", "nvidia.com/gpu"]}),
    ("nvidia.com/gpu", "Nope Model", "resource.model_not_offered",
     {"resource": "nvidia.com/gpu", "model": "Nope Model", "models": [H100, A100]}),
    ("nvidia.com/gpu", "NVIDIA A100-SXM4-80GB", "resource.model_not_offered_suggestion",
     {"resource": "nvidia.com/gpu", "model": "NVIDIA A100-SXM4-80GB", "suggestion": A100, "models": [H100, A100]}),
    ("nvidia.com/gpu", "Ascend910B", "resource.model_not_offered",  # a model of another resource
     {"resource": "nvidia.com/gpu", "model": "Ascend910B", "models": [H100, A100]}),
    ("huawei.com/Ascend910", "NVIDIA-H100", "resource.model_not_offered",  # vendor words alone are no near miss
     {"resource": "huawei.com/Ascend910", "model": "NVIDIA-H100", "models": ["Ascend910B"]}),
])
def test_what_no_node_offers_is_refused_with_what_exists(resource, model, code, args):
    with pytest.raises(InvalidInput) as caught:
        check_offered_key(resource, model, CLUSTER, "prices[3].resource", "prices[3].model")
    exc = caught.value
    assert (exc.code, exc.params) == (code, args)
    assert exc.field == ("prices[3].model" if "model" in code else "prices[3].resource")
    assert "did you mean" in exc.message if "suggestion" in code else "did you mean" not in exc.message
    assert exc.message_in("zh-CN").startswith("没有")


def test_quota_keys_carry_their_model_and_stored_keys_pass():
    check_offered_keys({"cpu": 1, "nvidia.com/gpu": 2, f"nvidia.com/gpu:{A100}": 1}, CLUSTER, "capability")
    with pytest.raises(InvalidInput) as caught:
        check_offered_keys({"nvidia.com/gpu:Nope": 1}, CLUSTER, "share")
    assert caught.value.field == "share.nvidia.com/gpu:Nope"
    check_offered_keys({"nvidia.com/gpu:Nope": 1}, CLUSTER, "share", accepted={"nvidia.com/gpu:Nope": "1"})


def test_an_unknown_inventory_refuses_nothing():
    """No node listed yet (a cluster whose inventory is not read): nothing can be judged, nothing is refused."""
    empty = Offered.of([], nodes=0)
    check_offered_key("nvidia.com/gpus", None, empty, "capability.nvidia.com/gpus")
    with pytest.raises(InvalidInput):
        check_offered_key("nvidia.com/gpu", None, Offered.of([], nodes=1), "capability.nvidia.com/gpu")
