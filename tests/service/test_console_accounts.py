"""Console handlers for sign-in, sign-out, the account page, sign-up and account administration, run in-process on
real Reflex state objects against the test database (no browser): what they show, what they send the browser
and what they change. A tab's identity is the session cookie its websocket handshake carried (tests/sessions.py)."""

from __future__ import annotations

import re

import pytest
import reflex as rx
from sqlmodel import select

from crater_app.db.models import OperationLog, User
from crater_app.domain.errors import Unauthenticated
from crater_app.services import console_sessions, identity, oidc_login
from crater_app.state import auth as auth_state
from crater_app.state import base as base_state
from crater_app.state.account import AccountState, describe_user_agent
from crater_app.state.admin import AdminUsersState
from crater_app.state.auth import LoginState
from crater_app.state.base import AppState
from tests.conftest import USER_PASSWORD
from tests.helpers import run_handler
from tests.oidc_provider import oidc_settings, provider  # noqa: F401 - fixture
from tests.sessions import session_secret, tab_credentials, tab_router

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def console(world, monkeypatch):
    """The handlers' process context is the test world's."""
    for module in (auth_state, base_state):
        monkeypatch.setattr(module, "get_context", lambda: world.ctx)
    return world


def state(cls, world, url: str = "http://localhost/login", secret: str | None = None):
    """A page state of a tab at ``url`` whose websocket sent the session ``secret`` (``None``: signed out)."""
    root = rx.State(_reflex_internal_init=True)
    sub = root.get_substate(cls.get_full_name().split(".")[1:])
    sub.router = tab_router(world.ctx, url, secret)
    return sub


def run(cls, name, st, *args):
    """Call the event handler ``name`` and return its last answer (see :func:`tests.helpers.run_handler`)."""
    return run_handler(cls.event_handlers[name].fn, st, *args)


def event_args(spec) -> dict:
    """The arguments of an event spec sent to the browser (``rx.redirect``'s path, ``rx.call_script``'s code)."""
    return {name._js_expr: value._var_value for name, value in spec.args}


def sign_in_code(script: str) -> str:
    """The one-time code in the script a successful sign-in sends the browser."""
    found = re.search(r'code: "(crt_[A-Za-z0-9_-]+)"', script)
    assert found, script
    return found.group(1)


def assert_ended(ctx, secret: str) -> None:
    """The session ``secret`` no longer signs a tab in."""
    with pytest.raises(Unauthenticated) as info:
        identity.resolve(ctx, tab_credentials(ctx, secret))
    assert info.value.code == "auth.session_ended"


def test_password_sign_in_hands_a_code_to_the_browser(console):
    page = state(LoginState, console, "http://localhost/login?next=/jobs/7")
    run(LoginState, "load", page)
    answer = run(LoginState, "submit", page, {"username": "ALICE", "password": USER_PASSWORD})
    script = event_args(answer)["javascript_code"]
    assert page.error == "" and page.busy, "the page stays busy until the browser loads the next one"
    assert "fetch(\"/api/v1/auth/session\", {method: 'POST'" in script and "credentials: 'include'" in script
    assert 'window.location.assign("/jobs/7")' in script and "/login?sso_error=code" in script
    secret, username, _ = console_sessions.start_from_code(console.ctx, sign_in_code(script))
    assert username == "alice"
    # the next page load (any tab of that browser) is signed in
    jobs_tab = state(LoginState, console, "http://localhost/login?next=/jobs/7", secret)
    redirect = run(LoginState, "load", jobs_tab)
    assert event_args(redirect)["path"] == "/jobs/7" and jobs_tab.username == "alice"


@pytest.mark.parametrize(("next_path", "target"), [("//evil.example/x", "/jobs"), ("https://evil.example", "/jobs"),
                                                   ("/approvals?page=2", "/approvals?page=2")])
