"""A pending sign-up is no member of its default project until an admin activates it; an account an admin creates
is a member at once."""

from __future__ import annotations

from sqlmodel import select

from crater_app.db.models import OperationLog
from tests.conftest import USER_PASSWORD


def _default_members(api) -> list[str]:
    r = api.client.get("/api/v1/projects/default", headers=api.auth("admin"))
    assert r.status_code == 200, r.text
    return [m["username"] for m in r.json()["members"]]


def test_pending_signup_joins_default_project_only_when_activated(api):
    api.world.ctx.settings = api.world.ctx.settings.model_copy(update={"signup_enabled": True})
    before = _default_members(api)
    for name in ("newbie", "spammer"):
        r = api.client.post("/api/v1/auth/signup", json={"username": name, "password": USER_PASSWORD})
        assert r.status_code == 201, r.text
        assert r.json()["default_project"] == "default"
    assert _default_members(api) == before  # pending accounts do not inflate the member list
    r = api.client.patch("/api/v1/users/newbie", json={"status": "active"}, headers=api.auth("admin"))
    assert r.status_code == 200, r.text
    r = api.client.patch("/api/v1/users/spammer", json={"status": "disabled"}, headers=api.auth("admin"))
    assert r.status_code == 200, r.text
    members = _default_members(api)
    assert "newbie" in members and "spammer" not in members and len(members) == len(before) + 1
    # the activated account can work in its default project
    token = api.client.post("/api/v1/auth/token", json={"username": "newbie", "password": USER_PASSWORD})
    assert token.status_code == 200
    headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
    r = api.client.post("/api/v1/jobs", json={"name": "first", "command": ["true"]}, headers=headers)
    assert r.status_code == 201, r.text
    # toggling the status again does not add a second membership or fail
    api.client.patch("/api/v1/users/newbie", json={"status": "disabled"}, headers=api.auth("admin"))
    r = api.client.patch("/api/v1/users/newbie", json={"status": "active"}, headers=api.auth("admin"))
    assert r.status_code == 200 and _default_members(api).count("newbie") == 1
    with api.world.ctx.session(read_only=True) as s:
        details = [row.details for row in s.exec(select(OperationLog).where(
            OperationLog.target == "newbie", OperationLog.action == "user:update"))]
    assert any("joined its default project" in d for d in details)


def test_admin_created_account_is_a_member_at_once(api):
    r = api.client.post("/api/v1/users", json={"username": "carol", "password": USER_PASSWORD},
                        headers=api.auth("admin"))
    assert r.status_code == 201, r.text
    assert "carol" in _default_members(api)
