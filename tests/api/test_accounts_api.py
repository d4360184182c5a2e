"""Self sign-up (POST /api/v1/auth/signup) and account administration (GET/PATCH /api/v1/users/{username})."""

from __future__ import annotations

import pytest
from sqlalchemy import func
from sqlmodel import select

from crater_app.db.models import ApiToken, OperationLog, User
from crater_app.domain.errors import Conflict
from crater_app.domain.policy import Actor
from crater_app.services import identity, sign_in, tokens, users
from tests.api.conftest import assert_error
from tests.conftest import USER_PASSWORD


def table_counts(ctx) -> dict:
    with ctx.session(read_only=True) as s:
        return {m.__name__: s.exec(select(func.count()).select_from(m)).one() for m in (User, ApiToken, OperationLog)}


def user_row(ctx, name: str) -> User:
    with ctx.session(read_only=True) as s:
        return s.exec(select(User).where(User.username == name)).one()


@pytest.fixture
def signup_on(api):
    api.world.ctx.settings = api.world.ctx.settings.model_copy(update={"signup_enabled": True})
    return api


def test_signup_off_is_403_and_writes_nothing(api):
    before = table_counts(api.world.ctx)
    r = api.client.post("/api/v1/auth/signup", json={"username": "newbie", "password": USER_PASSWORD})
    assert_error(r, 403, "forbidden", None, "sign-up is turned off")
    assert table_counts(api.world.ctx) == before


def test_signup_pending_until_admin_activates(signup_on):
    api = signup_on
    r = api.client.post("/api/v1/auth/signup", json={"username": "newbie", "password": USER_PASSWORD,
                                                     "email": "n@example.org", "display_name": "New Bie"})
    assert r.status_code == 201, r.text
    assert r.json()["status"] == "pending" and r.json()["role"] == "user"
    r = api.client.post("/api/v1/auth/token", json={"username": "newbie", "password": USER_PASSWORD})
    assert_error(r, 401, "unauthenticated", None, "waiting for an administrator's approval")
    r = api.client.post("/api/v1/auth/token", json={"username": "newbie", "password": "wrong-password"})
    assert_error(r, 401, "unauthenticated", None, "wrong user name or password")
    r = api.client.patch("/api/v1/users/newbie", json={"status": "active"}, headers=api.auth("admin"))
    assert r.status_code == 200 and r.json()["status"] == "active"
    assert api.client.post("/api/v1/auth/token", json={"username": "newbie", "password": USER_PASSWORD}).status_code == 200
    with api.world.ctx.session(read_only=True) as s:
        actions = [row.action for row in s.exec(select(OperationLog).where(OperationLog.target == "newbie"))]
    assert "user:signup" in actions and "user:update" in actions


@pytest.mark.parametrize("body,field", [
    ({"password": USER_PASSWORD}, "username"),
    ({"username": "Bad Name", "password": USER_PASSWORD}, "username"),
    ({"username": "-bad", "password": USER_PASSWORD}, "username"),
    ({"username": "ok-name", "password": "short"}, "password"),
    ({"username": "ok-name", "password": USER_PASSWORD, "email": "not-an-address"}, "email"),
    ({"username": "ok-name", "password": USER_PASSWORD, "display_name": "x" * 129}, "display_name"),
    ({"username": "ok-name", "password": USER_PASSWORD, "role": "admin"}, "role"),
    ({"username": "alice", "password": USER_PASSWORD}, "username"),
    ({"username": "ALICE", "password": USER_PASSWORD}, "username"),  # the same name after case folding
])
def test_signup_bad_input(signup_on, body, field):
    before = table_counts(signup_on.world.ctx)
    r = signup_on.client.post("/api/v1/auth/signup", json=body)
    assert r.status_code in (409, 422), r.text
    assert r.json()["error"]["field"] == field
    assert table_counts(signup_on.world.ctx) == before


def test_get_user(api):
    r = api.client.get("/api/v1/users/alice", headers=api.auth("admin"))
    assert r.status_code == 200
    body = r.json()
    assert body["username"] == "alice" and body["sign_in"] == "password" and body["max_runtime_s"] is None
    assert_error(api.client.get("/api/v1/users/nobody", headers=api.auth("admin")), 404, "not_found", "username")


