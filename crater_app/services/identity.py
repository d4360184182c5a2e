"""Who is asking: one function, :func:`resolve`, turns the plain data of a request (its ``Authorization`` and
``Cookie`` headers, ``Origin``/``Referer``, ``Host``, method, whether it is a WebSocket) into an :class:`Actor`.

The API, the console's Reflex events (the websocket handshake's headers) and, later, the session proxy to Jupyter
and VS Code (plain HTTP and WebSocket) all call it, so every door applies the same rules:

- ``Authorization: Bearer <token>``: a login token from ``POST /auth/token`` or a personal API token; cached for
  5 s per process (:mod:`crater_app.services.identity_cache`). Not cookie-authenticated, so no ``Origin`` check.
- otherwise the console session cookie (``CRATER_SESSION_COOKIE_NAME``): a request that could change something
  (any method but GET, HEAD, OPTIONS) and every WebSocket must come from an allowed origin
  (:func:`crater_app.auth.origins.origin_allowed`: ``CRATER_PUBLIC_URLS``, or the request's own host), then the
  session row is checked (:func:`crater_app.services.console_sessions.touch`) on every request.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import update
from sqlmodel import Session, select

from crater_app.auth.cookies import cookie_value
from crater_app.auth.origins import origin_allowed, parse_public_urls, request_origin
from crater_app.auth.tokens import hash_token
from crater_app.db.models import ApiToken, ProjectMember, User
from crater_app.domain.errors import Forbidden, Unauthenticated
from crater_app.domain.policy import Actor
from crater_app.domain.times import utcnow
from crater_app.services import console_sessions, sign_in
from crater_app.services.context import ServiceContext

#: methods that only read (RFC 9110 §9.2.1 safe methods): no Origin check for them with the cookie
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Credentials:
    """The plain request data identity is resolved from (headers as sent; empty when absent).

    ``authorization``: the ``Authorization`` header; ``cookie``: the ``Cookie`` header; ``origin``/``referer``:
    where a browser says the request comes from; ``host``: the ``Host`` header; ``method``: the HTTP method (a
    WebSocket handshake is ``GET``); ``websocket``: the request is (or arrived over) a WebSocket, which browsers
    do not restrict across sites, so its origin is always checked.
    """

    authorization: str = ""
    cookie: str = ""
    origin: str = ""
    referer: str = ""
    host: str = ""
    method: str = "GET"
    websocket: bool = False

    def bearer(self) -> str | None:
        """The token of an ``Authorization: Bearer`` header (``None`` when there is no such header; ``""`` for
        ``Bearer`` with nothing after it)."""
        scheme, _, token = self.authorization.strip().partition(" ")
        return token.strip() if scheme.lower() == "bearer" else None

    def session_secret(self, cookie_name: str) -> str | None:
        """The console session cookie's value, or ``None``."""
        return cookie_value(self.cookie, cookie_name)


def resolve(ctx: ServiceContext, credentials: Credentials) -> Actor:
    """The caller of a request (see the module docstring).

    Raises:
        Unauthenticated: no credentials (``auth.sign_in_required``), a bad bearer token (see :func:`authenticate`)
            or a session that is unknown, ended, expired or idle (see ``console_sessions.touch``).
        Forbidden: ``auth.origin_refused`` (``origin``): a cookie-authenticated write or WebSocket from another
            site; ``auth.origin_missing``: one with no ``Origin``/``Referer`` at all.
        AccountNotActive: the account is pending or disabled.
    """
    if credentials.authorization:
        return authenticate(ctx, credentials.bearer())
    secret = credentials.session_secret(ctx.settings.session_cookie_name)
    if secret is None:
        raise Unauthenticated("auth.sign_in_required")
    check_origin(ctx, credentials)
    user_id, _ = console_sessions.touch(ctx, secret)
    cached = ctx.identities.user(user_id)
    if cached is not None:
        return cached
    with ctx.session(read_only=True) as s:
        user = s.get(User, user_id)
        actor = _actor(s, user)  # type: ignore[arg-type]
    ctx.identities.put_user(actor)
    return actor


def check_origin(ctx: ServiceContext, credentials: Credentials) -> None:
    """Refuse a cookie-authenticated request that could act (a WebSocket, or a method other than GET, HEAD and
    OPTIONS) when it does not come from an allowed origin.

    Raises:
        Forbidden: ``auth.origin_missing`` when the request names no origin (no ``Origin``, no ``Referer``);
            ``auth.origin_refused`` with the request's ``origin`` (an opaque ``null`` included) otherwise.
    """
    if not credentials.websocket and credentials.method.upper() in SAFE_METHODS:
        return
    origin = request_origin(credentials.origin, credentials.referer)
    if not origin_allowed(origin, credentials.host, parse_public_urls(ctx.settings.public_urls)):
        named = origin or (credentials.origin or "")[:200]
        if not named:
            raise Forbidden("auth.origin_missing", None)
        raise Forbidden("auth.origin_refused", None, origin=named)


def _actor(s: Session, user: User) -> Actor:
    roles = {m.project_id: m.role for m in s.exec(select(ProjectMember).where(ProjectMember.user_id == user.id))}
    return Actor(user.id, user.username, user.role, roles, user.default_project_id)  # type: ignore[arg-type]


def authenticate(ctx: ServiceContext, token: str | None) -> Actor:
    """Resolve a bearer token (a login or personal API token) to its :class:`Actor` (cached for 5 s; its
    ``last_used_at`` written at most once a minute).

    Raises:
        Unauthenticated: ``auth.token_missing``, ``auth.token_unknown`` (unknown, revoked, or not a bearer token),
            ``auth.token_expired``, ``auth.account_inactive``.
    """
    if not token:
        raise Unauthenticated("auth.token_missing")
    cached = cached_actor(ctx, token)
    if cached is not None:
        return cached
    digest = hash_token(token)
    with ctx.session(read_only=True) as s:
        row = s.exec(select(ApiToken).where(ApiToken.token_hash == digest)).first()
        if row is None or row.revoked_at is not None or row.kind == sign_in.SIGN_IN_CODE_KIND:
            raise Unauthenticated("auth.token_unknown")
        if row.expires_at is not None and row.expires_at <= utcnow():
            raise Unauthenticated("auth.token_expired")
        user = s.get(User, row.user_id)
        if user is None or user.status != "active":
            raise Unauthenticated("auth.account_inactive")
        actor = _actor(s, user)
        expires = row.expires_at.timestamp() if row.expires_at else None
    if ctx.identities.due(digest):
        with ctx.session() as s:  # its own short write, only once a minute per token
            s.exec(update(ApiToken).where(ApiToken.id == row.id).values(last_used_at=utcnow()))  # type: ignore[call-overload]
    ctx.identities.put_token(digest, actor, expires)
    return actor


def cached_actor(ctx: ServiceContext, token: str | None) -> Actor | None:
    """The :class:`Actor` of the bearer ``token`` when :func:`authenticate` resolved it less than 5 s ago, else
    ``None``. No I/O, so an async caller can try it before handing :func:`authenticate` to a thread."""
    if not token:
        return None
    return ctx.identities.token(hash_token(token))


def forget_user(ctx: ServiceContext, user_id: int) -> None:
    """Drop every cached identity of ``user_id`` in this process, so that a change of their roles, memberships,
    status or tokens applies from their next request (other processes: within 5 s)."""
    ctx.identities.forget_user(user_id)

