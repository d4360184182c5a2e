"""services.users: bootstrap admin, accounts, login tokens and token -> actor resolution."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import select

from crater_app.auth.tokens import hash_token
from crater_app.db.models import ApiToken, OperationLog, ProjectMember, User
from crater_app.db.types import utcnow
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, Unauthenticated
from crater_app.services import users
from tests.conftest import ADMIN_PASSWORD, USER_PASSWORD


def test_bootstrap_admin_is_idempotent_and_can_generate_a_password(make_ctx):
    ctx = make_ctx()
    generated = users.ensure_admin(ctx, None)
    assert generated and len(generated) >= 12
    assert users.ensure_admin(ctx, "other-password") is None
    assert users.login(ctx, "admin", generated).access_token.startswith("crt_")
    with pytest.raises(Unauthenticated):
        users.login(ctx, "admin", "other-password")


def test_passwords_and_tokens_are_stored_hashed(world):
    ctx = world.ctx
    with ctx.session() as s:
        alice = s.exec(select(User).where(User.username == "alice")).one()
        tokens = s.exec(select(ApiToken).where(ApiToken.user_id == alice.id)).all()
        member = s.get(ProjectMember, (alice.default_project_id, alice.id))
    assert alice.password_hash.startswith("$argon2id$") and USER_PASSWORD not in alice.password_hash
    assert [t.token_hash for t in tokens] == [hash_token(world.tokens["alice"])]
    assert world.tokens["alice"] not in tokens[0].token_hash
    assert tokens[0].expires_at > utcnow() and member.role == "member"


def test_login_errors(world):
    ctx = world.ctx
    with pytest.raises(Unauthenticated) as wrong:
        users.login(ctx, "alice", "not-the-password")
    with pytest.raises(Unauthenticated) as unknown:
        users.login(ctx, "nobody", "not-the-password")
    assert wrong.value.message == unknown.value.message, "user names cannot be probed"
    for username, password, field in ((None, "x", "username"), ("alice", "", "password"), ("alice", 5, "password"),
                                      ("a" * 1025, "x", "username")):
        with pytest.raises(InvalidInput) as info:
            users.login(ctx, username, password)
        assert info.value.field == field


def test_unknown_users_cost_a_hash_check_too(world, monkeypatch):
    """Same work for a wrong password and an unknown name: response times do not reveal user names."""
    checked = []
    real = users.verify_password
    monkeypatch.setattr(users, "verify_password", lambda h, p: checked.append(h) or real(h, p))
    for name in ("alice", "nobody"):
        with pytest.raises(Unauthenticated):
            users.login(world.ctx, name, "wrong-password")
    assert len(checked) == 2 and all(h.startswith("$argon2id$") for h in checked)


def test_authenticate_rejects_missing_unknown_expired_revoked_and_disabled(world):
    ctx = world.ctx
    with pytest.raises(Unauthenticated):
        users.authenticate(ctx, None)
    with pytest.raises(Unauthenticated):
        users.authenticate(ctx, "crt_garbage")
    token = users.login(ctx, "bob", USER_PASSWORD).access_token
    assert users.authenticate(ctx, token).username == "bob"
    users.logout(ctx, token)
    with pytest.raises(Unauthenticated, match="revoked"):
        users.authenticate(ctx, token)

    token = users.login(ctx, "bob", USER_PASSWORD).access_token
    with ctx.session() as s:
        row = s.exec(select(ApiToken).where(ApiToken.token_hash == hash_token(token))).one()
        row.expires_at = utcnow() - timedelta(seconds=1)
        s.add(row)
    users.forget_cached_identities()
    with pytest.raises(Unauthenticated, match="expired"):
        users.authenticate(ctx, token)

    with ctx.session() as s:
        bob = s.exec(select(User).where(User.username == "bob")).one()
        bob.status = "disabled"
        s.add(bob)
    users.forget_cached_identities()
    with pytest.raises(Unauthenticated):
        users.authenticate(ctx, world.tokens["bob"])
    with pytest.raises(Unauthenticated, match="disabled"):
        users.login(ctx, "bob", USER_PASSWORD)


def test_actor_carries_roles(world):
    assert world.admin.is_admin and world.admin.username == "admin"
    assert world.alice.role == "user" and world.alice.project_roles == {world.alice.default_project_id: "member"}
    assert world.guest.role == "guest"


@pytest.mark.both_databases
def test_create_user_rules(world):
    ctx = world.ctx
    with pytest.raises(Forbidden):
        users.create_user(ctx, world.alice, "eve", USER_PASSWORD)
    with pytest.raises(Conflict):
        users.create_user(ctx, world.admin, "alice", USER_PASSWORD)
    for kwargs, field in (
        ({"username": "Eve"}, "username"), ({"username": "e_v"}, "username"), ({"username": "<script>"}, "username"),
        ({"password": "short"}, "password"), ({"password": "x" * 1025}, "password"), ({"password": None}, "password"),
        ({"role": "root"}, "role"), ({"display_name": "x" * 129}, "display_name"), ({"email": "not-an-address"}, "email"),
    ):
        args = {"username": "eve", "password": USER_PASSWORD, **kwargs}
        with pytest.raises(InvalidInput) as info:
            users.create_user(ctx, world.admin, args.pop("username"), args.pop("password"), **args)
        assert info.value.field == field
    created = users.create_user(ctx, world.admin, "eve", USER_PASSWORD, "user", "Eve E.", "eve@example.com")
    assert (created.username, created.display_name, created.email, created.default_project) == (
        "eve", "Eve E.", "eve@example.com", "default")
    assert [u.username for u in users.list_users(ctx, world.admin)] == ["admin", "alice", "bob", "eve", "gus"]
    with pytest.raises(Forbidden):
        users.list_users(ctx, world.bob)
    with ctx.session() as s:
        actions = [(o.actor, o.action, o.target) for o in s.exec(select(OperationLog).order_by(OperationLog.id))]
    assert ("admin", "user:create", "eve") in actions and ("alice", "auth:login", "alice") in actions
    assert users.me(ctx, world.alice).username == "alice"
    assert users.login(ctx, "admin", ADMIN_PASSWORD).token_type == "bearer"


def test_concurrent_password_checks_are_bounded(world, monkeypatch):
    """Each argon2 check holds 64 MiB: 40 sign-ins at once took the server from 0.3 to 2.5 GB. Past the slots, a
    sign-in waits a little, then is answered 'busy' (429) rather than queueing without bound."""
    import threading

    from crater_app.domain.errors import Busy

    slots = threading.BoundedSemaphore(1)
    monkeypatch.setattr(users, "_LOGIN_SLOTS", slots)
    monkeypatch.setattr(users, "_LOGIN_WAIT_S", 0.05)
    slots.acquire()
    try:
        with pytest.raises(Busy) as info:
            users.login(world.ctx, "alice", USER_PASSWORD)
        assert info.value.http_status == 429
    finally:
        slots.release()
    assert users.login(world.ctx, "alice", USER_PASSWORD).access_token
    with pytest.raises(Unauthenticated):
        users.login(world.ctx, "alice", "wrong-password")
    assert slots.acquire(blocking=False), "a failed check gives its slot back"
    slots.release()


@pytest.mark.both_databases
@pytest.mark.parametrize(("username", "password", "field"), [("alice\x00", USER_PASSWORD, "username"),
                                                             ("alice", "\ud800" + USER_PASSWORD, "password")])
def test_sign_in_with_text_no_database_can_compare_is_invalid(world, username, password, field):
    """NUL in a PostgreSQL query parameter raised ValueError (a 500); a lone surrogate failed in argon2."""
    with pytest.raises(InvalidInput) as info:
        users.login(world.ctx, username, password)
    assert info.value.field == field
