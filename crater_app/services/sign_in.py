"""Signing in with a local password: the argon2 check (bounded, constant work for unknown names), bearer login
tokens (``POST /api/v1/auth/token``) and one-time sign-in codes, which hand a sign-in made over the console's
websocket (or by single sign-on) to the HTTP response that sets the session cookie
(:mod:`crater_app.services.console_sessions`)."""

from __future__ import annotations

import functools
import os
import secrets
import threading
from datetime import timedelta

from sqlalchemy import update
from sqlmodel import Session, select

from crater_app.auth.passwords import MAX_PASSWORD_CHARS, hash_password, verify_password
from crater_app.auth.tokens import hash_token, new_token
from crater_app.db.models import ApiToken, User
from crater_app.db.queries.users import user_by_name
from crater_app.domain.errors import Busy, InvalidInput, Unauthenticated
from crater_app.domain.naming import is_text
from crater_app.domain.policy import Actor
from crater_app.domain.times import utcnow
from crater_app.schemas import TokenPublic
from crater_app.services import oplog
from crater_app.services.context import ServiceContext

#: ``ApiToken.kind`` of a bearer token from ``POST /auth/token`` (a sign-in of a script or the CLI)
LOGIN_TOKEN_KIND = "session"
#: ``ApiToken.kind`` of a one-time sign-in code; never accepted as a bearer token
SIGN_IN_CODE_KIND = "sign_in_code"
SIGN_IN_CODE_TTL_S = 60
MAX_CODE_CHARS = 128
# Password checks at once: each argon2 check holds 64 MiB for ~0.1 s, so 40 concurrent sign-ins (FastAPI's thread
# pool) took the process from 0.3 to 2.5 GB. More than one per core gains no throughput; a sign-in that cannot get
# a slot within _LOGIN_WAIT_S is answered 429 (busy) instead of queueing without bound.
_LOGIN_SLOTS = threading.BoundedSemaphore(max(2, os.cpu_count() or 2))
_LOGIN_WAIT_S = 5.0


class AccountNotActive(Unauthenticated):
    """The password (or the identity provider) was right but the account cannot sign in: ``status`` is
    ``pending`` (a sign-up waiting for an administrator: code ``auth.account_pending``) or ``disabled``
    (``auth.account_disabled``). HTTP 401; only said after the credentials were checked, so it discloses nothing
    to someone without them. Build it with :func:`not_active`."""

    def __init__(self, code: str, status: str) -> None:
        super().__init__(code, None, status=status)
        self.status = status


def not_active(status: str | None) -> AccountNotActive:
    """The :class:`AccountNotActive` error for an account whose ``status`` is not ``active`` (``None``: the
    account is gone, told as disabled)."""
    if status == "pending":
        return AccountNotActive("auth.account_pending", "pending")
    return AccountNotActive("auth.account_disabled", status or "disabled")


@functools.lru_cache(maxsize=1)
def _dummy_hash() -> str:
    """A hash of a random secret, checked against when the user does not exist (constant-time login)."""
    return hash_password(secrets.token_urlsafe(16))


