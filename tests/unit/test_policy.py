"""domain.policy: the permission table."""

from __future__ import annotations

from crater_app.domain.policy import (
    Actor, can_cancel_job, can_manage_users, can_read_job, can_read_nodes, can_submit, readable_projects,
)

P, Q = 1, 2
admin = Actor(1, "root", "admin")
member = Actor(2, "alice", "user", {P: "member"}, P)
other = Actor(3, "bob", "user", {P: "member"}, P)
proj_admin = Actor(4, "carol", "user", {P: "admin", Q: "member"}, P)
viewer = Actor(5, "vic", "user", {P: "viewer"}, P)
guest = Actor(6, "gus", "guest", {P: "member"}, P)
outsider = Actor(7, "olga", "user", {Q: "member"}, Q)


def test_submit():
    assert can_submit(admin, P) and can_submit(admin, 99)
    assert can_submit(member, P) and can_submit(proj_admin, P) and can_submit(proj_admin, Q)
    assert not can_submit(viewer, P)
    assert not can_submit(guest, P), "a guest is read-only even as a project member"
    assert not can_submit(outsider, P)
    assert not can_submit(member, Q)


def test_read_job():
    owner, project = member.user_id, P
    assert can_read_job(member, owner, project)
    assert can_read_job(admin, owner, project)
    assert can_read_job(proj_admin, owner, project)
    assert can_read_job(viewer, owner, project)
    assert not can_read_job(other, owner, project), "members see only their own jobs"
    assert not can_read_job(outsider, owner, project)
    assert not can_read_job(guest, owner, project)


def test_cancel_job():
    owner, project = member.user_id, P
    assert can_cancel_job(member, owner, project)
    assert can_cancel_job(admin, owner, project)
    assert can_cancel_job(proj_admin, owner, project)
    assert not can_cancel_job(viewer, owner, project)
    assert not can_cancel_job(other, owner, project)
    assert not can_cancel_job(outsider, owner, project)
    assert not can_cancel_job(guest, guest.user_id, project), "a guest cannot cancel even its own job"


def test_readable_projects():
    assert readable_projects(proj_admin) == [P]
    assert readable_projects(viewer) == [P]
    assert readable_projects(member) == []
    assert readable_projects(Actor(8, "x", "user", {Q: "viewer", P: "admin"})) == [P, Q]


def test_users_and_nodes():
    assert can_manage_users(admin)
    assert not any(can_manage_users(a) for a in (member, proj_admin, viewer, guest))
    assert all(can_read_nodes(a) for a in (admin, member, viewer, guest))
    assert not can_read_nodes(Actor(9, "x", "robot"))
    assert admin.is_admin and not proj_admin.is_admin
