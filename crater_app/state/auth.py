"""Sign-in page state: local password sign-in, single sign-on hand-over, and self sign-up."""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

import reflex as rx

from crater_app.bootstrap import get_context
from crater_app.domain.errors import CraterError, Unauthenticated
from crater_app.domain.policy import Actor
from crater_app.services import oidc_login, users
from crater_app.state.base import AppState

#: ``sso_error`` reason of /api/v1/auth/oidc/callback -> its sentence's key
SSO_ERROR_KEYS = {
    "disabled": "login.sso.error.disabled", "config": "login.sso.error.config", "idp": "login.sso.error.idp",
    "state": "login.sso.error.state", "exchange": "login.sso.error.exchange", "id_token": "login.sso.error.id_token",
    "claims": "login.sso.error.claims", "account": "login.sso.error.account",
}
#: account status that cannot sign in -> its sentence's key
INACTIVE_KEYS = {"pending": "login.error.pending", "disabled": "login.error.disabled"}


def _sign_in(username: str, password: str) -> tuple[str, Actor]:
    """Log in and resolve the new token to its actor (blocking)."""
    ctx = get_context()
    token = users.login(ctx, username, password).access_token
    return token, users.authenticate(ctx, token)


def _redeem(code: str) -> tuple[str, Actor]:
    """Redeem the one-time single sign-on code for a session token and its actor (blocking)."""
    ctx = get_context()
    token = users.redeem_login_code(ctx, code).access_token
    return token, users.authenticate(ctx, token)


class LoginState(AppState):
    """The /login page: password form, the single sign-on button and hand-over, the sign-up form."""

    error: str = ""
    notice: str = ""
    busy: bool = False
    sso_enabled: bool = False
    sso_name: str = ""
    signup_enabled: bool = False
    signup_open: bool = False
    signup_error: str = ""
    signup_error_field: str = ""
    #: the single sign-on start URL: on this origin, or on ``CRATER_API_URL`` when browsers reach the app there;
    #: it carries the page to open afterwards
    sso_href: str = ""

    @rx.event
    async def load(self):
        """on_load: show the sign-in options; redeem a single sign-on code (``?sso=``) or show why single sign-on
        failed (``?sso_error=``); an already valid token goes straight on to the jobs list."""
        self.error = self.notice = self.signup_error = self.signup_error_field = ""
        self.busy = False
        settings = get_context().settings
        self.sso_enabled = oidc_login.enabled(settings)
        self.sso_name = settings.oidc_display_name
        nxt = oidc_login.safe_next(self._next)
        self.sso_href = (settings.api_url.rstrip("/") + "/api/v1/auth/oidc/login"
                         + (f"?{urlencode({'next': nxt})}" if nxt else ""))
        self.signup_enabled = settings.signup_enabled
        params = dict(self.router.url.query_parameters)
        code, reason = str(params.get("sso", "")), str(params.get("sso_error", ""))
        if reason:
            self.error = self.msg(SSO_ERROR_KEYS.get(reason, "login.sso.error.config"))
            return None
        if code:
            try:
                token, actor = await asyncio.to_thread(_redeem, code)
            except users.AccountNotActive as exc:
                self.error = self.msg(INACTIVE_KEYS.get(exc.status, "login.error.disabled"))
                return None
            except CraterError:
                self.error = self.msg("login.sso.error.code")
                return None
            self.forget()
            self._token = token
            self.remember(actor)
            target = oidc_login.safe_next(str(params.get("next", ""))) or self._next or "/jobs"
            self._next = ""
            return rx.redirect(target)
        if not self._token:
            return None
        try:
            actor = await asyncio.to_thread(users.authenticate, get_context(), self._token)
        except CraterError:
            self.forget()
            return None
        self.remember(actor)
        return rx.redirect(self._next or "/jobs")

    @rx.event
    async def submit(self, form: dict):
        """Check the password; on success keep the token (backend only) and continue."""
        username = str(form.get("username", "")).strip()
        password = str(form.get("password", ""))
        if not username or not password:
            self.error = self.msg("login.error.required")
            return
        self.busy = True
        self.error = self.notice = ""
        yield
        try:
            token, actor = await asyncio.to_thread(_sign_in, username, password)
        except users.AccountNotActive as exc:
            self.error = self.msg(INACTIVE_KEYS.get(exc.status, "login.error.disabled"))
            return
        except Unauthenticated:
            self.error = self.msg("login.error.failed")
            return
        except CraterError as exc:
            self.error = exc.message_in(self.lang)
            return
        finally:
            self.busy = False
        self._token = token
        self.remember(actor)
        target, self._next = self._next or "/jobs", ""
        yield rx.redirect(target)

    @rx.event
    def toggle_signup(self) -> None:
        """Show or hide the sign-up form."""
        self.signup_open = not self.signup_open
        self.signup_error = self.signup_error_field = ""

    @rx.event
    async def sign_up(self, form: dict):
        """Create a pending account (self sign-up); it can sign in once an administrator activates it."""
        self.signup_error = self.signup_error_field = ""
        if str(form.get("password", "")) != str(form.get("password_again", "")):
            self.signup_error, self.signup_error_field = self.msg("signup.error.mismatch"), "password"
            return None
        try:
            created = await asyncio.to_thread(
                users.signup, get_context(), str(form.get("username", "")).strip(), str(form.get("password", "")),
                str(form.get("email", "")).strip(), str(form.get("display_name", "")).strip(),
            )
        except CraterError as exc:
            self.signup_error, self.signup_error_field = exc.message_in(self.lang), exc.field or ""
            return None
        self.signup_open = False
        self.notice = self.msg("signup.done", username=created.username)
        return None
