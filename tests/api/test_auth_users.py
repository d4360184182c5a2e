"""/api/v1/auth/token, /api/v1/me, /api/v1/users, bearer-token errors."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlmodel import select

from crater_app.auth.tokens import hash_token
from crater_app.db.models import ApiToken
from crater_app.db.types import utcnow
from tests.api.conftest import assert_error
from tests.conftest import ADMIN_PASSWORD, USER_PASSWORD
from tests.helpers import counts


def test_token_good(api):
    r = api.client.post("/api/v1/auth/token", json={"username": "alice", "password": USER_PASSWORD})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"access_token", "token_type", "expires_at"}
    assert body["token_type"] == "bearer" and body["access_token"].startswith("crt_")
    expires = datetime.fromisoformat(body["expires_at"])
    assert expires.utcoffset() == timedelta(0) and expires > utcnow()
    me = api.client.get("/api/v1/me", headers={"Authorization": f"Bearer {body['access_token']}"})
    assert me.status_code == 200 and me.json()["username"] == "alice"


def test_token_yaml_body(api):
    r = api.client.post("/api/v1/auth/token", content=f"username: bob\npassword: {USER_PASSWORD}\n",
                        headers={"Content-Type": "application/yaml"})
    assert r.status_code == 200, r.text


def test_token_wrong_password(api):
    r = api.client.post("/api/v1/auth/token", json={"username": "alice", "password": "wrong-password"})
    assert_error(r, 401, "unauthenticated", None, "wrong user name or password")
    assert r.headers["www-authenticate"] == "Bearer"
    r = api.client.post("/api/v1/auth/token", json={"username": "nobody", "password": "wrong-password"})
    assert_error(r, 401, "unauthenticated", None, "wrong user name or password")


def test_token_missing_fields_and_unknown_field(api):
    assert_error(api.client.post("/api/v1/auth/token", json={}), 422, "invalid", "username")
    assert_error(api.client.post("/api/v1/auth/token", json={"username": "alice"}), 422, "invalid", "password")
    assert_error(api.client.post("/api/v1/auth/token", json={"username": "alice", "password": 12345678}), 422,
                 "invalid", "password")
    assert_error(api.client.post("/api/v1/auth/token", json={"username": "alice", "password": USER_PASSWORD,
                                                            "remember": True}), 422, "invalid", "remember", "unknown field")
    assert_error(api.client.post("/api/v1/auth/token", json=["alice"]), 422, "invalid")
    assert_error(api.client.post("/api/v1/auth/token", content=b"{bad", headers={"Content-Type": "application/json"}),
                 422, "invalid", None, "not valid JSON")


def test_me(api):
    r = api.client.get("/api/v1/me", headers=api.auth("alice"))
    assert r.status_code == 200
    body = r.json()
    assert body["username"] == "alice" and body["role"] == "user" and body["default_project"] == "default"
    assert "password_hash" not in body and "password" not in str(body)


def test_bearer_token_errors(api):
    for headers in ({}, {"Authorization": "Bearer "}, {"Authorization": "Bearer crt_garbage"},
                    {"Authorization": "Basic YWxpY2U6cGFzc3dvcmQ="}, {"Authorization": api.world.tokens["alice"]}):
        r = api.client.get("/api/v1/me", headers=headers)
        assert_error(r, 401, "unauthenticated", None)
        assert r.headers["www-authenticate"] == "Bearer"


def test_expired_token(api):
    ctx = api.world.ctx
    token = api.world.tokens["bob"]
    with ctx.session() as s:
        row = s.exec(select(ApiToken).where(ApiToken.token_hash == hash_token(token))).one()
        row.expires_at = utcnow() - timedelta(minutes=1)
        s.add(row)
    ctx.identities.clear()
    for method, path in (("GET", "/api/v1/me"), ("GET", "/api/v1/jobs"), ("POST", "/api/v1/jobs"),
                         ("GET", "/api/v1/nodes")):
        r = api.client.request(method, path, headers=api.auth("bob"), json={"name": "x", "command": ["true"]})
        assert_error(r, 401, "unauthenticated", None, "expired")


def test_unauthenticated_requests_write_nothing(api):
    before = counts(api.world.ctx)
    r = api.client.post("/api/v1/jobs", json={"name": "x", "command": ["true"]})
    assert_error(r, 401, "unauthenticated")
    r = api.client.post("/api/v1/users", json={"username": "eve", "password": USER_PASSWORD})
    assert_error(r, 401, "unauthenticated")
    assert api.client.delete("/api/v1/jobs/1").status_code == 401
    assert counts(api.world.ctx) == before


def test_create_and_list_users_admin_only(api):
    r = api.client.post("/api/v1/users", headers=api.auth("admin"),
                        json={"username": "eve", "password": USER_PASSWORD, "role": "user", "email": "eve@example.com"})
    assert r.status_code == 201, r.text
    assert r.json()["username"] == "eve" and r.json()["email"] == "eve@example.com"
    r = api.client.get("/api/v1/users", headers=api.auth("admin"))
    assert r.status_code == 200
    assert [u["username"] for u in r.json()] == ["admin", "alice", "bob", "eve", "gus"]
    assert all("password_hash" not in u for u in r.json())
    login = api.client.post("/api/v1/auth/token", json={"username": "eve", "password": USER_PASSWORD})
    assert login.status_code == 200

    before = counts(api.world.ctx)
    assert_error(api.client.get("/api/v1/users", headers=api.auth("alice")), 403, "forbidden")
    assert_error(api.client.post("/api/v1/users", headers=api.auth("alice"),
                                 json={"username": "mallory", "password": USER_PASSWORD}), 403, "forbidden")
    assert_error(api.client.post("/api/v1/users", headers=api.auth("gus"),
                                 json={"username": "mallory", "password": USER_PASSWORD, "role": "admin"}), 403)
    for taken in ("eve", "EVE"):  # one name after NFKC case folding
        assert_error(api.client.post("/api/v1/users", headers=api.auth("admin"),
                                     json={"username": taken, "password": USER_PASSWORD}), 409, "conflict", "username")
    for body, field in (({"username": "Mallory bob", "password": USER_PASSWORD}, "username"),
                        ({"username": "<script>x</script>", "password": USER_PASSWORD}, "username"),
                        ({"username": "mallory", "password": "short"}, "password"),
                        ({"username": "mallory"}, "password"),
                        ({"password": USER_PASSWORD}, "username"),
                        ({"username": "mallory", "password": USER_PASSWORD, "role": "superuser"}, "role"),
                        ({"username": "mallory", "password": USER_PASSWORD, "is_admin": True}, "is_admin")):
        assert_error(api.client.post("/api/v1/users", headers=api.auth("admin"), json=body), 422, "invalid", field)
    assert counts(api.world.ctx) == before
    assert len(api.client.get("/api/v1/users", headers=api.auth("admin")).json()) == 5


def test_admin_login(api):
    r = api.client.post("/api/v1/auth/token", json={"username": "admin", "password": ADMIN_PASSWORD})
    assert r.status_code == 200
