"""services.users (accounts), services.sign_in (password check, login tokens, one-time codes) and
services.identity (bearer token -> actor)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import select

from crater_app.auth.tokens import hash_token
from crater_app.db.models import ApiToken, OperationLog, ProjectMember, User
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, Unauthenticated
from crater_app.domain.times import utcnow
from crater_app.services import identity, sign_in, users
from tests.conftest import ADMIN_PASSWORD, USER_PASSWORD


def test_bootstrap_admin_is_idempotent_and_can_generate_a_password(make_ctx):
    ctx = make_ctx()
    generated = users.ensure_admin(ctx, None)
    assert generated and len(generated) >= 12
    assert users.ensure_admin(ctx, "other-password") is None
    assert sign_in.login(ctx, "admin", generated).access_token.startswith("crt_")
    with pytest.raises(Unauthenticated):
        sign_in.login(ctx, "admin", "other-password")


def test_passwords_and_tokens_are_stored_hashed(world):
    ctx = world.ctx
    with ctx.session() as s:
        alice = s.exec(select(User).where(User.username == "alice")).one()
        tokens = s.exec(select(ApiToken).where(ApiToken.user_id == alice.id)).all()
        member = s.get(ProjectMember, (alice.default_project_id, alice.id))
    assert alice.password_hash.startswith("$argon2id$") and USER_PASSWORD not in alice.password_hash
    assert [(t.token_hash, t.kind) for t in tokens] == [(hash_token(world.tokens["alice"]), "session")]
    assert world.tokens["alice"] not in tokens[0].token_hash
    assert tokens[0].expires_at > utcnow() and member.role == "member"


def test_login_errors(world):
    ctx = world.ctx
    with pytest.raises(Unauthenticated) as wrong:
        sign_in.login(ctx, "alice", "not-the-password")
    with pytest.raises(Unauthenticated) as unknown:
        sign_in.login(ctx, "nobody", "not-the-password")
    assert wrong.value.code == unknown.value.code == "auth.wrong_credentials", "user names cannot be probed"
    assert wrong.value.message_in("zh-CN") == "登录失败：用户名或密码错误。"
    for username, password, field in ((None, "x", "username"), ("alice", "", "password"), ("alice", 5, "password"),
                                      ("a" * 1025, "x", "username")):
        with pytest.raises(InvalidInput) as info:
            sign_in.login(ctx, username, password)
        assert info.value.field == field


def test_sign_in_compares_name_keys(world):
    """``ALICE`` and a full-width ``ａｌｉｃｅ`` are alice's name: the key decides (NFKC case folding)."""
    for typed in ("ALICE", "Alice", "\uff41\uff4c\uff49\uff43\uff45"):
        token = sign_in.login(world.ctx, typed, USER_PASSWORD).access_token
        assert identity.authenticate(world.ctx, token).username == "alice"


def test_unknown_users_cost_a_hash_check_too(world, monkeypatch):
    """Same work for a wrong password and an unknown name: response times do not reveal user names."""
    checked = []
    real = sign_in.verify_password
    monkeypatch.setattr(sign_in, "verify_password", lambda h, p: checked.append(h) or real(h, p))
    for name in ("alice", "nobody"):
        with pytest.raises(Unauthenticated):
            sign_in.login(world.ctx, name, "wrong-password")
    assert len(checked) == 2 and all(h.startswith("$argon2id$") for h in checked)


def test_authenticate_rejects_missing_unknown_expired_revoked_and_disabled(world):
    ctx = world.ctx
    with pytest.raises(Unauthenticated) as info:
        identity.authenticate(ctx, None)
    assert info.value.code == "auth.token_missing"
    with pytest.raises(Unauthenticated):
        identity.authenticate(ctx, "crt_garbage")
    token = sign_in.login(ctx, "bob", USER_PASSWORD).access_token
    assert identity.authenticate(ctx, token).username == "bob"
    sign_in.logout(ctx, token)
    with pytest.raises(Unauthenticated, match="revoked"):
        identity.authenticate(ctx, token)

    token = sign_in.login(ctx, "bob", USER_PASSWORD).access_token
    with ctx.session() as s:
        row = s.exec(select(ApiToken).where(ApiToken.token_hash == hash_token(token))).one()
        row.expires_at = utcnow() - timedelta(seconds=1)
        s.add(row)
    ctx.identities.clear()
    with pytest.raises(Unauthenticated, match="expired"):
        identity.authenticate(ctx, token)

    with ctx.session() as s:
        bob = s.exec(select(User).where(User.username == "bob")).one()
        bob.status = "disabled"
        s.add(bob)
    ctx.identities.clear()
    with pytest.raises(Unauthenticated) as info:
        identity.authenticate(ctx, world.tokens["bob"])
    assert info.value.code == "auth.account_inactive"
    with pytest.raises(sign_in.AccountNotActive, match="disabled") as info:
        sign_in.login(ctx, "bob", USER_PASSWORD)
    assert (info.value.code, info.value.status) == ("auth.account_disabled", "disabled")


