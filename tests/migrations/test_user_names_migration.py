"""Accounts made before migration 0005 (user names were DNS-1123 labels) keep working after it: their key and
skeleton are filled in, they sign in by any spelling of their name, their login tokens still work, a new name that
folds to theirs or looks like it is refused, and Unicode names can join them (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from crater_app.auth.passwords import hash_password
from crater_app.auth.tokens import new_token
from crater_app.db.engine import make_engine
from crater_app.db.migrate import upgrade
from crater_app.domain.errors import Conflict
from crater_app.services import identity, sign_in, users
from crater_app.services.context import ServiceContext
from crater_app.settings import Settings
from tests.conftest import USER_PASSWORD, gpu_devices
from tests.fakes import FakeBackend


@pytest.fixture
def old_accounts(empty_db_url, tmp_path):
    """A database at revision 0004 with two accounts and a login token of one, then migrated to head."""
    upgrade(empty_db_url, "0004")
    secret, digest = new_token()
    engine = make_engine(empty_db_url)
    try:
        with engine.begin() as conn:  # no explicit ids: PostgreSQL's sequences must stay in step
            conn.execute(text("INSERT INTO projects (name, display_name, description, created_at, guarantee, "
                              "deserved, capability, member_allowance_points) VALUES ('default', '', '', "
                              "CURRENT_TIMESTAMP, '{}', '{}', '{}', 0)"))
            project = conn.execute(text("SELECT id FROM projects")).scalar_one()
            for name, role in (("admin", "admin"), ("zhang-san", "user")):
                conn.execute(text(
                    "INSERT INTO users (username, display_name, email, password_hash, role, status, created_at, "
                    "default_project_id, extra_points) VALUES (:name, '', '', :hash, :role, 'active', "
                    "CURRENT_TIMESTAMP, :project, 0)"), {"name": name, "hash": hash_password(USER_PASSWORD),
                                                          "role": role, "project": project})
                uid = conn.execute(text("SELECT id FROM users WHERE username = :name"), {"name": name}).scalar_one()
                conn.execute(text("INSERT INTO project_members (project_id, user_id, role, share) VALUES "
                                  "(:project, :id, :role, '{}')"),
                             {"project": project, "id": uid, "role": "admin" if role == "admin" else "member"})
            conn.execute(text("INSERT INTO api_tokens (user_id, token_hash, kind, name, created_at) VALUES "
                              "(:id, :digest, 'session', '', CURRENT_TIMESTAMP)"), {"id": uid, "digest": digest})
    finally:
        engine.dispose()
    upgrade(empty_db_url)
    settings = Settings(data_dir=tmp_path / "data", database_url=empty_db_url)
    ctx = ServiceContext(engine=make_engine(empty_db_url), backend=FakeBackend(gpu_devices(0)), settings=settings)
    yield ctx, secret
    ctx.engine.dispose()


def test_old_accounts_keep_working(old_accounts):
    ctx, old_token = old_accounts
    assert identity.authenticate(ctx, old_token).username == "zhang-san"
    for typed in ("zhang-san", "ZHANG-SAN", "Zhang-San"):
        token = sign_in.login(ctx, typed, USER_PASSWORD).access_token
        assert identity.authenticate(ctx, token).username == "zhang-san"
    admin = identity.authenticate(ctx, sign_in.login(ctx, "admin", USER_PASSWORD).access_token)
    with pytest.raises(Conflict):
        users.create_user(ctx, admin, "Zhang-San", USER_PASSWORD)
    with pytest.raises(Conflict) as info:  # a Cyrillic а: the old account's skeleton was filled in
        users.create_user(ctx, admin, "zh\u0430ng-san", USER_PASSWORD)
    assert (info.value.code, info.value.params["existing"]) == ("account.confusable", "zhang-san")
    assert users.create_user(ctx, admin, "\u5f20\u4e09", USER_PASSWORD).username == "\u5f20\u4e09"
    assert users.ensure_admin(ctx, None) is None, "the existing admin is found by its key"
    assert [u.username for u in users.list_users(ctx, admin)] == ["admin", "zhang-san", "\u5f20\u4e09"]
