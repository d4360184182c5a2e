"""Console sign-in for tests: a real console session (through the services, as ``POST /api/v1/auth/session``
opens one) and a Reflex router whose websocket handshake carries its cookie, as a browser tab's would."""

from __future__ import annotations

from reflex.istate.data import HeaderData, ReflexURL, RouterData
from sqlmodel import select

from crater_app.db.models import User
from crater_app.domain.naming import username_key
from crater_app.services import console_sessions, sign_in
from crater_app.services.context import ServiceContext
from crater_app.services.identity import Credentials

HOST = "localhost"
ORIGIN = f"http://{HOST}"


def session_secret(ctx: ServiceContext, username: str, user_agent: str = "test-browser", ip: str = "127.0.0.1") -> str:
    """Open a console session for ``username`` (an active account) and return its secret (the cookie's value)."""
    with ctx.session() as s:
        user = s.exec(select(User).where(User.username_key == username_key(username))).one()
        code = sign_in.issue_sign_in_code(s, user.id)
    secret, _, _ = console_sessions.start_from_code(ctx, code, user_agent, ip)
    return secret


def cookie_header(ctx: ServiceContext, secret: str) -> str:
    """A ``Cookie`` header carrying the session ``secret`` among other cookies."""
    return f"theme=dark; {ctx.settings.session_cookie_name}={secret}; other=1"


def tab_router(ctx: ServiceContext, url: str, secret: str | None = None, origin: str = ORIGIN) -> RouterData:
    """The router of a tab at ``url`` whose websocket handshake sent the session ``secret`` (none: signed out)."""
    headers = HeaderData(host=HOST, origin=origin, cookie=cookie_header(ctx, secret) if secret else "")
    return RouterData(url=ReflexURL(url), headers=headers)


def signed_in_router(ctx: ServiceContext, url: str, username: str) -> RouterData:
    """The router of a tab at ``url`` signed in as ``username`` (a new console session)."""
    return tab_router(ctx, url, session_secret(ctx, username))


def tab_credentials(ctx: ServiceContext, secret: str, origin: str = ORIGIN) -> Credentials:
    """What :meth:`AppState._credentials` gives for a tab whose websocket sent the session ``secret``."""
    return Credentials(cookie=cookie_header(ctx, secret), origin=origin, host=HOST, websocket=True)
