"""The console session cookie over HTTP: set by POST /api/v1/auth/session, read by every API route (reads from
anywhere, writes only from an allowed Origin), cleared by DELETE; the caller's sessions, sign out everywhere,
password change and reset. Bearer tokens are untouched by all of it."""

from __future__ import annotations

import pytest
from sqlmodel import select

from crater_app.db.models import ConsoleSession
from crater_app.services import sign_in
from tests.api.conftest import assert_error
from tests.conftest import USER_PASSWORD
from tests.helpers import counts

SITE = {"Origin": "http://testserver"}
EVIL = {"Origin": "https://evil.example"}
JOB = {"name": "cookie-job", "command": ["true"]}


def sign_in_browser(api, username: str = "alice", headers: dict | None = None):
    """The console's hand-over: a one-time code, posted by the browser; the client keeps the cookie."""
    code = sign_in.password_sign_in_code(api.world.ctx, username, USER_PASSWORD)
    return api.client.post("/api/v1/auth/session", json={"code": code}, headers=SITE | (headers or {}))


def set_cookie(response) -> str:
    return next(c for c in response.headers.get_list("set-cookie") if c.startswith("crater_session="))


def test_sign_in_sets_an_http_only_cookie_that_reads_the_api(api):
    r = sign_in_browser(api, "alice", {"User-Agent": "Mozilla/5.0 Firefox/133.0"})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["username"] == "alice" and body["session"]["current"] is True
    assert body["session"]["user_agent"] == "Mozilla/5.0 Firefox/133.0" and body["session"]["ip"] == "testclient"
    cookie = set_cookie(r)
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie and "Max-Age=604800" in cookie
    assert "Secure" not in cookie and r.headers["cache-control"] == "no-store"
    assert "crs_" in cookie and "crs_" not in r.text, "the secret travels in the cookie only"
    me = api.client.get("/api/v1/me")  # no Authorization header: the cookie
    assert me.status_code == 200 and me.json()["username"] == "alice"
    assert api.client.get("/api/v1/jobs").status_code == 200
    assert api.client.get("/api/v1/me", headers={"Origin": "https://elsewhere.example"}).status_code == 200, \
        "a read needs no origin (CORS keeps other sites from reading the answer)"


def test_the_hand_over_is_refused_from_another_site(api):
    code = sign_in.password_sign_in_code(api.world.ctx, "alice", USER_PASSWORD)
    r = api.client.post("/api/v1/auth/session", json={"code": code}, headers=EVIL)
    error = assert_error(r, 403, "forbidden", None, code="auth.origin_refused")
    assert error["args"] == {"origin": "https://evil.example"} and "set-cookie" not in r.headers
    r = api.client.post("/api/v1/auth/session", json={"code": code})  # no Origin at all
    assert_error(r, 403, "forbidden", None, "names no origin", code="auth.origin_missing")
    assert api.client.post("/api/v1/auth/session", json={"code": code}, headers=SITE).status_code == 201, \
        "the refusals did not use the code up"
    r = api.client.post("/api/v1/auth/session", json={"code": code}, headers=SITE)
    assert_error(r, 401, "unauthenticated", None, code="auth.code_used")
    assert_error(api.client.post("/api/v1/auth/session", json={"code": "x" * 200}, headers=SITE), 422, "invalid",
                 "code")


def test_cookie_writes_must_come_from_this_site(api):
    assert sign_in_browser(api).status_code == 201
    before = counts(api.world.ctx)
    for headers, words, code in (({}, "names no origin", "auth.origin_missing"),
                                 (EVIL, "evil.example", "auth.origin_refused"),
                                 ({"Origin": "null"}, "null", "auth.origin_refused"),
                                 ({"Origin": "http://testserver.evil.example"}, "testserver.evil",
                                  "auth.origin_refused")):
        r = api.client.post("/api/v1/jobs", json=JOB, headers=headers)
        assert_error(r, 403, "forbidden", None, words, code=code)
    r = api.client.post("/api/v1/jobs", json=JOB, headers=EVIL | {"Accept-Language": "zh-CN"})
    assert "不是 Crater 的访问地址" in r.json()["error"]["message"]
    assert counts(api.world.ctx) == before, "nothing written"
    created = api.client.post("/api/v1/jobs", json=JOB, headers=SITE)
    assert created.status_code == 201 and created.json()["user"] == "alice"
    referer = api.client.post("/api/v1/jobs", json=JOB | {"name": "by-referer"},
                              headers={"Referer": "http://testserver/jobs/new"})
    assert referer.status_code == 201, "no Origin: the Referer's origin counts"
    job_id = created.json()["id"]
    assert_error(api.client.delete(f"/api/v1/jobs/{job_id}", headers=EVIL), 403, "forbidden")
    assert api.client.delete(f"/api/v1/jobs/{job_id}", headers=SITE).status_code in (200, 202)


