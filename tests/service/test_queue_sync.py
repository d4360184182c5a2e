"""services.queues: a project's quota and its members' shares reach the backend's queue (ensure_queue) when they
change and on the leader's repair round; a backend without queues is never asked; a refusing backend fails no edit."""

from __future__ import annotations

import pytest

from crater_app.cluster.base import QUEUES
from crater_app.domain.quota import Quota
from crater_app.services import projects, queues, quotas
from crater_app.services.leader import LeaderLoop

GPU = "nvidia.com/gpu"


@pytest.fixture
def queued(world):
    """The world's backend, with Volcano-style queues (the fake records every ensure_queue call)."""
    world.ctx.backend.capabilities = world.ctx.backend.capabilities | {QUEUES}
    return world


def test_a_quota_edit_reaches_the_backend_queue_at_once(queued):
    ctx = queued.ctx
    projects.create_project(ctx, queued.admin, "vision")
    assert ctx.backend.queues["vision"] == (Quota(), {})
    quotas.set_quota(ctx, queued.admin, "vision", {"deserved": {GPU: 2, "cpu": "8"}, "capability": {GPU: 4}})
    quota, shares = ctx.backend.queues["vision"]
    assert quota == Quota(guarantee={}, deserved={GPU: 2, "cpu": 8000}, capability={GPU: 4}) and shares == {}


def test_member_shares_are_child_queues_and_leave_with_the_member(queued):
    ctx = queued.ctx
    projects.create_project(ctx, queued.admin, "vision")
    quotas.set_quota(ctx, queued.admin, "vision", {"capability": {GPU: 4}})
    projects.set_member(ctx, queued.admin, "vision", "bob", "member")  # bob keeps his default project
    projects.set_member(ctx, queued.admin, "vision", "alice", "member", share={GPU: 1})
    assert ctx.backend.queues["vision"][1] == {"alice": Quota(capability={GPU: 1})}
    projects.remove_member(ctx, queued.admin, "vision", "alice")
    assert ctx.backend.queues["vision"][1] == {}


def test_the_leader_puts_every_queue_back_on_taking_over_and_each_repair_round(queued):
    ctx = queued.ctx
    projects.create_project(ctx, queued.admin, "vision")
    quotas.set_quota(ctx, queued.admin, "vision", {"capability": {GPU: 4}})
    ctx.backend.queues.clear()  # edited or deleted by hand
    loop = LeaderLoop(ctx)
    loop.step()  # takes the lease: syncs every project's queue
    assert ctx.backend.queues["vision"][0].capability == {GPU: 4} and "default" in ctx.backend.queues
    ctx.backend.queues.clear()
    loop._repair_at -= loop.REPAIR_EVERY_S  # the next round is a repair round
    loop.step()
    assert ctx.backend.queues["vision"][0].capability == {GPU: 4}


def test_a_backend_without_queues_is_not_asked(world):
    ctx = world.ctx
    assert QUEUES not in ctx.backend.capabilities
    projects.create_project(ctx, world.admin, "vision")
    quotas.set_quota(ctx, world.admin, "vision", {"capability": {GPU: 4}})
    assert ctx.backend.queues == {} and queues.sync(ctx) == 0


def test_a_refusing_backend_fails_no_quota_edit(queued):
    ctx = queued.ctx
    projects.create_project(ctx, queued.admin, "vision")

    def unreachable(project, quota, shares=None):
        raise ConnectionError("cluster unreachable")

    ctx.backend.ensure_queue = unreachable
    result = quotas.set_quota(ctx, queued.admin, "vision", {"capability": {GPU: 4}})
    assert result.capability == {GPU: "4"}
    assert quotas.get_quota(ctx, queued.admin, "vision").capability == {GPU: "4"}
