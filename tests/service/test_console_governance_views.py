"""services.console.project_view / operation_log_view and services.oplog.list_actions: what the projects and
operation-log pages read (real database)."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import Forbidden, InvalidInput, NotFound
from crater_app.services import console, identity, oplog, projects


def _fresh(world, name: str):
    """``name``'s actor as read again (project roles change when members are set)."""
    return identity.authenticate(world.ctx, world.tokens[name])


def test_project_view_says_who_may_manage_members(world):
    ctx, admin = world.ctx, world.admin
    projects.create_project(ctx, admin, "vision", display_name="Vision")
    projects.set_member(ctx, admin, "vision", "alice", "admin")
    projects.set_member(ctx, admin, "vision", "bob", "member")
    projects.set_member(ctx, admin, "vision", "gus", "admin")  # a guest stays read-only whatever its project role

    view = console.project_view(ctx, admin, "vision")
    assert view.can_manage and view.project.members is not None and view.project.role is None
    assert view.can_set_quota and view.project.quota is not None
    alice = console.project_view(ctx, _fresh(world, "alice"), "vision")
    assert alice.can_manage and alice.project.role == "admin" and not alice.can_set_quota
    assert [m.username for m in alice.project.members] == ["alice", "bob", "gus"]
    bob = console.project_view(ctx, _fresh(world, "bob"), "vision")
    assert not bob.can_manage and bob.project.members is None and bob.project.role == "member"
    gus = console.project_view(ctx, _fresh(world, "gus"), "vision")
    assert not gus.can_manage and gus.project.members is not None


def test_project_view_hides_projects_of_others(world):
    projects.create_project(world.ctx, world.admin, "secret")
    with pytest.raises(NotFound):
        console.project_view(world.ctx, world.alice, "secret")
    with pytest.raises(NotFound):
        console.project_view(world.ctx, world.admin, "missing")
    with pytest.raises(InvalidInput) as err:
        console.project_view(world.ctx, world.admin, "Not A Name")
    assert err.value.field == "name"


def test_operation_log_view_and_actions(world):
    ctx, admin = world.ctx, world.admin
    projects.create_project(ctx, admin, "vision")
    projects.set_member(ctx, admin, "vision", "alice", "member")
    view = console.operation_log_view(ctx, admin, action="project:member:set", page_size=10)
    assert [r.target for r in view.page.items] == ["vision/alice"] and view.page.total == 1
    assert view.actions == sorted(set(view.actions))
    assert {"auth:login", "project:create", "project:member:set", "user:create"} <= set(view.actions)
    assert console.operation_log_view(ctx, admin, who="alice").page.total >= 1  # her login
    assert oplog.list_actions(ctx, admin) == view.actions


def test_operation_log_view_is_for_admins_only(world):
    for who in (world.alice, world.guest):
        with pytest.raises(Forbidden):
            console.operation_log_view(world.ctx, who)
        with pytest.raises(Forbidden):
            oplog.list_actions(world.ctx, who)