def test_bearer_tokens_need_no_origin(api):
    r = api.client.post("/api/v1/jobs", json=JOB, headers=api.auth("bob") | EVIL)
    assert r.status_code == 201 and r.json()["user"] == "bob"
    assert sign_in_browser(api, "alice").status_code == 201
    r = api.client.post("/api/v1/jobs", json=JOB, headers=api.auth("bob") | EVIL)
    assert r.json()["user"] == "bob", "the bearer token wins over the cookie"


def test_public_urls_decide_the_origin_and_secure(api):
    ctx = api.world.ctx
    ctx.settings = ctx.settings.model_copy(update={"public_urls": "https://crater.example.org"})
    code = sign_in.password_sign_in_code(ctx, "alice", USER_PASSWORD)
    assert_error(api.client.post("/api/v1/auth/session", json={"code": code}, headers=SITE), 403, "forbidden")
    r = api.client.post("/api/v1/auth/session", json={"code": code}, headers={"Origin": "https://crater.example.org"})
    assert r.status_code == 201 and "Secure" in set_cookie(r)


def test_secure_behind_a_tls_proxy(api):
    r = sign_in_browser(api, "alice", {"X-Forwarded-Proto": "https"})
    assert r.status_code == 201 and "Secure" in set_cookie(r)


def test_sign_out_clears_the_cookie_and_ends_the_session(api):
    assert sign_in_browser(api).status_code == 201
    stolen = dict(api.client.cookies)
    assert_error(api.client.delete("/api/v1/auth/session", headers=EVIL), 403, "forbidden")
    r = api.client.delete("/api/v1/auth/session", headers=SITE)
    assert r.status_code == 204
    cleared = set_cookie(r)
    assert 'crater_session=""' in cleared and "Max-Age=0" in cleared
    assert_error(api.client.get("/api/v1/me"), 401, "unauthenticated")
    r = api.client.get("/api/v1/me", cookies=stolen)  # a copy of the cookie is no use either
    assert_error(r, 401, "unauthenticated", None, "signed out", code="auth.session_ended")
    assert api.client.delete("/api/v1/auth/session", headers=SITE).status_code == 204, "signed out twice: fine"


def test_sessions_list_end_one_and_everywhere(api):
    ctx = api.world.ctx
    other = sign_in_browser(api, "alice", {"User-Agent": "phone"})
    other_cookie = dict(api.client.cookies)
    api.client.cookies.clear()
    assert sign_in_browser(api, "alice", {"User-Agent": "laptop"}).status_code == 201
    listed = api.client.get("/api/v1/auth/sessions").json()
    assert {(s["user_agent"], s["current"]) for s in listed} == {("phone", False), ("laptop", True)}
    assert api.client.get("/api/v1/auth/sessions", headers=api.auth("bob")).json() == []
    assert_error(api.client.delete(f"/api/v1/auth/sessions/{other.json()['session']['id']}", headers=api.auth("bob")),
                 404, "not_found", "id")
    r = api.client.delete(f"/api/v1/auth/sessions/{other.json()['session']['id']}", headers=SITE)
    assert r.status_code == 200 and r.json()["user_agent"] == "phone"
    laptop = dict(api.client.cookies)
    api.client.cookies.clear()
    assert_error(api.client.get("/api/v1/me", cookies=other_cookie), 401, "unauthenticated")
    api.client.cookies.update(laptop)
    r = api.client.delete("/api/v1/auth/sessions", headers=SITE)
    assert r.status_code == 200 and r.json() == {"ended": 2}  # the laptop and populate()'s login token
    assert "Max-Age=0" in set_cookie(r)
    assert_error(api.client.get("/api/v1/me", headers=api.auth("alice")), 401, "unauthenticated")
    with ctx.session(read_only=True) as s:
        assert all(row.revoked_at for row in s.exec(select(ConsoleSession)))