def test_the_page_to_go_to_stays_on_this_site(console, next_path, target):
    page = state(LoginState, console, f"http://localhost/login?next={next_path}")
    script = event_args(run(LoginState, "submit", page, {"username": "bob", "password": USER_PASSWORD}))
    assert f"window.location.assign({target!r})".replace("'", '"') in script["javascript_code"]


def test_refused_sign_ins_send_nothing(console):
    page = state(LoginState, console)
    assert run(LoginState, "submit", page, {"username": "alice", "password": "wrong-password"}) is None
    assert page.error == "Wrong user name or password, or the account is not active." and not page.busy
    page.lang = "zh-CN"
    run(LoginState, "submit", page, {"username": "", "password": ""})
    assert page.error == "请输入用户名和密码。"
    with console.ctx.session(read_only=True) as s:
        assert s.exec(select(OperationLog).where(OperationLog.code == "auth.console_login")).first() is None


def test_pending_account_message_and_activation(console):
    ctx = console.ctx
    ctx.settings = ctx.settings.model_copy(update={"signup_enabled": True})
    page = state(LoginState, console)
    run(LoginState, "load", page)
    assert page.signup_enabled and not page.sso_enabled
    run(LoginState, "sign_up", page, {"username": "newbie", "password": USER_PASSWORD,
                                      "password_again": USER_PASSWORD + "x"})
    assert page.signup_error_field == "password" and "differ" in page.signup_error
    run(LoginState, "sign_up", page, {"username": "Bad Name", "password": USER_PASSWORD,
                                      "password_again": USER_PASSWORD})
    assert page.signup_error_field == "username" and "'U+0020' (character 4) is not allowed" in page.signup_error
    run(LoginState, "sign_up", page, {"username": "\u5f20\u4e09", "password": USER_PASSWORD,
                                      "password_again": USER_PASSWORD, "email": "z@example.org"})
    assert page.signup_error == "" and "\u5f20\u4e09" in page.notice
    assert run(LoginState, "submit", page, {"username": "\u5f20\u4e09", "password": USER_PASSWORD}) is None
    assert page.error == "Your account is waiting for an administrator's approval."

    admin_page = state(AdminUsersState, console, "http://localhost/admin/users", session_secret(ctx, "admin"))
    run(AdminUsersState, "load", admin_page)
    assert {"username": "\u5f20\u4e09", "status": "pending"}.items() <= next(
        u for u in admin_page.users if u["username"] == "\u5f20\u4e09").items()
    assert admin_page.pending_notice == "1 sign-up(s) waiting for approval."
    run(AdminUsersState, "set_status", admin_page, "\u5f20\u4e09", "active")
    assert admin_page.action_error == ""
    answer = run(LoginState, "submit", page, {"username": "\u5f20\u4e09", "password": USER_PASSWORD})
    assert page.error == "" and "javascript_code" in event_args(answer)


def test_sign_out_ends_the_session_of_every_tab(console):
    ctx = console.ctx
    secret = session_secret(ctx, "alice")
    first = state(AccountState, console, "http://localhost/account", secret)
    second = state(AccountState, console, "http://localhost/jobs?page=2", secret)
    run(AccountState, "load", first)
    assert first.loaded and first.profile["username"] == "alice" and first.username == "alice"
    answer = run_handler(AppState.event_handlers["sign_out"].fn, first)
    script = event_args(answer)["javascript_code"]
    assert "method: 'DELETE'" in script and 'window.location.assign("/login")' in script
    assert first.username == ""
    redirect = run(AccountState, "load", second)  # the other tab's next action
    assert event_args(redirect)["path"] == "/login" and second._next == "/jobs?page=2"
    login = state(LoginState, console, "http://localhost/login", secret)
    assert run(LoginState, "load", login) is None, "an ended session is not signed in"


