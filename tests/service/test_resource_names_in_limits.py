"""Quotas, member shares, quota requests and prices name only resources and models some node offers (the fake
backend's 4 × nvidia.com/gpu NVIDIA-A100-SXM4-80GB), with "did you mean", and change nothing when refused."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import InvalidInput
from crater_app.services import approvals, billing, identity, jobs, projects, quotas
from tests.conftest import A100
from tests.fakes import FakeBackend
from tests.helpers import counts, spec

GPU = "nvidia.com/gpu"


@pytest.fixture
def vision(world):
    """``world`` with project ``vision``, alice its admin (her actor read again: it holds the new role)."""
    projects.create_project(world.ctx, world.admin, "vision")
    projects.set_member(world.ctx, world.admin, "vision", "alice", "admin")
    world.alice = identity.authenticate(world.ctx, world.tokens["alice"])
    return world


@pytest.mark.parametrize(("body", "field", "code", "words"), [
    ({"capability": {"nvidia.com/gpus": 1}}, "capability.nvidia.com/gpus", "resource.not_offered_suggestion",
     "did you mean nvidia.com/gpu?"),
    ({"guarantee": {"example.com/fpga": 1}}, "guarantee.example.com/fpga", "resource.not_offered",
     "this cluster offers cpu, memory and nvidia.com/gpu"),
    ({"capability": {f"{GPU}:Nope Model": 2}}, f"capability.{GPU}:Nope Model", "resource.model_not_offered",
     f"the models this cluster has are {A100}"),
    ({"deserved": {f"{GPU}:NVIDIA-A100-SXM4-80G": 2}}, f"deserved.{GPU}:NVIDIA-A100-SXM4-80G",
     "resource.model_not_offered_suggestion", f"did you mean '{A100}'?"),
])
def test_a_quota_on_what_no_node_offers_is_refused(vision, body, field, code, words):
    """A capability on nvidia.com/gpus was stored (200) and limited nothing: a 4-GPU job was then admitted."""
    ctx, admin = vision.ctx, vision.admin
    before = counts(ctx)
    with pytest.raises(InvalidInput) as info:
        quotas.set_quota(ctx, admin, "vision", body)
    assert (info.value.code, info.value.field) == (code, field)
    assert words in info.value.message
    assert counts(ctx) == before and quotas.get_quota(ctx, admin, "vision").capability == {}


def test_standard_names_and_offered_accelerators_pass(vision):
    ctx, admin = vision.ctx, vision.admin
    set_ = quotas.set_quota(ctx, admin, "vision", {"capability": {"cpu": "8", "memory": "32Gi", GPU: 2,
                                                                   f"{GPU}:{A100}": 1}})
    assert set_.capability == {"cpu": "8", "memory": str(32 * 2**30), GPU: "2", f"{GPU}:{A100}": "1"}
    held = jobs.submit_job(ctx, vision.alice, spec("big", ["true"], project="vision", resources={GPU: 2}))
    assert held.phase == "Queued"


def test_stored_keys_stay_accepted_while_a_node_is_away(vision):
    """Editing a quota does not fail because the node with its accelerators is down; a new unknown key does."""
    ctx, admin = vision.ctx, vision.admin
    quotas.set_quota(ctx, admin, "vision", {"capability": {GPU: 2, f"{GPU}:{A100}": 2}})
    ctx.backend = FakeBackend([])  # the GPU node is gone; the machine has CPUs only
    kept = quotas.set_quota(ctx, admin, "vision", {"capability": {"cpu": "4", GPU: 1, f"{GPU}:{A100}": 1}})
    assert kept.capability[GPU] == "1"
    with pytest.raises(InvalidInput) as info:
        quotas.set_quota(ctx, admin, "vision", {"capability": {GPU: 1, "huawei.com/Ascend910": 1}})
    assert info.value.params["offered"] == ["cpu", "memory"]


def test_a_share_on_what_no_node_offers_is_refused(vision):
    ctx, admin = vision.ctx, vision.admin
    before = counts(ctx)
    with pytest.raises(InvalidInput) as info:
        projects.set_member(ctx, admin, "vision", "bob", "member", share={"nvidia.com/gpus": 1})
    assert (info.value.code, info.value.field) == ("resource.not_offered_suggestion", "share.nvidia.com/gpus")
    assert counts(ctx) == before, "bob was not added"
    assert projects.set_member(ctx, admin, "vision", "bob", "member", share={GPU: 1}).share == {GPU: "1"}


def test_a_quota_request_on_what_no_node_offers_is_refused(vision):
    ctx = vision.ctx
    before = counts(ctx)
    with pytest.raises(InvalidInput) as info:
        approvals.create_request(ctx, vision.alice, "quota", "more GPUs", project="vision",
                                 payload={"capability": {"nvidia.com/gpus": 8}})
    assert (info.value.code, info.value.field) == ("resource.not_offered_suggestion",
                                                   "payload.capability.nvidia.com/gpus")
    with pytest.raises(InvalidInput) as info:
        approvals.create_request(ctx, vision.alice, "quota", "H100s", project="vision",
                                 payload={"capability": {f"{GPU}:NVIDIA H100 80GB HBM3": 8}})
    assert info.value.code == "resource.model_not_offered" and info.value.params["models"] == [A100]
    assert counts(ctx) == before
    asked = approvals.create_request(ctx, vision.alice, "quota", "more GPUs", project="vision",
                                     payload={"capability": {GPU: 8}})
    assert asked.status == "pending"


def test_a_price_on_what_no_node_offers_is_refused(world):
    """nvidia.com/gpus was priced and GPUs were never charged."""
    ctx, admin = world.ctx, world.admin
    before = counts(ctx)
    for rows, field, code in (
        ([{"resource": "nvidia.com/gpus", "points_per_hour": 10}], "prices[0].resource",
         "resource.not_offered_suggestion"),
        ([{"resource": "cpu", "points_per_hour": 1}, {"resource": GPU, "model": "Nope Model", "points_per_hour": 5}],
         "prices[1].model", "resource.model_not_offered"),
    ):
        with pytest.raises(InvalidInput) as info:
            billing.set_prices(ctx, admin, rows)
        assert (info.value.code, info.value.field) == (code, field)
        assert "没有" in info.value.message_in("zh-CN")
    assert counts(ctx) == before
    table = billing.set_prices(ctx, admin, [{"resource": "cpu", "points_per_hour": 1},
                                            {"resource": "memory", "points_per_hour": 0.1},
                                            {"resource": GPU, "model": A100, "points_per_hour": 20}])
    assert [(p.resource, p.model) for p in table] == [("cpu", ""), ("memory", ""), (GPU, A100)]