def test_patch_limits_role_and_clear(api):
    ctx = api.world.ctx
    r = api.client.patch("/api/v1/users/alice", headers=api.auth("admin"), json={
        "max_sessions": 2, "max_accelerators_per_job": 4, "max_runtime": "12h", "role": "guest"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["max_sessions"], body["max_accelerators_per_job"], body["max_runtime_s"], body["role"]) == \
        (2, 4, 43200, "guest")
    assert identity.authenticate(ctx, api.world.tokens["alice"]).role == "guest"  # the cache was dropped
    r = api.client.patch("/api/v1/users/alice", headers=api.auth("admin"), json={"max_runtime": None,
                                                                                "max_sessions": None})
    assert r.json()["max_runtime_s"] is None and r.json()["max_sessions"] is None
    assert r.json()["max_accelerators_per_job"] == 4
    r = api.client.patch("/api/v1/users/alice", headers=api.auth("admin"), json={"max_runtime": 3600})
    assert r.json()["max_runtime_s"] == 3600


def test_disable_revokes_tokens(api):
    ctx = api.world.ctx
    alice = identity.authenticate(ctx, api.world.tokens["alice"])
    personal = tokens.create_token(ctx, alice, "cli").access_token
    assert api.client.get("/api/v1/me", headers={"Authorization": f"Bearer {personal}"}).status_code == 200
    r = api.client.patch("/api/v1/users/alice", headers=api.auth("admin"), json={"status": "disabled"})
    assert r.status_code == 200 and r.json()["status"] == "disabled"
    for token in (api.world.tokens["alice"], personal):
        assert_error(api.client.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"}), 401)
    with ctx.session(read_only=True) as s:
        live = s.exec(select(ApiToken).where(ApiToken.user_id == alice.user_id, ApiToken.revoked_at.is_(None))).all()
    assert live == []
    r = api.client.post("/api/v1/auth/token", json={"username": "alice", "password": USER_PASSWORD})
    assert_error(r, 401, "unauthenticated", None, "disabled")
    # re-activating does not bring the old tokens back
    api.client.patch("/api/v1/users/alice", headers=api.auth("admin"), json={"status": "active"})
    assert_error(api.client.get("/api/v1/me", headers={"Authorization": f"Bearer {personal}"}), 401)


def test_admin_cannot_demote_or_disable_self_nor_last_admin(api):
    ctx = api.world.ctx
    before = table_counts(ctx)
    for body, field in (({"role": "user"}, "role"), ({"status": "disabled"}, "status")):
        r = api.client.patch("/api/v1/users/admin", headers=api.auth("admin"), json=body)
        assert_error(r, 403, "forbidden", field, "your own account")
    assert table_counts(ctx) == before
    # own limits are fine
    assert api.client.patch("/api/v1/users/admin", headers=api.auth("admin"), json={"max_sessions": 3}).status_code == 200
    # a second admin cannot remove the last other one... but can when two stay
    users.update_user(ctx, api.world.admin, "bob", {"role": "admin"})
    bob = sign_in.login(ctx, "bob", USER_PASSWORD).access_token
    r = api.client.patch("/api/v1/users/admin", headers={"Authorization": f"Bearer {bob}"}, json={"role": "user"})
    assert r.status_code == 200
    before = table_counts(ctx)
    r = api.client.patch("/api/v1/users/bob", headers={"Authorization": f"Bearer {bob}"}, json={"status": "disabled"})
    assert_error(r, 403, "forbidden", "status")
    assert user_row(ctx, "bob").role == "admin"
    # bob is now the last active admin: even an admin identity other than bob (a system actor) cannot demote him
    with pytest.raises(Conflict) as exc:
        users.update_user(ctx, Actor(0, "system-admin", "admin"), "bob", {"role": "user"})
    assert "last active platform admin" in exc.value.message and exc.value.field == "role"
    assert table_counts(ctx) == before


@pytest.mark.parametrize("body,field", [
    ({"role": "root"}, "role"), ({"status": "gone"}, "status"), ({"max_sessions": -1}, "max_sessions"),
    ({"max_sessions": 1001}, "max_sessions"), ({"max_sessions": "2"}, "max_sessions"),
    ({"max_accelerators_per_job": 2000}, "max_accelerators_per_job"), ({"max_accelerators_per_job": True},
                                                                       "max_accelerators_per_job"),
    ({"max_runtime": "forever"}, "max_runtime"), ({"max_runtime": 0}, "max_runtime"),
    ({"max_runtime": "31d"}, "max_runtime"), ({"password": "x"}, "password"), ({}, None),
    ({"role": "guest", "max_sessions": -5}, "max_sessions"),
])
def test_patch_bad_input_names_field_and_writes_nothing(api, body, field):
    ctx = api.world.ctx
    before, row = table_counts(ctx), user_row(ctx, "alice")
    r = api.client.patch("/api/v1/users/alice", headers=api.auth("admin"), json=body)
    assert_error(r, 422, "invalid", field)
    assert table_counts(ctx) == before and user_row(ctx, "alice") == row


def test_patch_body_not_object_and_unknown_user(api):
    assert_error(api.client.patch("/api/v1/users/alice", headers=api.auth("admin"), json=["role"]), 422, "invalid")
    assert_error(api.client.patch("/api/v1/users/nobody", headers=api.auth("admin"), json={"role": "user"}), 404,
                 "not_found", "username")


def test_signup_undecodable_and_odd_bodies(signup_on):
    ctx = signup_on.world.ctx
    before = table_counts(ctx)
    client = signup_on.client
    assert_error(client.post("/api/v1/auth/signup", content=b"{bad", headers={"Content-Type": "application/json"}),
                 422, "invalid", None, "not valid JSON")
    assert_error(client.post("/api/v1/auth/signup", json=["newbie"]), 422, "invalid")
    assert_error(client.post("/api/v1/auth/signup", json={"username": "newbie", "password": USER_PASSWORD,
                                                          "display_name": "a\u0000b"}), 422, "invalid", "display_name")
    assert_error(client.post("/api/v1/auth/signup", json={"username": "newbie", "password": 12345678}), 422,
                 "invalid", "password")
    assert table_counts(ctx) == before
    r = client.post("/api/v1/auth/signup", content=f"username: yaml-user\npassword: {USER_PASSWORD}\n",
                    headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201 and r.json()["status"] == "pending"