def test_change_password(api):
    assert sign_in_browser(api).status_code == 201
    body = {"current_password": "wrong-password", "new_password": "new-password-1"}
    r = api.client.post("/api/v1/me/password", json=body, headers=SITE | {"Accept-Language": "zh-CN"})
    error = assert_error(r, 422, "invalid", "current_password", code="auth.current_password_wrong")
    assert error["message"] == "当前密码不正确。"
    assert_error(api.client.post("/api/v1/me/password", json={**body, "current_password": USER_PASSWORD}, headers=EVIL),
                 403, "forbidden")
    body = {"current_password": USER_PASSWORD, "new_password": "new-password-1"}
    r = api.client.post("/api/v1/me/password", json=body, headers=SITE)
    assert r.status_code == 200 and r.json() == {"ended": 1}, r.text  # populate()'s login token; this browser stays
    assert api.client.get("/api/v1/me").status_code == 200
    assert_error(api.client.get("/api/v1/me", headers=api.auth("alice")), 401, "unauthenticated")
    assert api.client.post("/api/v1/auth/token", json={"username": "alice", "password": "new-password-1"}).status_code == 200
    assert_error(api.client.post("/api/v1/me/password", json={"current_password": "new-password-1",
                                                              "new_password": "short"}, headers=SITE),
                 422, "invalid", "new_password")
    assert_error(api.client.post("/api/v1/me/password", json={"current_password": "x"}, headers=SITE), 422, "invalid")


def test_admin_resets_a_password(api):
    r = api.client.put("/api/v1/users/Bob/password", json={"new_password": "reset-password-1"},
                       headers=api.auth("admin"))
    assert r.status_code == 200 and r.json() == {"ended": 1}
    assert_error(api.client.get("/api/v1/me", headers=api.auth("bob")), 401, "unauthenticated")
    assert api.client.post("/api/v1/auth/token", json={"username": "bob", "password": "reset-password-1"}).status_code == 200
    assert_error(api.client.put("/api/v1/users/bob/password", json={"new_password": "x" * 9}, headers=api.auth("alice")),
                 403, "forbidden")
    assert_error(api.client.put("/api/v1/users/admin/password", json={"new_password": "x" * 9},
                                headers=api.auth("admin")), 403, "forbidden", "username", code="auth.reset_own")
    assert_error(api.client.put("/api/v1/users/nobody/password", json={"new_password": "x" * 9},
                                headers=api.auth("admin")), 404, "not_found", "username")
    assert_error(api.client.put("/api/v1/users/bob/password", json={"new_password": "short"},
                                headers=api.auth("admin")), 422, "invalid", "new_password")


@pytest.mark.parametrize("path", ["/api/v1/users/ALICE", "/api/v1/users/%EF%BD%81lice"])  # ａlice: full-width a
def test_names_are_found_by_key(api, path):
    r = api.client.get(path, headers=api.auth("admin"))
    assert r.status_code == 200 and r.json()["username"] == "alice"
    r = api.client.patch(path, json={"max_sessions": 3}, headers=api.auth("admin"))
    assert r.status_code == 200 and r.json()["max_sessions"] == 3


def test_unicode_names_through_the_api(api):
    r = api.client.post("/api/v1/users", json={"username": "\u5f20\u4e09", "password": USER_PASSWORD},
                        headers=api.auth("admin"))
    assert r.status_code == 201 and r.json()["username"] == "\u5f20\u4e09"
    r = api.client.post("/api/v1/auth/token", json={"username": "\u5f20\u4e09", "password": USER_PASSWORD})
    assert r.status_code == 200
    token = r.json()["access_token"]
    assert api.client.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"}).json()["username"] == "\u5f20\u4e09"
    r = api.client.put("/api/v1/projects/default/members/%E5%BC%A0%E4%B8%89", json={"role": "viewer"},
                       headers=api.auth("admin"))
    assert r.status_code == 200 and r.json()["role"] == "viewer"
    r = api.client.get("/api/v1/operation-logs", params={"actor": "\u5f20\u4e09".upper()}, headers=api.auth("admin"))
    assert r.status_code == 200 and r.json()["total"] == 1 and r.json()["items"][0]["action"] == "auth:login"
    r = api.client.get("/api/v1/operation-logs", params={"actor": "ALICE"}, headers=api.auth("admin"))
    assert r.json()["total"] >= 1 and {i["actor"] for i in r.json()["items"]} == {"alice"}