def test_account_page_sessions_and_everywhere(console):
    ctx = console.ctx
    here = session_secret(ctx, "alice", "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0.0.0 Safari/537.36")
    phone = session_secret(ctx, "alice", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0) Version/17.0 Mobile/15E148 "
                                         "Safari/604.1")
    page = state(AccountState, console, "http://localhost/account", here)
    run(AccountState, "load", page)
    assert page.has_password and len(page.sessions) == 2
    current = next(r for r in page.sessions if r["current"] == "1")
    other = next(r for r in page.sessions if r["current"] == "")
    assert (current["browser"], other["browser"]) == ("Chrome 131 · Linux", "Safari 17 · iOS")
    run(AccountState, "end_session", page, other["id"])
    assert [r["id"] for r in page.sessions] == [current["id"]]
    assert_ended(ctx, phone)
    run(AccountState, "set_confirm_everywhere", page, True)
    answer = run(AccountState, "sign_out_everywhere", page)
    assert "method: 'DELETE'" in event_args(answer)["javascript_code"] and not page.confirm_everywhere
    assert console_sessions.list_sessions(ctx, console.alice) == []


def test_account_page_changes_the_password(console):
    ctx = console.ctx
    here, elsewhere = session_secret(ctx, "bob"), session_secret(ctx, "bob", "old laptop")
    page = state(AccountState, console, "http://localhost/account", here)
    run(AccountState, "load", page)
    run(AccountState, "change_password", page, {"current_password": USER_PASSWORD, "new_password": "new-password-1",
                                                "new_password_again": "new-password-2"})
    assert page.password_error_field == "new_password_again"
    run(AccountState, "change_password", page, {"current_password": "wrong", "new_password": "new-password-1",
                                                "new_password_again": "new-password-1"})
    assert (page.password_error, page.password_error_field) == ("The current password is wrong.", "current_password")
    key = page.password_key
    run(AccountState, "change_password", page, {"current_password": USER_PASSWORD, "new_password": "new-password-1",
                                                "new_password_again": "new-password-1"})
    assert page.password_error == "" and page.password_key == key + 1 and len(page.sessions) == 1
    assert identity.resolve(ctx, tab_credentials(ctx, here)).username == "bob"
    assert_ended(ctx, elsewhere)


def test_admin_edit_and_reset_dialogs(console):
    ctx = console.ctx
    page = state(AdminUsersState, console, "http://localhost/admin/users", session_secret(ctx, "admin"))
    run(AdminUsersState, "open_edit", page, "Alice")
    assert page.edit_open and page.edit_role == "user" and page.edit_limits["max_runtime"] == ""
    assert page.edit_username == "alice" and page.edit_sign_in == "password"
    run(AdminUsersState, "set_edit_role", page, "guest")
    run(AdminUsersState, "save_edit", page, {"max_sessions": "2", "max_accelerators_per_job": "",
                                             "max_runtime": "forever"})
    assert page.edit_open and list(page.field_errors) == ["edit.max_runtime"]
    with ctx.session(read_only=True) as s:
        alice = s.exec(select(User).where(User.username == "alice")).one()
    assert (alice.role, alice.max_sessions) == ("user", None)  # nothing written
    run(AdminUsersState, "save_edit", page, {"max_sessions": "2", "max_accelerators_per_job": "",
                                             "max_runtime": "1d"})
    assert not page.edit_open and page.edit_error == ""
    with ctx.session(read_only=True) as s:
        alice = s.exec(select(User).where(User.username == "alice")).one()
    assert (alice.role, alice.max_sessions, alice.max_runtime_s) == ("guest", 2, 86400)
    # the password reset dialog
    alices = session_secret(ctx, "alice")
    run(AdminUsersState, "open_reset", page, "alice")
    assert page.reset_open and not page.edit_open and page.reset_username == "alice"
    run(AdminUsersState, "reset_password", page, {"new_password": "short", "new_password_again": "short"})
    assert page.reset_open and page.reset_error_field == "new_password"
    toast = run(AdminUsersState, "reset_password", page, {"new_password": "fresh-password-1",
                                                          "new_password_again": "fresh-password-1"})
    assert not page.reset_open and toast is not None
    assert_ended(ctx, alices)
    # an admin's own role and status stay; the edit of one's own limits works
    run(AdminUsersState, "open_edit", page, "admin")
    run(AdminUsersState, "set_edit_status", page, "disabled")
    run(AdminUsersState, "save_edit", page, {"max_sessions": "", "max_accelerators_per_job": "", "max_runtime": ""})
    assert list(page.field_errors) == ["edit.status"]
    # a non-admin is refused by the service
    bobs = state(AdminUsersState, console, "http://localhost/admin/users", session_secret(ctx, "bob"))
    run(AdminUsersState, "set_status", bobs, "alice", "disabled")
    assert bobs.action_error == "Only platform administrators may manage accounts."


