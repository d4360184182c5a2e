"""/api/v1/auth/oidc/login and /callback end to end: Crater's API (TestClient) and a real OpenID provider on
127.0.0.1, one httpx client following the redirects between them like a browser."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient

from crater_app.api.app import build_api
from crater_app.services import projects
from tests.api.conftest import assert_error
from tests.helpers import counts
from tests.oidc_provider import oidc_settings, provider  # noqa: F401 - fixture

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def browser(world, provider):  # noqa: F811
    """An httpx client that reaches Crater (the TestClient's app at http://testserver) and the provider."""
    world.ctx.settings = oidc_settings(world.ctx.settings, provider)
    projects.create_project(world.ctx, world.admin, "ml", "ML")
    with TestClient(build_api(lambda: world.ctx)) as crater:
        client = httpx.Client(mounts={"http://testserver": crater._transport, "all://": httpx.HTTPTransport()},
                              base_url="http://testserver", timeout=10)
        with client:
            yield client


def walk(client: httpx.Client, path: str, tamper=None, accept: str = "application/json") -> httpx.Response:
    """GET ``path`` and follow redirects until Crater answers something other than a redirect to the provider
    or to its callback; ``tamper(url) -> url`` may change the callback URL."""
    r = client.get(path, headers={"Accept": accept})
    for _ in range(5):
        if r.status_code != 302:
            return r
        location = r.headers["location"]
        parts = urlsplit(location)
        if parts.netloc in ("", "testserver") and not parts.path.startswith("/api/"):
            return r  # a console page: the sign-in ended (a session cookie set, or /login?sso_error=...)
        if "/auth/oidc/callback" in location and tamper is not None:
            location = tamper(location)
        r = client.get(location, headers={"Accept": accept})
    return r


def test_login_redirects_to_provider_with_pkce_and_cookie(browser, provider):  # noqa: F811
    r = browser.get("/api/v1/auth/oidc/login", params={"next": "/jobs"})
    assert r.status_code == 302
    url = urlsplit(r.headers["location"])
    assert f"{url.scheme}://{url.netloc}" == provider.issuer and url.path == "/authorize"
    q = parse_qs(url.query)
    assert q["code_challenge_method"] == ["S256"] and len(q["code_challenge"][0]) == 43
    cookie = r.headers["set-cookie"]
    assert "crater_oidc=" in cookie and "HttpOnly" in cookie and "/api/v1/auth/oidc" in cookie
    assert "samesite=lax" in cookie.lower()


def test_full_sign_in_sets_the_console_session_cookie(browser, provider, world):  # noqa: F811
    r = walk(browser, "/api/v1/auth/oidc/login?next=/jobs/7")
    assert r.status_code == 302, r.text
    assert urlsplit(r.headers["location"]).path == "/jobs/7"
    cookies = r.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith("crater_session="))
    assert "HttpOnly" in session and "samesite=lax" in session.lower() and "Path=/" in session
    assert "Max-Age=604800" in session and "Secure" not in session  # plain http here
    assert any(c.startswith('crater_oidc=""') or "Max-Age=0" in c for c in cookies if c.startswith("crater_oidc"))
    # the browser is signed in: its cookie alone reads the API
    me = browser.get("/api/v1/me")
    assert me.status_code == 200 and me.json()["username"] == "Zhang.San"
    # the provider's token endpoint saw the PKCE verifier
    assert provider.token_requests[-1]["code_verifier"]
    # the cookie's value is no bearer token
    secret = session.split(";")[0].split("=", 1)[1]
    browser.cookies.clear()
    bad = browser.get("/api/v1/me", headers={"Authorization": f"Bearer {secret}"})
    assert_error(bad, 401, "unauthenticated")


@pytest.mark.parametrize("case,words", [
    ("wrong_state", "state mismatch"), ("expired", "expired"), ("audience", "not meant for this client"),
    ("tamper", "signature"), ("deny", "access_denied"), ("replay", "invalid_grant"),
])
def test_refused_sign_ins(browser, provider, world, case, words):  # noqa: F811
    if case == "replay":
        seen = {}

        def keep(url):
            seen["url"] = url
            return url

        assert walk(browser, "/api/v1/auth/oidc/login", tamper=keep).status_code == 302
        browser.get("/api/v1/auth/oidc/login")  # a new sign-in in this browser (new cookie)...
        callback = urlsplit(seen["url"])
        fresh_state = parse_qs(urlsplit(browser.get("/api/v1/auth/oidc/login").headers["location"]).query)["state"][0]
        code = parse_qs(callback.query)["code"][0]
        before = counts(world.ctx)
        r = browser.get(f"{callback.path}?code={code}&state={fresh_state}")  # ...replaying the old code
    else:
        provider.expired = case == "expired"
        provider.audience = "another-client" if case == "audience" else None
        provider.tamper = case == "tamper"
        provider.deny = case == "deny"
        tamper = (lambda url: url.replace("state=", "state=x")) if case == "wrong_state" else None
        before = counts(world.ctx)
        r = walk(browser, "/api/v1/auth/oidc/login", tamper=tamper)
    assert_error(r, 401, "unauthenticated", None, words)
    after = counts(world.ctx)
    assert after["operation_logs"] == before["operation_logs"] + 1
    assert {k: v for k, v in after.items() if k != "operation_logs"} == \
        {k: v for k, v in before.items() if k != "operation_logs"}


def test_browser_gets_sent_to_login_page_with_reason(browser, provider):  # noqa: F811
    provider.expired = True
    r = walk(browser, "/api/v1/auth/oidc/login", accept="text/html,application/xhtml+xml")
    assert r.status_code == 302 and r.headers["location"].startswith("http://testserver/login?sso_error=id_token")


def test_provider_unreachable_at_start(browser, provider, world):  # noqa: F811
    world.ctx.settings = world.ctx.settings.model_copy(update={"oidc_discovery_url": provider.issuer + "/missing"})
    before = counts(world.ctx)
    r = browser.get("/api/v1/auth/oidc/login")
    assert_error(r, 401, "unauthenticated", None, "discovery document")
    r = browser.get("/api/v1/auth/oidc/login", headers={"Accept": "text/html"})
    assert r.status_code == 302 and r.headers["location"].endswith("/login?sso_error=config")
    assert counts(world.ctx) == before


def test_off_is_404(api):
    assert_error(api.client.get("/api/v1/auth/oidc/login", follow_redirects=False), 404, "not_found")
    assert_error(api.client.get("/api/v1/auth/oidc/callback?code=x&state=y"), 404, "not_found")


def test_callback_bad_input(browser, world):
    """Missing or junk parameters: a clear refusal, nothing but the error row written."""
    for query in ("", "?state=abc", "?code=abc", "?code=" + "x" * 5000 + "&state=y"):
        before = counts(world.ctx)
        r = browser.get("/api/v1/auth/oidc/callback" + query)
        assert_error(r, 401, "unauthenticated")
        assert counts(world.ctx)["operation_logs"] == before["operation_logs"] + 1