def test_identities_are_cached_per_context(world, make_ctx):
    """A context's cache serves a token for 5 s without the database; another context (process) has its own."""
    ctx = world.ctx
    token = world.tokens["alice"]
    identity.authenticate(ctx, token)
    assert identity.cached_actor(ctx, token).username == "alice"
    other = make_ctx(data_dir=ctx.settings.data_dir / "other")
    assert identity.cached_actor(other, token) is None
    assert identity.authenticate(other, token).username == "alice"
    identity.forget_user(ctx, world.alice.user_id)
    assert identity.cached_actor(ctx, token) is None and identity.cached_actor(other, token) is not None


def test_actor_carries_roles(world):
    assert world.admin.is_admin and world.admin.username == "admin"
    assert world.alice.role == "user" and world.alice.project_roles == {world.alice.default_project_id: "member"}
    assert world.guest.role == "guest"


@pytest.mark.both_databases
def test_create_user_rules(world):
    ctx = world.ctx
    with pytest.raises(Forbidden):
        users.create_user(ctx, world.alice, "eve", USER_PASSWORD)
    for taken in ("alice", "Alice", "ALICE"):
        with pytest.raises(Conflict) as info:
            users.create_user(ctx, world.admin, taken, USER_PASSWORD)
        assert (info.value.code, info.value.field) == ("account.exists", "username")
    for kwargs, field in (
        ({"username": "-eve"}, "username"), ({"username": "e v"}, "username"), ({"username": "<script>"}, "username"),
        ({"username": "system"}, "username"), ({"username": "e" * 65}, "username"),
        ({"password": "short"}, "password"), ({"password": "x" * 1025}, "password"), ({"password": None}, "password"),
        ({"role": "root"}, "role"), ({"display_name": "x" * 129}, "display_name"), ({"email": "not-an-address"}, "email"),
        ({"display_name": "\u202eevil"}, "display_name"), ({"display_name": "Eve \u2067E.\u2069"}, "display_name"),
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
        rows = {(o.actor, o.action, o.target): o for o in s.exec(select(OperationLog).order_by(OperationLog.id))}
    assert rows[("admin", "user:create", "eve")].details == "Created with role user, status active."
    assert rows[("alice", "auth:login", "alice")].code == "auth.token_login"
    assert users.me(ctx, world.alice).username == "alice"
    assert sign_in.login(ctx, "admin", ADMIN_PASSWORD).token_type == "bearer"


@pytest.mark.both_databases
def test_names_whose_key_outgrows_the_column_are_refused_on_both_databases(world):
    """NFKC writes U+FDFA as 18 letters: 15 of them make a 270-character key, over ``users.username_key`` (256).
    PostgreSQL failed the insert (a 500) while SQLite stored it; both refuse it now, and nothing is written."""
    ctx = world.ctx
    before = len(users.list_users(ctx, world.admin))
    with pytest.raises(InvalidInput) as info:
        users.create_user(ctx, world.admin, "\ufdfa" * 15, USER_PASSWORD)
    assert (info.value.code, info.value.field, info.value.params["length"], info.value.params["max"]) == (
        "name.username_key_too_long", "username", 270, 256)
    ctx.settings = ctx.settings.model_copy(update={"signup_enabled": True})
    with pytest.raises(InvalidInput):
        users.signup(ctx, "\ufdfa" * 64, USER_PASSWORD)
    assert len(users.list_users(ctx, world.admin)) == before
    longest = users.create_user(ctx, world.admin, "\ufdfa" * 14, USER_PASSWORD)  # a 252-character key fits
    assert users.get_user(ctx, world.admin, "\ufdfa" * 14).username == longest.username


@pytest.mark.both_databases
@pytest.mark.parametrize("lookalike", ["\u0430lice", "al\u0131ce", "AL\u0130CE", "\u0391LICE", "\u0430l\u0456\u0441\u0435"])
def test_a_name_that_looks_like_an_account_is_refused(world, lookalike):
    """аlice (Cyrillic а), alıce (dotless ı), ALİCE (dotted İ), ΑLICE (Greek Α): distinct keys that read as 'alice'."""
    ctx = world.ctx
    before = len(users.list_users(ctx, world.admin))
    with pytest.raises(Conflict) as info:
        users.create_user(ctx, world.admin, lookalike, USER_PASSWORD)
    assert (info.value.code, info.value.field, info.value.params) == (
        "account.confusable", "username", {"username": lookalike, "existing": "alice"})
    assert "alice" in info.value.message and "alice" in info.value.message_in("zh-CN")
    assert len(users.list_users(ctx, world.admin)) == before


@pytest.mark.both_databases
def test_names_that_differ_visibly_are_distinct_accounts(world):
    ctx = world.ctx
    for name in ("\u00e9lodie", "elodie", "alice2", "\u0430\u043d\u043d\u0430"):  # élodie, elodie, alice2, анна
        assert users.create_user(ctx, world.admin, name, USER_PASSWORD).username == name
    with pytest.raises(Conflict) as info:  # анна's look-alike in Latin and Cyrillic mixed: 'aнна' (Latin a)
        users.create_user(ctx, world.admin, "a\u043d\u043d\u0430", USER_PASSWORD)
    assert info.value.params["existing"] == "\u0430\u043d\u043d\u0430"


@pytest.mark.parametrize("name", ["\u5f20\u4e09", "\u00c9lodie", "_alice", "alice@example.org", "Zhang.San"])
def test_names_people_have_are_accounts(world, name):
    created = users.create_user(world.ctx, world.admin, name, USER_PASSWORD)
    assert created.username == name
    assert users.get_user(world.ctx, world.admin, name.upper()).username == name
    token = sign_in.login(world.ctx, name, USER_PASSWORD).access_token
    assert identity.authenticate(world.ctx, token).username == name
    changed = users.update_user(world.ctx, world.admin, name.lower(), {"max_sessions": 2})
    assert changed.max_sessions == 2


def test_concurrent_password_checks_are_bounded(world, monkeypatch):
    """Each argon2 check holds 64 MiB: 40 sign-ins at once took the server from 0.3 to 2.5 GB. Past the slots, a
    sign-in waits a little, then is answered 'busy' (429) rather than queueing without bound."""
    import threading

    from crater_app.domain.errors import Busy

    slots = threading.BoundedSemaphore(1)
    monkeypatch.setattr(sign_in, "_LOGIN_SLOTS", slots)
    monkeypatch.setattr(sign_in, "_LOGIN_WAIT_S", 0.05)
    slots.acquire()
    try:
        with pytest.raises(Busy) as info:
            sign_in.login(world.ctx, "alice", USER_PASSWORD)
        assert info.value.http_status == 429 and info.value.code == "auth.busy"
    finally:
        slots.release()
    assert sign_in.login(world.ctx, "alice", USER_PASSWORD).access_token
    with pytest.raises(Unauthenticated):
        sign_in.login(world.ctx, "alice", "wrong-password")
    assert slots.acquire(blocking=False), "a failed check gives its slot back"
    slots.release()


@pytest.mark.both_databases
@pytest.mark.parametrize(("username", "password", "field"), [("alice\x00", USER_PASSWORD, "username"),
                                                             ("alice", "\ud800" + USER_PASSWORD, "password")])
def test_sign_in_with_text_no_database_can_compare_is_invalid(world, username, password, field):
    """NUL in a PostgreSQL query parameter raised ValueError (a 500); a lone surrogate failed in argon2."""
    with pytest.raises(InvalidInput) as info:
        sign_in.login(world.ctx, username, password)
    assert info.value.field == field


def test_update_user_logs_its_changes(world):
    ctx = world.ctx
    users.update_user(ctx, world.admin, "Alice", {"role": "guest", "max_runtime": "2h"})
    users.update_user(ctx, world.admin, "alice", {"role": "guest"})
    with ctx.session() as s:
        rows = s.exec(select(OperationLog).where(OperationLog.action == "user:update")
                      .order_by(OperationLog.id)).all()
    assert [(r.target, r.code) for r in rows] == [("alice", "account.updated"), ("alice", "account.unchanged")]
    assert rows[0].args == {"changes": ["role: user -> guest", "max_runtime_s: none -> 7200"]}
    assert rows[0].details == "Changed role: user -> guest and max_runtime_s: none -> 7200."