def test_a_page_from_another_site_cannot_act(console):
    """A tab whose websocket handshake came from another site's page gets an error, not the account."""
    ctx = console.ctx
    page = state(AccountState, console, "http://localhost/account")
    page.router = tab_router(ctx, "http://localhost/account", session_secret(ctx, "alice"), origin="https://evil.example")
    run(AccountState, "load", page)
    assert not page.loaded and "https://evil.example" in page.error and page.profile == {}


def test_single_sign_on_errors_and_link(console, provider):  # noqa: F811
    ctx = console.ctx
    ctx.settings = oidc_settings(ctx.settings, provider, oidc_display_name="Corp SSO")
    failed = state(LoginState, console, "http://localhost/login?sso_error=id_token")
    run(LoginState, "load", failed)
    assert failed.sso_enabled and failed.sso_name == "Corp SSO" and "could not be verified" in failed.error
    used = state(LoginState, console, "http://localhost/login?sso_error=code")
    run(LoginState, "load", used)
    assert "expired or was already used" in used.error
    odd = state(LoginState, console, "http://localhost/login?sso_error=<script>")
    run(LoginState, "load", odd)
    assert "not working right now" in odd.error
    plain = state(LoginState, console, "http://localhost/login?next=/jobs/7")
    run(LoginState, "load", plain)
    assert plain.sso_href == "/api/v1/auth/oidc/login?next=%2Fjobs%2F7"
    evil = state(LoginState, console, "http://localhost/login?next=//evil.example")
    run(LoginState, "load", evil)
    assert evil.sso_href == "/api/v1/auth/oidc/login"
    assert oidc_login.safe_next("/jobs") == "/jobs"


@pytest.mark.parametrize(("agent", "short"), [
    ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
     "Chrome 131 · Linux"),
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 "
     "Safari/537.36 Edg/131.0.2903.86", "Edge 131 · Windows"),
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 14.7; rv:133.0) Gecko/20100101 Firefox/133.0", "Firefox 133 · macOS"),
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 "
     "Safari/605.1.15", "Safari 18 · macOS"),
    ("curl/8.5.0", "curl 8"),
    ("", ""),
    ("SomeBot/1.0 (+https://bot.example)", "SomeBot/1.0 (+https://bot.example)"),
])
def test_user_agents_in_short(agent, short):
    assert describe_user_agent(agent) == short


@pytest.mark.parametrize(("origin", "dropped"), [("http://localhost", False), ("https://evil.example", True),
                                                 ("", True)])
def test_events_of_a_websocket_from_another_site_are_dropped(console, monkeypatch, origin, dropped):
    """The middleware runs before any handler (sign-out included, which asks no service for the caller)."""
    from reflex.state import StateUpdate
    from reflex_base.event import Event

    from crater_app.state import origin_guard

    monkeypatch.setattr(origin_guard, "get_context", lambda: console.ctx)
    page = state(AccountState, console, "http://localhost/account", session_secret(console.ctx, "alice"))
    page.router = tab_router(console.ctx, "http://localhost/account", session_secret(console.ctx, "alice"),
                             origin=origin)
    answer = run_handler(origin_guard.OriginGuard().preprocess, None, page, Event(name="app_state.sign_out"))
    assert (answer == StateUpdate()) if dropped else answer is None
