"""Console sign-in in a real browser: one sign-in for every tab, sign-out everywhere in the browser at the next
action, a user named 张三, requests from other sites refused, and an open page that lives through a restart of the
server (stopped and started on the same port and data dir, with its console state lost) still signed in."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request

import pytest
import websocket
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.e2e.conftest import ADMIN_PASSWORD, Console, sign_in

pytestmark = pytest.mark.e2e

ZHANG = "\u5f20\u4e09"  # 张三
ZHANG_PASSWORD = "zhang-san-password-1"
EVIL = "https://evil.example"
PARTNER = "https://partner.example"


def _request(console: Console, method: str, path: str, body: object = None,
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], object]:
    """``(status, headers, JSON body or None)`` of one request to the running server."""
    req = urllib.request.Request(console.url + path, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw, status, answer = resp.read(), resp.status, dict(resp.headers)
    except urllib.error.HTTPError as exc:
        raw, status, answer = exc.read(), exc.code, dict(exc.headers)
    try:
        return status, {k.lower(): v for k, v in answer.items()}, json.loads(raw or b"null")
    except ValueError:
        return status, {k.lower(): v for k, v in answer.items()}, None


def _admin_token(console: Console) -> str:
    status, _, body = _request(console, "POST", "/api/v1/auth/token", {"username": "admin", "password": ADMIN_PASSWORD})
    assert status == 200, body
    return body["access_token"]  # type: ignore[index]


def _session_cookie(page: Page) -> dict:
    return next(c for c in page.context.cookies() if c["name"] == "crater_session")


def test_one_sign_in_for_every_tab_and_one_sign_out(browser, console: Console) -> None:
    context = browser.new_context(viewport={"width": 1360, "height": 900}, locale="en-US")
    try:
        first = context.new_page()
        sign_in(first, console.url, "admin", ADMIN_PASSWORD, "/projects")
        cookie = _session_cookie(first)
        assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and cookie["path"] == "/"
        assert first.evaluate("document.cookie").find("crater_session") == -1, "scripts cannot read it"
        # A second tab of the same browser is signed in at once.
        second = context.new_page()
        second.goto(console.url + "/nodes")
        expect(second.locator("#nav-username")).to_have_text("admin")
        assert second.url.rstrip("/").endswith("/nodes")
        # Sign-out in the first tab signs the second out at its next action.
        first.click("#user-menu")
        first.click("#sign-out")
        first.wait_for_url(re.compile(r".*/login/?$"))
        assert not [c for c in context.cookies() if c["name"] == "crater_session"], "the cookie is cleared"
        second.click("#nav-jobs")
        second.wait_for_url(re.compile(r".*/login/?$"))
        # ... and signing in there goes back to where it was sent from.
        second.fill("#username", "admin")
        second.fill("#password", ADMIN_PASSWORD)
        second.click("#login-submit")
        second.wait_for_url(re.compile(r".*/jobs/?$"))
    finally:
        context.close()


def test_a_user_named_zhang_san_signs_in(page: Page, console: Console) -> None:
    status, _, body = _request(console, "POST", "/api/v1/users", {"username": ZHANG, "password": ZHANG_PASSWORD},
                               {"Authorization": f"Bearer {_admin_token(console)}"})
    assert status in (201, 409), body
    sign_in(page, console.url, ZHANG, ZHANG_PASSWORD, "/jobs")
    page.click("#user-menu")
    page.click("#menu-account")
    page.wait_for_url(re.compile(r".*/account/?$"))
    expect(page.locator("#account-username")).to_have_text(ZHANG)
    expect(page.locator(".session-row[data-current='1']")).to_have_count(1)
    assert page.page_errors == []  # type: ignore[attr-defined]


def test_other_sites_cannot_act_with_the_cookie(page: Page, console: Console) -> None:
    sign_in(page, console.url, "admin", ADMIN_PASSWORD, "/jobs")
    cookie = f"crater_session={_session_cookie(page)['value']}"
    job = {"name": "from-elsewhere", "command": ["true"]}
    status, headers, body = _request(console, "POST", "/api/v1/jobs", job, {"Cookie": cookie, "Origin": EVIL})
    assert status == 403 and body["error"]["code"] == "auth.origin_refused", body  # type: ignore[index]
    assert "access-control-allow-origin" not in headers
    status, headers, body = _request(console, "GET", "/api/v1/me", None, {"Cookie": cookie, "Origin": EVIL})
    assert status == 200 and "access-control-allow-origin" not in headers, "no site may read the answer"
    status, headers, _ = _request(console, "OPTIONS", "/api/v1/jobs", None,
                                  {"Origin": EVIL, "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in headers, headers
    status, _, body = _request(console, "POST", "/api/v1/jobs", job, {"Cookie": cookie, "Origin": console.url})
    assert status == 201, body


def _wait_for(predicate, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def _navigate(page: Page, link: str, path: str) -> None:
    """Click ``link`` until the page shows ``path``: the first navigation after a restart may instead make Reflex
    reload the current page (each build names its route chunks anew, and the old page asks for an old name)."""
    for _ in range(3):
        page.click(link)
        try:
            page.wait_for_url(re.compile(".*" + re.escape(path) + "/?$"), timeout=15_000)
            return
        except PlaywrightTimeout:
            expect(page.locator(link)).to_be_visible()
    raise AssertionError(f"{link} did not open {path}; the page is at {page.url}")


def test_an_open_page_lives_through_a_restart(browser, console: Console) -> None:
    """The server is stopped and started again with in-memory console state (one worker, as ``make run``):
    every tab's Reflex state is gone, the session (in the database, behind the cookie) is not. The open page
    reconnects by itself, runs its on_load again (so its data and live refresh come back) and stays signed in:
    it never shows the sign-in form."""
    context = browser.new_context(viewport={"width": 1360, "height": 900}, locale="en-US")
    token = _admin_token(console)
    try:
        page = context.new_page()
        sign_in(page, console.url, "admin", ADMIN_PASSWORD, "/jobs")
        redis, workers = console.env["REFLEX_REDIS_URL"], console.env["GRANIAN_WORKERS"]  # type: ignore[index]
        visited: list[str] = []
        page.on("framenavigated", lambda frame: visited.append(frame.url))
        console.restart(REFLEX_REDIS_URL=None, GRANIAN_WORKERS=None,
                        CRATER_PUBLIC_URLS=f"{console.url},{PARTNER}")
        try:
            # The live list refreshes again: a job submitted now shows up on the open page.
            status, _, body = _request(console, "POST", "/api/v1/jobs", {"name": "after-restart", "command": ["true"]},
                                       {"Authorization": f"Bearer {token}"})
            assert status == 201, body
            expect(page.locator("text=after-restart")).to_be_visible(timeout=60_000)
            assert page.url.rstrip("/").endswith("/jobs")
            expect(page.locator("#nav-username")).to_have_text("admin")
            _navigate(page, "#nav-nodes", "/nodes")  # an action served by the new server: still signed in
            expect(page.locator("#nav-username")).to_have_text("admin")
            assert not [u for u in visited if "/login" in u], visited
            fresh = context.new_page()  # and a new tab
            fresh.goto(console.url + "/projects")
            expect(fresh.locator("#nav-username")).to_have_text("admin")
            # With public URLs configured, CORS answers exactly those origins...
            _, headers, _ = _request(console, "OPTIONS", "/api/v1/jobs", None,
                                     {"Origin": PARTNER, "Access-Control-Request-Method": "POST"})
            assert headers.get("access-control-allow-origin") == PARTNER
            assert headers.get("access-control-allow-credentials") == "true"
            # ... with one Vary header that names each field once (one CORS layer around the console and the API)
            probe = urllib.request.Request(console.url + "/api/v1/me", headers={
                "Origin": PARTNER, "Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(probe, timeout=30) as resp:
                assert resp.headers.get_all("Vary") == ["Accept-Language, Origin"], resp.headers.get_all("Vary")
                assert resp.headers["Access-Control-Allow-Origin"] == PARTNER
            _, headers, _ = _request(console, "OPTIONS", "/api/v1/jobs", None,
                                     {"Origin": EVIL, "Access-Control-Request-Method": "POST"})
            assert "access-control-allow-origin" not in headers
            # ... and the console's websocket refuses a handshake from any other site.
            ws_url = console.url.replace("http://", "ws://") + "/_event/?EIO=4&transport=websocket"
            with pytest.raises(websocket.WebSocketBadStatusException):
                websocket.create_connection(ws_url, origin=EVIL, timeout=10)
            ws = websocket.create_connection(ws_url, origin=console.url, timeout=10)
            ws.close()
        finally:
            console.restart(REFLEX_REDIS_URL=redis, GRANIAN_WORKERS=workers, CRATER_PUBLIC_URLS=None)
    finally:
        context.close()
