"""services.tokens: personal API tokens (shown once, hashed, expiry limits, revocation, last use)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import select

from crater_app.auth.tokens import hash_token
from crater_app.db.models import ApiToken, OperationLog
from crater_app.db.types import utcnow
from crater_app.domain.errors import Conflict, InvalidInput, NotFound, Unauthenticated
from crater_app.services import identity, tokens
from tests.helpers import counts


def test_create_use_list_revoke(world):
    ctx = world.ctx
    created = tokens.create_token(ctx, world.alice, "laptop", 30)
    assert created.access_token.startswith("crt_") and created.name == "laptop" and created.user == "alice"
    assert timedelta(days=29, hours=23) < created.expires_at - utcnow() <= timedelta(days=30)
    with ctx.session() as s:
        row = s.get(ApiToken, created.id)
    assert row.kind == "personal" and row.token_hash == hash_token(created.access_token)
    assert created.access_token not in repr(row.model_dump())
    actor = identity.authenticate(ctx, created.access_token)
    assert actor.username == "alice"
    listed = tokens.list_tokens(ctx, world.alice)
    assert [(t.id, t.name, t.revoked) for t in listed] == [(created.id, "laptop", False)]
    assert listed[0].last_used_at is not None
    assert "access_token" not in listed[0].model_dump()
    assert tokens.list_tokens(ctx, world.bob) == []
    # others cannot revoke it (not found); the owner can, at once (cache dropped); twice changes nothing
    with pytest.raises(NotFound):
        tokens.revoke_token(ctx, world.bob, created.id)
    revoked = tokens.revoke_token(ctx, world.alice, created.id)
    assert revoked.revoked and revoked.revoked_at is not None
    with pytest.raises(Unauthenticated):
        identity.authenticate(ctx, created.access_token)
    n = len(_rows(ctx, "token:revoke"))
    tokens.revoke_token(ctx, world.alice, created.id)
    assert len(_rows(ctx, "token:revoke")) == n == 1
    assert _rows(ctx, "token:create")[-1].target == f"alice/{created.id}"


def _rows(ctx, action):
    with ctx.session() as s:
        return list(s.exec(select(OperationLog).where(OperationLog.action == action)))


def test_admin_revokes_any_and_session_tokens_are_not_addressable(world):
    ctx = world.ctx
    t = tokens.create_token(ctx, world.bob, "ci")
    assert tokens.revoke_token(ctx, world.admin, t.id).revoked
    with ctx.session() as s:
        session_id = s.exec(select(ApiToken.id).where(ApiToken.kind == "session")).first()
    with pytest.raises(NotFound):
        tokens.revoke_token(ctx, world.admin, session_id)
    for bad in (0, -1, 2**63, 999999):
        with pytest.raises(NotFound):
            tokens.revoke_token(ctx, world.admin, bad)


@pytest.mark.parametrize("name, days, field", [
    ("", 30, "name"), ("   ", 30, "name"), ("x" * 65, 30, "name"), (None, 30, "name"), (5, 30, "name"),
    ("ok", 0, "expires_in_days"), ("ok", 366, "expires_in_days"), ("ok", True, "expires_in_days"),
    ("ok", 1.5, "expires_in_days"), ("ok", "30", "expires_in_days"), ("ok", None, "expires_in_days"),
    ("\u202et\n", 30, "name"), ("ci\u2066x", 30, "name"),
])
def test_bad_input_writes_nothing(world, name, days, field):
    before = counts(world.ctx)
    with pytest.raises(InvalidInput) as err:
        tokens.create_token(world.ctx, world.alice, name, days)
    assert err.value.field == field
    if field == "expires_in_days":
        assert "1 to 365" in err.value.message
    if name in ("\u202et\n", "ci\u2066x"):  # a bidirectional control: named, with its place
        assert err.value.code == "name.text_bidi" and "U+20" in err.value.message
    assert counts(world.ctx) == before


@pytest.mark.both_databases
def test_duplicate_name_and_limit(world):
    ctx = world.ctx
    first = tokens.create_token(ctx, world.alice, "dup")
    with pytest.raises(Conflict) as err:
        tokens.create_token(ctx, world.alice, "dup")
    assert err.value.field == "name"
    tokens.revoke_token(ctx, world.alice, first.id)
    tokens.create_token(ctx, world.alice, "dup")  # the name is free again
    for i in range(tokens.MAX_ACTIVE_TOKENS - 1):
        tokens.create_token(ctx, world.alice, f"t{i}")
    assert tokens.count_active(ctx, world.alice.user_id) == tokens.MAX_ACTIVE_TOKENS
    with pytest.raises(Conflict) as err:
        tokens.create_token(ctx, world.alice, "one-more")
    assert "limit is 20" in err.value.message


def test_expired_personal_token_is_refused(world):
    ctx = world.ctx
    t = tokens.create_token(ctx, world.alice, "old", 1)
    with ctx.session() as s:
        row = s.get(ApiToken, t.id)
        row.expires_at = utcnow() - timedelta(seconds=1)
        s.add(row)
    with pytest.raises(Unauthenticated):
        identity.authenticate(ctx, t.access_token)
