"""Sign-in page state: local password sign-in, the single sign-on button and its errors, and self sign-up.

A password sign-in is checked here, over the websocket, but the session cookie is ``HttpOnly`` and only an HTTP
response can set it: the handler gets a one-time sign-in code (60 s) and sends the browser a script that posts it
to ``POST /api/v1/auth/session`` (which sets the cookie) and then loads the page to go to, so that the websocket
reconnects with the cookie. Single sign-on ends in the provider's callback, which sets the cookie itself.
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import urlencode

import reflex as rx

from crater_app.bootstrap import get_context
from crater_app.domain.errors import CraterError, Unauthenticated
from crater_app.services import identity, oidc_login, sign_in, users
from crater_app.state.base import SESSION_PATH, AppState, api_base

#: ``sso_error`` reason of /api/v1/auth/oidc/callback (and of a failed code exchange) -> its sentence's key
SSO_ERROR_KEYS = {
    "disabled": "login.sso.error.disabled", "config": "login.sso.error.config", "idp": "login.sso.error.idp",
    "state": "login.sso.error.state", "exchange": "login.sso.error.exchange", "id_token": "login.sso.error.id_token",
    "claims": "login.sso.error.claims", "account": "login.sso.error.account", "code": "login.sso.error.code",
}
#: account status that cannot sign in -> its sentence's key
INACTIVE_KEYS = {"pending": "login.error.pending", "disabled": "login.error.disabled"}


def session_script(api: str, code: str, target: str) -> str:
    """JavaScript that exchanges the one-time sign-in ``code`` for the session cookie (``POST`` to the session
    path of ``api``) and then loads ``target``; when the exchange fails it loads ``/login?sso_error=code``."""
    return (
        "(async () => { try { const r = await fetch("
        f"{json.dumps(api + SESSION_PATH)}, {{method: 'POST', credentials: 'include', "
        f"headers: {{'Content-Type': 'application/json'}}, body: JSON.stringify({{code: {json.dumps(code)}}})}});"
        f" if (r.ok) {{ window.location.assign({json.dumps(target)}); return; }} }} catch (e) {{}}"
        " window.location.assign('/login?sso_error=code'); })()"
    )


class LoginState(AppState):
    """The /login page: password form, the single sign-on button, the sign-up form."""

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

    def _target(self) -> str:
        """The page to open after signing in: ``?next=``, else the page this tab was sent here from, when it is a
        path on this site; else ``/jobs``."""
        asked = oidc_login.safe_next(str(self.router.url.query_parameters.get("next", "")))
        return asked or oidc_login.safe_next(self._next) or "/jobs"

    @rx.event
    async def load(self):
        """on_load: show the sign-in options and why single sign-on failed (``?sso_error=``); a browser whose
        session is still valid goes straight on (``?next=`` or the jobs list)."""
        self.error = self.notice = self.signup_error = self.signup_error_field = ""
        self.busy = False
        ctx = get_context()
        settings = ctx.settings
        self.sso_enabled = oidc_login.enabled(settings)
        self.sso_name = settings.oidc_display_name
        target = self._target()
        self.sso_href = (api_base() + "/api/v1/auth/oidc/login"
                         + (f"?{urlencode({'next': target})}" if target != "/jobs" else ""))
        self.signup_enabled = settings.signup_enabled
        reason = str(self.router.url.query_parameters.get("sso_error", ""))
        if reason:
            self.error = self.msg(SSO_ERROR_KEYS.get(reason, "login.sso.error.config"))
            return None
        if self._session_secret() is None:
            return None
        try:
            actor = await asyncio.to_thread(identity.resolve, ctx, self._credentials())
        except CraterError:
            self.forget()
            return None
        self.remember(actor)
        self._next = ""
        return rx.redirect(target)

    @rx.event
    async def submit(self, form: dict):
        """Check the password; on success hand the sign-in to the browser, which sets its session cookie and goes
        on (see the module docstring)."""
        username = str(form.get("username", "")).strip()
        password = str(form.get("password", ""))
        if not username or not password:
            self.error = self.msg("login.error.required")
            return
        self.busy = True
        self.error = self.notice = ""
        yield
        try:
            code = await asyncio.to_thread(sign_in.password_sign_in_code, get_context(), username, password)
        except sign_in.AccountNotActive as exc:
            self.busy = False
            self.error = self.msg(INACTIVE_KEYS.get(exc.status, "login.error.disabled"))
            return
        except Unauthenticated:
            self.busy = False
            self.error = self.msg("login.error.failed")
            return
        except CraterError as exc:
            self.busy = False
            self.error = exc.message_in(self.lang)
            return
        # busy stays on: the page is about to be replaced
        target, self._next = self._target(), ""
        yield rx.call_script(session_script(api_base(), code, target))

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