def checked_password(stored_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches ``stored_hash`` (argon2), within the process's password-check slots
    (``None``: the check runs against a dummy hash, so that it costs the same).

    Raises:
        Busy: ``auth.busy`` when no slot frees within 5 s (HTTP 429).
    """
    if not _LOGIN_SLOTS.acquire(timeout=_LOGIN_WAIT_S):
        raise Busy("auth.busy", None, retry_after_s=int(_LOGIN_WAIT_S))
    try:
        return verify_password(stored_hash or _dummy_hash(), password) and stored_hash is not None
    finally:
        _LOGIN_SLOTS.release()


def _check_credentials(username: object, password: object) -> tuple[str, str]:
    for name, value in (("username", username), ("password", password)):
        if not isinstance(value, str) or not value:
            raise InvalidInput("auth.credential_required", name, field_name=name)
        if len(value) > MAX_PASSWORD_CHARS or not is_text(value):
            raise InvalidInput("auth.credential_too_long", name, field_name=name, max=MAX_PASSWORD_CHARS)
    return username, password  # type: ignore[return-value]


def verify(ctx: ServiceContext, username: object, password: object) -> User:
    """The active account ``username`` (looked up by its NFKC case-folded key) whose password is ``password``.

    The hash check runs outside any transaction (it holds no database lock), and an unknown name costs one hash
    check too, so response times do not tell which user names exist.

    Raises:
        InvalidInput: username/password missing, not strings or over 1,024 characters (field named).
        Unauthenticated: ``auth.wrong_credentials``, the same for an unknown user and a wrong password.
        AccountNotActive: the password was right but the account is pending or disabled.
        Busy: too many password checks at once.
    """
    username, password = _check_credentials(username, password)
    with ctx.session(read_only=True) as s:
        user = user_by_name(s, username)
    if not checked_password(user.password_hash if user is not None else None, password) or user is None:
        raise Unauthenticated("auth.wrong_credentials")
    if user.status != "active":
        raise not_active(user.status)
    return user


def actor_of(user: User) -> Actor:
    """The minimal :class:`Actor` of ``user`` for operation-log rows (no memberships)."""
    return Actor(user.id, user.username, user.role)  # type: ignore[arg-type]


def login(ctx: ServiceContext, username: object, password: object) -> TokenPublic:
    """Check a local password and issue a bearer login token valid ``settings.token_ttl_s`` seconds.

    Raises:
        As :func:`verify`.
    """
    user = verify(ctx, username, password)
    with ctx.session() as s:
        return issue_login_token(ctx, s, user)


def issue_login_token(ctx: ServiceContext, s: Session, user: User) -> TokenPublic:
    """A bearer login token for ``user`` (an active account) valid ``settings.token_ttl_s`` seconds, in the session
    ``s``, with an ``auth:login`` operation-log row."""
    secret, digest = new_token()
    expires = utcnow() + timedelta(seconds=ctx.settings.token_ttl_s)
    s.add(ApiToken(user_id=user.id, token_hash=digest, kind=LOGIN_TOKEN_KIND, expires_at=expires))
    oplog.record(s, actor_of(user), "auth:login", user.username, code="auth.token_login",
                 args={"ttl_s": ctx.settings.token_ttl_s})
    return TokenPublic(access_token=secret, expires_at=expires)


def logout(ctx: ServiceContext, token: str) -> None:
    """Revoke the bearer token ``token`` (unknown or revoked tokens are ignored)."""
    digest = hash_token(token)
    with ctx.session() as s:
        s.exec(update(ApiToken).where(  # type: ignore[call-overload]
            ApiToken.token_hash == digest, ApiToken.revoked_at.is_(None)  # type: ignore[union-attr]
        ).values(revoked_at=utcnow()))
    ctx.identities.forget_token(digest)


def issue_sign_in_code(s: Session, user_id: int) -> str:
    """A one-time sign-in code for ``user_id`` (in session ``s``): stored as a SHA-256 digest in ``api_tokens`` with
    kind ``sign_in_code``, valid 60 s, revoked when redeemed (:func:`redeem_sign_in_code`); never a bearer token."""
    secret, digest = new_token()
    s.add(ApiToken(user_id=user_id, token_hash=digest, kind=SIGN_IN_CODE_KIND,
                   expires_at=utcnow() + timedelta(seconds=SIGN_IN_CODE_TTL_S)))
    return secret


def password_sign_in_code(ctx: ServiceContext, username: object, password: object) -> str:
    """Check a local password (as :func:`verify`) and return a one-time sign-in code for the account, which the
    browser exchanges for its console session cookie (``POST /api/v1/auth/session``) within 60 s."""
    user = verify(ctx, username, password)
    with ctx.session() as s:
        return issue_sign_in_code(s, user.id)  # type: ignore[arg-type]


def redeem_sign_in_code(s: Session, code: object) -> User:
    """The active account a one-time sign-in code belongs to, in the caller's transaction ``s``.

    Single use across every process: the code's row is revoked by one conditional ``UPDATE`` (only the transaction
    that changes it goes on), so a replayed code fails even on another worker.

    Raises:
        InvalidInput: ``auth.code_format`` (``code`` not a string of 1..128 characters).
        Unauthenticated: ``auth.code_unknown``; ``auth.code_used`` (used or older than 60 s).
        AccountNotActive: the account was disabled meanwhile.
    """
    if not isinstance(code, str) or not code or len(code) > MAX_CODE_CHARS or not is_text(code):
        raise InvalidInput("auth.code_format", "code", max=MAX_CODE_CHARS)
    now = utcnow()
    row = s.exec(select(ApiToken).where(ApiToken.token_hash == hash_token(code),
                                        ApiToken.kind == SIGN_IN_CODE_KIND)).first()
    if row is None:
        raise Unauthenticated("auth.code_unknown")
    claimed = s.exec(  # type: ignore[call-overload]
        update(ApiToken).where(ApiToken.id == row.id, ApiToken.revoked_at.is_(None),  # type: ignore[union-attr]
                               ApiToken.expires_at > now).values(revoked_at=now)
    ).rowcount
    if claimed != 1:
        raise Unauthenticated("auth.code_used")
    user = s.get(User, row.user_id)
    if user is None or user.status != "active":
        raise not_active(user.status if user is not None else None)
    return user
