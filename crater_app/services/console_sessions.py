"""Console sessions: the server-side sign-in of a browser (table ``console_sessions``) behind an ``HttpOnly``
cookie that every tab of the browser shares.

A session row holds the SHA-256 of a random secret (the cookie's value), its user, when it was created and last
seen, its absolute end (``CRATER_SESSION_LIFETIME_S``, 7 days) and idle timeout (``CRATER_SESSION_IDLE_TIMEOUT_S``,
12 h), the browser's user agent and IP address. Because it is in the database it survives restarts and serves
every worker and replica; the row is read on every request (:func:`touch`), so ending a session takes effect at
the next request everywhere, and ``last_seen_at`` is written at most once a minute.

A session ends when its owner signs out (:func:`end`), signs out everywhere (:func:`end_everywhere`, which also
revokes their ``/auth/token`` login tokens), when an admin disables the account or resets its password, and when
the owner changes their password (:func:`end_user_sessions`; other sessions than the one changing it).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, or_, update
from sqlmodel import Session, select

from crater_app.auth.cookies import is_cookie_name
from crater_app.auth.origins import parse_public_urls
from crater_app.auth.tokens import SESSION_PREFIX, hash_token, new_token
from crater_app.db.models import ApiToken, ConsoleSession, User
from crater_app.domain.errors import NotFound, Unauthenticated
from crater_app.domain.policy import Actor, can_manage_sessions
from crater_app.domain.times import utcnow
from crater_app.schemas import ConsoleSessionPublic
from crater_app.services import oplog, sign_in
from crater_app.services.context import ServiceContext
from crater_app.settings import Settings

#: seconds between two writes of a session's ``last_seen_at`` (so the idle timeout is exact to a minute)
LAST_SEEN_EVERY_S = 60
#: ended sessions are deleted this long after their end (the operation log keeps the sign-ins and sign-outs)
KEEP_ENDED_S = 7 * 86400
MAX_USER_AGENT_CHARS = 255
MAX_IP_CHARS = 45


def check_settings(settings: Settings) -> None:
    """Refuse unusable sign-in settings at start-up (bootstrap calls this).

    Raises:
        ValueError: naming the variable: ``CRATER_PUBLIC_URLS`` with an entry that is no http(s) URL,
            ``CRATER_SESSION_COOKIE_NAME`` that is no cookie name, an idle timeout longer than the lifetime.
    """
    try:
        parse_public_urls(settings.public_urls)
    except ValueError as exc:
        raise ValueError(f"CRATER_PUBLIC_URLS: {exc}") from None
    if not is_cookie_name(settings.session_cookie_name):
        raise ValueError("CRATER_SESSION_COOKIE_NAME must be a cookie name: 1 to 64 letters, digits and "
                         "!#$%&'*+-.^_`|~")
    if settings.session_idle_timeout_s > settings.session_lifetime_s:
        raise ValueError("CRATER_SESSION_IDLE_TIMEOUT_S must not be longer than CRATER_SESSION_LIFETIME_S")


def _public(row: ConsoleSession, current_hash: str | None = None) -> ConsoleSessionPublic:
    return ConsoleSessionPublic(
        id=row.id, created_at=row.created_at, last_seen_at=row.last_seen_at, expires_at=row.expires_at,
        idle_expires_at=min(row.expires_at, row.last_seen_at + timedelta(seconds=row.idle_timeout_s)),
        user_agent=row.user_agent, ip=row.ip, current=current_hash is not None and row.id_hash == current_hash,
    )


def _active(now: datetime):
    """The SQL condition of a session that has not been ended and not passed its absolute end (the idle timeout,
    which differs per row, is checked in Python)."""
    return (ConsoleSession.revoked_at.is_(None)) & (ConsoleSession.expires_at > now)  # type: ignore[union-attr]


def start(ctx: ServiceContext, s: Session, user: User, method: str, user_agent: str = "",
          ip: str = "") -> tuple[str, ConsoleSessionPublic]:
    """Open a console session for the active account ``user`` in the transaction ``s``, with an ``auth:login``
    operation-log row (``method``: ``password`` or ``oidc``). Ended sessions of the user older than 7 days are
    deleted on the way.

    Returns:
        ``(secret, session)``: the secret goes into the cookie only (``crs_`` + 43 URL-safe characters); its
        SHA-256 is stored.
    """
    now = utcnow()
    settings = ctx.settings
    s.exec(delete(ConsoleSession).where(  # type: ignore[call-overload]
        ConsoleSession.user_id == user.id,
        or_(ConsoleSession.expires_at < now - timedelta(seconds=KEEP_ENDED_S),
            ConsoleSession.revoked_at < now - timedelta(seconds=KEEP_ENDED_S)),  # type: ignore[operator]
    ))
    secret, digest = new_token(SESSION_PREFIX)
    row = ConsoleSession(
        id_hash=digest, user_id=user.id, created_at=now, last_seen_at=now,  # type: ignore[arg-type]
        expires_at=now + timedelta(seconds=settings.session_lifetime_s),
        idle_timeout_s=settings.session_idle_timeout_s, user_agent=(user_agent or "")[:MAX_USER_AGENT_CHARS],
        ip=(ip or "")[:MAX_IP_CHARS],
    )
    s.add(row)
    s.flush()
    oplog.record(s, sign_in.actor_of(user), "auth:login", user.username, code="auth.console_login",
                 args={"method": method, "session_id": row.id, "ip": row.ip})
    return secret, _public(row, digest)


def start_from_code(ctx: ServiceContext, code: object, user_agent: str = "", ip: str = "",
                    method: str = "password") -> tuple[str, str, ConsoleSessionPublic]:
    """Redeem a one-time sign-in code (:func:`crater_app.services.sign_in.redeem_sign_in_code`) and open a console
    session for its account, in one transaction.

    Returns:
        ``(secret, username, session)``.

    Raises:
        As ``redeem_sign_in_code``: InvalidInput, Unauthenticated (unknown, used or expired code),
        AccountNotActive.
    """
    with ctx.session() as s:
        user = sign_in.redeem_sign_in_code(s, code)
        secret, session = start(ctx, s, user, method, user_agent, ip)
        return secret, user.username, session


def touch(ctx: ServiceContext, secret: str) -> tuple[int, int]:
    """Check the session of the cookie value ``secret`` and note that it was seen (``last_seen_at``, written when
    it is a minute old or more).

    Returns:
        ``(user_id, session_id)``.

    Raises:
        Unauthenticated: ``auth.session_unknown``; ``auth.session_ended`` (signed out, or ended by a password
            change or an administrator); ``auth.session_expired`` (past its absolute end); ``auth.session_idle``
            (unused for ``idle_timeout_s`` seconds).
        AccountNotActive: the account was disabled or is pending.
    """
    digest = hash_token(secret)
    now = utcnow()
    with ctx.session(read_only=True) as s:
        found = s.exec(select(ConsoleSession, User.status).join(User, User.id == ConsoleSession.user_id)  # type: ignore[arg-type]
                       .where(ConsoleSession.id_hash == digest)).first()
    if found is None:
        raise Unauthenticated("auth.session_unknown")
    row, status = found
    if row.revoked_at is not None:
        raise Unauthenticated("auth.session_ended")
    if row.expires_at <= now:
        raise Unauthenticated("auth.session_expired")
    if row.last_seen_at + timedelta(seconds=row.idle_timeout_s) <= now:
        raise Unauthenticated("auth.session_idle", None, idle_timeout_s=row.idle_timeout_s)
    if status != "active":
        raise sign_in.not_active(status)
    if (now - row.last_seen_at).total_seconds() >= LAST_SEEN_EVERY_S:
        with ctx.session() as s:  # its own short write, at most once a minute per session
            s.exec(update(ConsoleSession).where(ConsoleSession.id == row.id)  # type: ignore[call-overload]
                   .values(last_seen_at=now))
    return row.user_id, row.id  # type: ignore[return-value]


def end(ctx: ServiceContext, secret: str | None) -> bool:
    """Sign out: end the session of the cookie value ``secret`` (an ``auth:logout`` row). Unknown or already ended
    sessions change nothing.

    Returns:
        Whether a session was ended.
    """
    if not secret:
        return False
    digest = hash_token(secret)
    with ctx.session() as s:
        row = s.exec(select(ConsoleSession).where(ConsoleSession.id_hash == digest)).first()
        if row is None or row.revoked_at is not None:
            return False
        row.revoked_at = utcnow()
        s.add(row)
        user = s.get(User, row.user_id)
        oplog.record(s, sign_in.actor_of(user), "auth:logout", user.username, code="auth.console_logout",  # type: ignore[arg-type]
                     args={"session_id": row.id})
    return True


def end_user_sessions(s: Session, user_id: int, keep_hash: str | None = None) -> int:
    """End every console session of ``user_id`` and revoke their ``/auth/token`` login tokens, in the transaction
    ``s`` (personal API tokens stay: their owner manages them on their own). ``keep_hash``: the SHA-256 of a
    session secret to leave open (the browser that changed the password).

    Returns:
        How many sessions and login tokens were ended.
    """
    now = utcnow()
    condition = [ConsoleSession.user_id == user_id, ConsoleSession.revoked_at.is_(None)]  # type: ignore[union-attr]
    if keep_hash is not None:
        condition.append(ConsoleSession.id_hash != keep_hash)
    ended = s.exec(update(ConsoleSession).where(*condition).values(revoked_at=now)).rowcount  # type: ignore[call-overload]
    ended += s.exec(update(ApiToken).where(  # type: ignore[call-overload]
        ApiToken.user_id == user_id, ApiToken.kind == sign_in.LOGIN_TOKEN_KIND,
        ApiToken.revoked_at.is_(None),  # type: ignore[union-attr]
    ).values(revoked_at=now)).rowcount
    return ended


def end_everywhere(ctx: ServiceContext, actor: Actor) -> int:
    """Sign out everywhere: end every console session of the caller (this browser's too) and revoke their
    ``/auth/token`` login tokens, with an ``auth:logout`` row. Personal API tokens stay.

    Returns:
        How many sessions and login tokens were ended.
    """
    with ctx.session() as s:
        ended = end_user_sessions(s, actor.user_id)
        oplog.record(s, actor, "auth:logout", actor.username, code="auth.logout_everywhere", args={"ended": ended})
    ctx.identities.forget_user(actor.user_id)
    return ended


def end_one(ctx: ServiceContext, actor: Actor, session_id: int) -> ConsoleSessionPublic:
    """End one of the caller's own console sessions (another browser, say) by its id; ending it twice changes
    nothing.

    Raises:
        NotFound: ``auth.session_not_found``: no session ``session_id`` of the caller.
    """
    with ctx.session() as s:
        row = s.get(ConsoleSession, session_id) if 0 < session_id < 2**63 else None
        if row is None or not can_manage_sessions(actor, row.user_id):
            raise NotFound("auth.session_not_found", "id", id=session_id)
        if row.revoked_at is None:
            row.revoked_at = utcnow()
            s.add(row)
            oplog.record(s, actor, "auth:logout", actor.username, code="auth.console_logout",
                         args={"session_id": row.id})
        return _public(row)


def list_sessions(ctx: ServiceContext, actor: Actor, secret: str | None = None) -> list[ConsoleSessionPublic]:
    """The caller's open console sessions, most recently seen first; ``current`` marks the one of the cookie value
    ``secret`` (the browser asking)."""
    now = utcnow()
    current = hash_token(secret) if secret else None
    with ctx.session(read_only=True) as s:
        rows = s.exec(select(ConsoleSession).where(ConsoleSession.user_id == actor.user_id, _active(now))
                      .order_by(ConsoleSession.last_seen_at.desc(), ConsoleSession.id.desc())).all()  # type: ignore[attr-defined]
    return [_public(r, current) for r in rows if r.last_seen_at + timedelta(seconds=r.idle_timeout_s) > now]
