"""services.projects: create, list, read, members (roles, default project rule, cache); the unique name on SQLite and
PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import select

from crater_app.db.models import OperationLog, User
from crater_app.db.types import utcnow
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, NotFound
from crater_app.services import identity, jobs, projects
from tests.helpers import counts


def _oplog(ctx, action):
    with ctx.session() as s:
        return list(s.exec(select(OperationLog).where(OperationLog.action == action).order_by(OperationLog.id)))


@pytest.mark.both_databases
def test_create_project_admin_only_and_logged(world):
    ctx = world.ctx
    expiry = (utcnow() + timedelta(days=30)).replace(microsecond=0)
    p = projects.create_project(ctx, world.admin, "vision", "Vision lab", "CV research",
                                expiry.isoformat().replace("+00:00", "Z"))
    assert (p.name, p.display_name, p.description, p.expires_at, p.expired, p.member_count) == (
        "vision", "Vision lab", "CV research", expiry, False, 0)
    assert p.expires_at.utcoffset() == timedelta(0)
    rows = _oplog(ctx, "project:create")
    assert rows[-1].target == "vision" and rows[-1].actor == "admin" and rows[-1].details.startswith("expires at 20")
    assert rows[-1].code == "project.created_expiring" and set(rows[-1].args) == {"expires_at"}
    for who in (world.alice, world.guest):
        with pytest.raises(Forbidden):
            projects.create_project(ctx, who, "nope")
    with pytest.raises(Conflict) as err:
        projects.create_project(ctx, world.admin, "vision")
    assert err.value.field == "name"


@pytest.mark.parametrize("kwargs, field, words", [
    ({"name": "Vision"}, "name", "DNS-1123"),
    ({"name": "x" * 64}, "name", "63"),
    ({"name": 7}, "name", "string"),
    ({"name": "ok", "display_name": "d" * 129}, "display_name", "128"),
    ({"name": "ok", "description": "d" * 1025}, "description", "1024"),
    ({"name": "ok", "description": "bad\x00"}, "description", "1024"),
    ({"name": "ok", "expires_at": "2020-01-01T00:00:00Z"}, "expires_at", "past"),
    ({"name": "ok", "expires_at": "2099-01-01T00:00:00"}, "expires_at", "offset"),
    ({"name": "ok", "expires_at": "tomorrow"}, "expires_at", "ISO 8601"),
    ({"name": "ok", "expires_at": 12}, "expires_at", "ISO 8601"),
])
def test_create_project_bad_input_writes_nothing(world, kwargs, field, words):
    before = counts(world.ctx)
    with pytest.raises(InvalidInput) as err:
        projects.create_project(world.ctx, world.admin, **kwargs)
    assert err.value.field == field and words in err.value.message
    assert counts(world.ctx) == before


def test_members_roles_visibility_and_cache(world):
    ctx, admin = world.ctx, world.admin
    projects.create_project(ctx, admin, "vision")
    m = projects.set_member(ctx, admin, "vision", "alice", "admin")
    assert (m.username, m.role, m.default) == ("alice", "admin", False)
    # the role applies at once: the cached identity is dropped
    alice = identity.authenticate(ctx, world.tokens["alice"])
    assert alice.project_roles[_pid(ctx, "vision")] == "admin"
    # a project admin manages members; a member sees the project without its member list
    projects.set_member(ctx, alice, "vision", "bob", "member")
    bob = identity.authenticate(ctx, world.tokens["bob"])
    seen = projects.get_project(ctx, bob, "vision")
    assert seen.role == "member" and seen.members is None and seen.member_count == 2
    full = projects.get_project(ctx, alice, "vision")
    assert [(x.username, x.role) for x in full.members] == [("alice", "admin"), ("bob", "member")]
    with pytest.raises(Forbidden):
        projects.set_member(ctx, bob, "vision", "gus", "viewer")
    with pytest.raises(NotFound):  # not a member: the project does not exist for gus
        projects.get_project(ctx, world.guest, "vision")
    # lists: own memberships with role; admins see all
    assert [(p.name, p.role) for p in projects.list_projects(ctx, bob)] == [("default", "member"), ("vision", "member")]
    assert [p.name for p in projects.list_projects(ctx, admin)] == ["default", "vision"]
    # role change, logged with before -> after; setting the same role again writes nothing
    projects.set_member(ctx, alice, "vision", "bob", "viewer")
    changed = _oplog(ctx, "project:member:set")[-1]
    assert (changed.code, changed.args, changed.details) == (
        "project.member_set", {"role_before": "member", "role": "viewer"}, "role: Member → Viewer")
    n = len(_oplog(ctx, "project:member:set"))
    projects.set_member(ctx, alice, "vision", "bob", "viewer")
    assert len(_oplog(ctx, "project:member:set")) == n
    bob = identity.authenticate(ctx, world.tokens["bob"])
    with pytest.raises(Forbidden):  # viewers submit nothing
        jobs.submit_job(ctx, bob, {"name": "x", "project": "vision", "command": ["true"]})


def _pid(ctx, name):
    from crater_app.db.models import Project

    with ctx.session() as s:
        return s.exec(select(Project.id).where(Project.name == name)).one()


def test_member_errors(world):
    ctx, admin = world.ctx, world.admin
    projects.create_project(ctx, admin, "vision")
    with pytest.raises(InvalidInput) as err:
        projects.set_member(ctx, admin, "vision", "alice", "owner")
    assert err.value.field == "role"
    with pytest.raises(NotFound) as err:
        projects.set_member(ctx, admin, "vision", "nobody", "member")
    assert err.value.field == "username"
    with pytest.raises(NotFound) as err:
        projects.set_member(ctx, admin, "nope", "alice", "member")
    assert err.value.field == "name"
    with pytest.raises(InvalidInput):
        projects.set_member(ctx, admin, "vision", "Alice!", "member")
    with pytest.raises(NotFound):  # not a member
        projects.remove_member(ctx, admin, "vision", "alice")


def test_default_project_rule(world):
    ctx, admin = world.ctx, world.admin
    projects.create_project(ctx, admin, "vision")
    # alice's only project is 'default': removing her there is refused with 409 and changes nothing
    before = counts(ctx)
    with pytest.raises(Conflict) as err:
        projects.remove_member(ctx, admin, "default", "alice")
    assert err.value.field == "username" and "no other project" in err.value.message
    assert counts(ctx) == before
    # with another membership, her default moves there
    projects.set_member(ctx, admin, "vision", "alice", "member")
    projects.remove_member(ctx, admin, "default", "alice")
    with ctx.session() as s:
        alice = s.exec(select(User).where(User.username == "alice")).one()
    assert alice.default_project_id == _pid(ctx, "vision")
    removed = _oplog(ctx, "project:member:remove")[-1]
    assert removed.code == "project.member_removed_default_moved" and removed.args["default_project"] == "vision"
    assert removed.details.endswith("default project now vision")
    actor = identity.authenticate(ctx, world.tokens["alice"])
    assert actor.default_project_id == _pid(ctx, "vision") and _pid(ctx, "default") not in actor.project_roles
    assert jobs.submit_job(ctx, actor, {"name": "x", "command": ["true"]}).project == "vision"
    # removing a non-default membership leaves the default alone
    projects.set_member(ctx, admin, "default", "alice", "viewer")
    projects.remove_member(ctx, admin, "default", "alice")
    assert identity.authenticate(ctx, world.tokens["alice"]).default_project_id == _pid(ctx, "vision")


def test_user_without_default_gets_one(world):
    ctx, admin = world.ctx, world.admin
    projects.create_project(ctx, admin, "vision")
    with ctx.session() as s:
        bob = s.exec(select(User).where(User.username == "bob")).one()
        bob.default_project_id = None
        s.add(bob)
    m = projects.set_member(ctx, admin, "vision", "bob", "member")
    assert m.default is True


def test_expired_flag(world):
    ctx = world.ctx
    projects.create_project(ctx, world.admin, "soon", expires_at=(utcnow() + timedelta(hours=1)).isoformat())
    from crater_app.db.models import Project

    with ctx.session() as s:
        p = s.exec(select(Project).where(Project.name == "soon")).one()
        p.expires_at = utcnow() - timedelta(seconds=1)
        s.add(p)
    assert projects.get_project(ctx, world.admin, "soon").expired is True


def test_a_project_admin_cannot_leave_the_project_without_admin(world):
    ctx, admin = world.ctx, world.admin
    projects.create_project(ctx, admin, "vision")
    projects.set_member(ctx, admin, "vision", "alice", "admin")
    projects.set_member(ctx, admin, "vision", "bob", "member")
    alice = identity.authenticate(ctx, world.tokens["alice"])
    before = counts(ctx)
    for attempt in (lambda: projects.set_member(ctx, alice, "vision", "alice", "member"),
                    lambda: projects.remove_member(ctx, alice, "vision", "alice")):
        with pytest.raises(Conflict) as err:
            attempt()
        assert err.value.field == "role" and "no admin left" in str(err.value)
    assert counts(ctx) == before
    assert projects.get_project(ctx, alice, "vision").role == "admin"
    # with a second admin she may step down; platform admins may always change roles
    projects.set_member(ctx, alice, "vision", "bob", "admin")
    projects.set_member(ctx, alice, "vision", "alice", "member")
    projects.set_member(ctx, admin, "vision", "bob", "viewer")
    assert [(m.username, m.role) for m in projects.get_project(ctx, admin, "vision").members] == [
        ("alice", "member"), ("bob", "viewer")]


def test_submitting_to_a_project_one_cannot_see_reads_as_unknown(world):
    ctx, admin = world.ctx, world.admin
    projects.create_project(ctx, admin, "secret")
    with pytest.raises(NotFound) as hidden:
        jobs.submit_job(ctx, world.alice, {"name": "x", "project": "secret", "command": ["true"]})
    with pytest.raises(NotFound) as unknown:
        jobs.submit_job(ctx, world.alice, {"name": "x", "project": "no-such", "command": ["true"]})
    assert hidden.value.field == unknown.value.field == "project"
    assert str(hidden.value) == str(unknown.value).replace("no-such", "secret")
