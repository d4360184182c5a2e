"""Console handlers for sign-in, single sign-on hand-over, sign-up and account administration, run in-process
on real Reflex state objects against the test database (no browser): what they show and what they change."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import reflex as rx
from reflex.istate.data import ReflexURL, RouterData
from sqlmodel import select

from crater_app.db.models import User
from crater_app.services import oidc_login, users
from crater_app.state import auth as auth_state
from crater_app.state import base as base_state
from crater_app.state.admin import AdminUsersState
from crater_app.state.auth import LoginState
from tests.conftest import USER_PASSWORD
from tests.helpers import run_handler
from tests.oidc_provider import oidc_settings, provider  # noqa: F401 - fixture

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def console(world, monkeypatch):
    """The handlers' process context is the test world's."""
    for module in (auth_state, base_state):
        monkeypatch.setattr(module, "get_context", lambda: world.ctx)
    return world


def state(cls, url: str = "http://localhost/login"):
    root = rx.State(_reflex_internal_init=True)
    sub = root.get_substate(cls.get_full_name().split(".")[1:])
    sub.router = RouterData(url=ReflexURL(url))
    return sub


def run(handler, st, *args):
    """Call an event handler's function and return its last answer (see :func:`tests.helpers.run_handler`)."""
    return run_handler(handler.fn, st, *args)


def handler(cls, name):
    return cls.event_handlers[name]


def test_pending_account_message_and_activation(console):
    ctx = console.ctx
    ctx.settings = ctx.settings.model_copy(update={"signup_enabled": True})
    page = state(LoginState)
    run(handler(LoginState, "load"), page)
    assert page.signup_enabled and not page.sso_enabled
    run(handler(LoginState, "sign_up"), page, {"username": "newbie", "password": USER_PASSWORD,
                                               "password_again": USER_PASSWORD + "x"})
    assert page.signup_error_field == "password" and "differ" in page.signup_error
    run(handler(LoginState, "sign_up"), page, {"username": "Bad Name", "password": USER_PASSWORD,
                                               "password_again": USER_PASSWORD})
    assert page.signup_error_field == "username"
    run(handler(LoginState, "sign_up"), page, {"username": "newbie", "password": USER_PASSWORD,
                                               "password_again": USER_PASSWORD, "email": "n@example.org"})
    assert page.signup_error == "" and "newbie" in page.notice
    run(handler(LoginState, "submit"), page, {"username": "newbie", "password": USER_PASSWORD})
    assert page.error == "Your account is waiting for an administrator's approval." and page._token == ""

    admin_page = state(AdminUsersState, "http://localhost/admin/users")
    admin_page._token = console.tokens["admin"]
    run(handler(AdminUsersState, "load"), admin_page)
    assert {"username": "newbie", "status": "pending"}.items() <= next(
        u for u in admin_page.users if u["username"] == "newbie").items()
    assert admin_page.pending_notice == "1 sign-up(s) waiting for approval."
    run(handler(AdminUsersState, "set_status"), admin_page, "newbie", "active")
    assert admin_page.action_error == ""
    run(handler(LoginState, "submit"), page, {"username": "newbie", "password": USER_PASSWORD})
    assert page.error == "" and page._token and page.username == "newbie"


def test_admin_edit_dialog(console):
    page = state(AdminUsersState, "http://localhost/admin/users")
    page._token = console.tokens["admin"]
    run(handler(AdminUsersState, "open_edit"), page, "alice")
    assert page.edit_open and page.edit_role == "user" and page.edit_limits["max_runtime"] == ""
    run(handler(AdminUsersState, "set_edit_role"), page, "guest")
    run(handler(AdminUsersState, "save_edit"), page, {"max_sessions": "2", "max_accelerators_per_job": "",
                                                      "max_runtime": "forever"})
    assert page.edit_open and list(page.field_errors) == ["edit.max_runtime"]
    with console.ctx.session(read_only=True) as s:
        alice = s.exec(select(User).where(User.username == "alice")).one()
    assert (alice.role, alice.max_sessions) == ("user", None)  # nothing written
    run(handler(AdminUsersState, "save_edit"), page, {"max_sessions": "2", "max_accelerators_per_job": "",
                                                      "max_runtime": "1d"})
    assert not page.edit_open and page.edit_error == ""
    with console.ctx.session(read_only=True) as s:
        alice = s.exec(select(User).where(User.username == "alice")).one()
    assert (alice.role, alice.max_sessions, alice.max_runtime_s) == ("guest", 2, 86400)
    # an admin's own role and status stay; the edit of one's own limits works
    run(handler(AdminUsersState, "open_edit"), page, "admin")
    run(handler(AdminUsersState, "set_edit_status"), page, "disabled")
    run(handler(AdminUsersState, "save_edit"), page, {"max_sessions": "", "max_accelerators_per_job": "",
                                                      "max_runtime": ""})
    assert list(page.field_errors) == ["edit.status"]
    # a non-admin is refused by the service
    page._token = console.tokens["alice"]
    run(handler(AdminUsersState, "set_status"), page, "bob", "disabled")
    assert page.action_error


def test_single_sign_on_hand_over(console, provider):  # noqa: F811
    ctx = console.ctx
    ctx.settings = oidc_settings(ctx.settings, provider, oidc_display_name="Corp SSO")
    url, sealed = oidc_login.start(ctx)
    answer = httpx.get(url, follow_redirects=False, timeout=10)
    params = {k: v[0] for k, v in parse_qs(urlsplit(answer.headers["location"]).query).items()}
    done = oidc_login.complete(ctx, sealed, params)
    page = state(LoginState, f"http://localhost/login?sso={done.code}&next=/jobs/1")
    redirect = run(handler(LoginState, "load"), page)
    assert page.sso_enabled and page.sso_name == "Corp SSO" and page.error == ""
    assert page.username == "zhang-san" and users.authenticate(ctx, page._token).username == "zhang-san"
    assert "/jobs/1" in str(redirect)
    again = state(LoginState, f"http://localhost/login?sso={done.code}")  # a replayed link
    run(handler(LoginState, "load"), again)
    assert again._token == "" and "expired or was already used" in again.error
    failed = state(LoginState, "http://localhost/login?sso_error=id_token")
    run(handler(LoginState, "load"), failed)
    assert "could not be verified" in failed.error
    odd = state(LoginState, "http://localhost/login?sso_error=<script>")
    run(handler(LoginState, "load"), odd)
    assert "not working right now" in odd.error
    plain = state(LoginState)
    plain._next = "/jobs/7"
    run(handler(LoginState, "load"), plain)
    assert plain.sso_href == "/api/v1/auth/oidc/login?next=%2Fjobs%2F7"
    plain._next = "//evil.example"
    run(handler(LoginState, "load"), plain)
    assert plain.sso_href == "/api/v1/auth/oidc/login"
