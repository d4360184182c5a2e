"""The console's root state: who is signed in, the language, and service calls.

Identity is never kept in state. Every handler resolves the caller again from the console session cookie that
this tab's websocket handshake carried (``self.router.headers.cookie``: read on the server, never sent to the
browser), its ``Origin`` and ``Host``, through ``services.identity.resolve``, before it reads or changes anything:
hiding a page or redirecting to /login protects nothing by itself. The cookie is ``HttpOnly`` and set by an HTTP
response (``POST /api/v1/auth/session``), so every tab of the browser shares it and a restart keeps it.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any, Callable, TypeVar

import reflex as rx

from crater_app import i18n
from crater_app.bootstrap import get_context
from crater_app.domain.errors import CraterError, Unauthenticated
from crater_app.domain.policy import Actor
from crater_app.services import console_sessions, identity, oidc_login
from crater_app.state.forms import FormError

T = TypeVar("T")

#: seconds between refreshes of live pages (jobs list, running job)
POLL_INTERVAL_S = 2.0
#: a live page stops refreshing after this long even when the tab stays open
POLL_MAX_S = 6 * 3600.0
#: the API path that sets (POST) and clears (DELETE) the console session cookie
SESSION_PATH = "/api/v1/auth/session"


def call_as(credentials: identity.Credentials, fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[Actor, T]:
    """Resolve ``credentials`` (a tab's, see :meth:`AppState._credentials`) to an actor and run
    ``fn(ctx, actor, *args, **kwargs)`` (blocking; run in a thread).

    Returns:
        The actor and what ``fn`` returned.

    Raises:
        Unauthenticated: no session, or it ended, expired or idled out; Forbidden: the page was loaded from
        another site; any other :class:`CraterError` from ``fn``.
    """
    ctx = get_context()
    actor = identity.resolve(ctx, credentials)
    return actor, fn(ctx, actor, *args, **kwargs)


def api_base() -> str:
    """Where the browser reaches the API: ``CRATER_API_URL`` when set, else the page's own origin (``""``)."""
    return get_context().settings.api_url.rstrip("/")


def leave_script(api: str, target: str) -> str:
    """JavaScript that clears the session cookie (``DELETE`` on the session path, ending the session if it is
    still open) and then loads ``target`` as a new page (so that the websocket reconnects without the cookie)."""
    return (f"fetch({json.dumps(api + SESSION_PATH)}, {{method: 'DELETE', credentials: 'include'}})"
            f".catch(() => null).finally(() => window.location.assign({json.dumps(target)}))")


async def client_connected(client_token: str) -> bool:
    """Whether the browser tab ``client_token`` still has its websocket open (True when unknown)."""
    try:
        from reflex_base.registry import RegistrationContext

        namespace = RegistrationContext.get().app.event_namespace
        if namespace is None:
            return True
        return await namespace._token_manager.is_token_connected(client_token)
    except Exception:  # noqa: BLE001 - internal Reflex API; polling also stops on navigation and by time
        return True


async def turn_page(state: Any, step: int, fetch: Callable[[], Any]) -> Any:
    """Move a paged list ``state`` (``page``, ``page_count``; pages from 1) by ``step`` pages (``1`` next, ``-1``
    previous) and return ``await fetch()`` (the list's reload); ``None`` and no change when that page does not exist.

    A module-level function rather than an ``AppState`` method: Reflex would turn a public method into an event
    handler, and the list states each keep their own ``next_page``/``prev_page`` handlers that call this.
    """
    page = state.page + step
    if not 1 <= page <= state.page_count:
        return None
    state.page = page
    return await fetch()


class AppState(rx.State):
    """Signed-in user (display only), language and translations; the parent of every page state."""

    #: the page to come back to after signing in (this tab; /login also takes ``?next=``)
    _next: str = ""
    username: str = ""
    role: str = ""
    is_admin: bool = False
    lang: str = rx.LocalStorage(i18n.DEFAULT_LANGUAGE, name="crater_lang", sync=True)

    @rx.var
    def tr(self) -> dict[str, str]:
        """Translations for the current language (``State.tr["jobs.title"]`` in components)."""
        return i18n.messages(self.lang)

    @rx.var
    def lang_code(self) -> str:
        """The current language code, normalised (``en`` or ``zh-CN``)."""
        return i18n.normalize(self.lang)

    @rx.event
    def set_lang(self, lang: str) -> None:
        """Switch the console language (kept in this browser)."""
        self.lang = i18n.normalize(lang)

    def msg(self, key: str, **params: object) -> str:
        """``key`` translated into the current language."""
        return i18n.translate(self.lang, key, **params)

    def _credentials(self) -> identity.Credentials:
        """This tab's credentials: the ``Cookie``, ``Origin`` and ``Host`` headers of its websocket handshake (a
        WebSocket, so the origin is always checked). Plain data, safe to hand to a thread. (Private: Reflex would
        make a public method an event the browser may send.)"""
        headers = self.router.headers
        return identity.Credentials(cookie=headers.cookie, origin=headers.origin, host=headers.host,
                                    websocket=True)

    def _session_secret(self) -> str | None:
        """The console session cookie's value in this tab's handshake, or ``None`` (not signed in)."""
        return self._credentials().session_secret(get_context().settings.session_cookie_name)

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one service call as the signed-in user, off the event loop (see :func:`call_as`)."""
        actor, result = await asyncio.to_thread(call_as, self._credentials(), fn, *args, **kwargs)
        self.remember(actor)
        return result

    async def _guarded(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T | None, Any]:
        """One service call (see :meth:`call`) with the usual error handling of a page handler.

        Returns:
            ``(result, None)`` on success; ``(None, redirect to /login)`` when the session is no longer valid;
            ``(None, None)`` after any other :class:`CraterError`, whose message is shown in the page's ``error``
            var, in the console's language.
        """
        try:
            return await self.call(fn, *args, **kwargs), None
        except Unauthenticated:
            return None, self.signed_out()
        except CraterError as exc:
            self.error = exc.message_in(self.lang)
            return None, None

    async def _submitted(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T | None, Any]:
        """A form's service call: as :meth:`_guarded`, but an error goes beside the form field it names
        (``FieldErrors._show_error``: the service's field path mapped to the form's input), else below the form
        (a state with ``FieldErrors``)."""
        try:
            return await self.call(fn, *args, **kwargs), None
        except Unauthenticated:
            return None, self.signed_out()
        except CraterError as exc:
            self._show_error(exc.message_in(self.lang), exc.field)
            return None, None

    def _form_failed(self, exc: FormError) -> None:
        """A form's own check failed (:class:`FormError`): its message beside the field it names (a state with
        ``FieldErrors``)."""
        self._show_error(self.msg(exc.key, **exc.params), exc.field)

    # Reflex turns every public function of a state class into an event handler, and an inherited handler runs
    # bound to the state that defines it (here AppState, see EventHandler.__get__ in reflex_base.event), where a
    # page's ``error`` var does not exist. A partialmethod is no function (no ``__code__``), so Reflex leaves it
    # alone and Python binds it to the page state that calls it; it cannot be sent as an event from the browser.
    guarded = functools.partialmethod(_guarded)
    submitted = functools.partialmethod(_submitted)

    def signed_out(self):
        """Forget what the top bar shows and send the browser to /login, which comes back here after signing in."""
        url = self.router.url
        self.forget()
        if url.path != "/login":
            self._next = oidc_login.safe_next(url.path + (f"?{url.query}" if url.query else ""))
        return rx.redirect("/login")

    def remember(self, actor: Actor) -> None:
        """Show who is signed in (display only; every handler resolves the session again)."""
        if (self.username, self.role) != (actor.username, actor.role):
            self.username = actor.username
            self.role = actor.role
            self.is_admin = actor.is_admin

    def forget(self) -> None:
        """Drop what the top bar shows about the user."""
        self.username = self.role = ""
        self.is_admin = False

    @rx.event
    async def sign_out(self):
        """End this browser's console session (every tab of it), clear the cookie and go to /login."""
        ctx = get_context()
        try:
            await asyncio.to_thread(console_sessions.end, ctx, self._session_secret())
        except CraterError:
            pass
        self.forget()
        return rx.call_script(leave_script(api_base(), "/login"))
