"""Sign-in page state."""

from __future__ import annotations

import asyncio

import reflex as rx

from crater_app.bootstrap import get_context
from crater_app.domain.errors import CraterError, Unauthenticated
from crater_app.domain.policy import Actor
from crater_app.services import users
from crater_app.state.base import AppState


def _sign_in(username: str, password: str) -> tuple[str, Actor]:
    """Log in and resolve the new token to its actor (blocking)."""
    ctx = get_context()
    token = users.login(ctx, username, password).access_token
    return token, users.authenticate(ctx, token)


class LoginState(AppState):
    """The /login form."""

    error: str = ""
    busy: bool = False

    @rx.event
    async def load(self):
        """on_load: already signed in (a valid token) -> go to the jobs list."""
        self.error = ""
        self.busy = False
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
        self.error = ""
        yield
        try:
            token, actor = await asyncio.to_thread(_sign_in, username, password)
        except Unauthenticated:
            self.error = self.msg("login.error.failed")
            return
        except CraterError as exc:
            self.error = exc.message
            return
        finally:
            self.busy = False
        self._token = token
        self.remember(actor)
        target, self._next = self._next or "/jobs", ""
        yield rx.redirect(target)
