"""A resource name no node offers is refused at submission with the names the cluster offers and, when one is
close, "did you mean …?" (``suggestion`` in the arguments); nothing is written."""

from __future__ import annotations

from fastapi.testclient import TestClient

from crater_app.api.app import build_api
from crater_app.cluster.local import LocalBackend
from tests.api.conftest import assert_error
from tests.helpers import counts


def test_a_misspelt_accelerator_gets_did_you_mean(api):
    before = counts(api.world.ctx)
    r = api.submit(resources={"nvidia.com/gpus": 1})
    error = assert_error(r, 422, "unschedulable", "resources.nvidia.com/gpus", "did you mean nvidia.com/gpu?",
                         code="job.resource_not_offered_suggestion")
    assert error["args"] == {"resource": "nvidia.com/gpus", "suggestion": "nvidia.com/gpu",
                             "offered": ["cpu", "memory", "nvidia.com/gpu"]}
    r = api.client.post("/api/v1/jobs", json={"name": "j", "command": ["true"], "resources": {"nvidia.com/GPU": 2}},
                        headers={**api.auth("alice"), "Accept-Language": "zh-CN"})
    error = assert_error(r, 422, "unschedulable", "resources.nvidia.com/GPU", code="job.resource_not_offered_suggestion")
    assert "您是否想用 nvidia.com/gpu？" in error["message"]
    assert counts(api.world.ctx) == before


def test_a_name_unlike_any_offered_one_lists_what_is_offered(api):
    r = api.submit(resources={"example.com/fpga": 1})
    error = assert_error(r, 422, "unschedulable", "resources.example.com/fpga", "cpu, memory and nvidia.com/gpu",
                         code="job.resource_not_offered")
    assert "suggestion" not in error["args"]
    # a count of 0 asks for nothing, so it is no problem; an offered resource beyond the machine keeps its numbers
    assert api.submit(resources={"example.com/fpga": 0}).status_code == 201
    assert_error(api.submit(resources={"nvidia.com/gpu": 5}), 422, "unschedulable", "resources.nvidia.com/gpu",
                 "largest node has 4 × nvidia.com/gpu; one replica cannot get 5")


def test_on_a_machine_without_accelerators_none_is_offered(world, tmp_path):
    ctx = world.ctx
    ctx.backend = LocalBackend(tmp_path / "cpu-only", devices=[])
    with TestClient(build_api(lambda: ctx)) as client:
        r = client.post("/api/v1/jobs", json={"name": "j", "command": ["true"], "resources": {"nvidia.com/gpu": 1}},
                        headers={"Authorization": f"Bearer {world.tokens['alice']}"})
        error = assert_error(r, 422, "unschedulable", "resources.nvidia.com/gpu", code="job.resource_not_offered")
        assert error["args"]["offered"] == ["cpu", "memory"]
