"""Passwords of local accounts after they exist: changing one's own (with the current password) and an admin's
reset of someone else's. Both end the account's other console sessions and its ``/auth/token`` login tokens (a
stolen session must not outlive the password it was opened with); personal API tokens stay, as GitHub keeps
personal access tokens over a password change."""

from __future__ import annotations

from crater_app.auth.passwords import check_password, hash_password
from crater_app.auth.tokens import hash_token
from crater_app.db.models import User
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, NotFound
from crater_app.domain.naming import MAX_USERNAME_CHARS, is_text
from crater_app.domain.policy import Actor, can_change_password, can_reset_password
from crater_app.db.queries.users import user_by_name
from crater_app.services import console_sessions, identity, oplog, sign_in
from crater_app.services.context import ServiceContext


def change_password(ctx: ServiceContext, actor: Actor, current: object, new: object,
                    session_secret: str | None = None) -> int:
    """Change the caller's own password. ``session_secret``: the console session making the change (it stays
    open; every other session and login token of the caller ends).

    Returns:
        How many sessions and login tokens were ended.

    Raises:
        Forbidden: ``account.password_forbidden``.
        InvalidInput: field ``current_password``: ``auth.current_password_required`` (missing or empty),
            ``auth.current_password_type`` (not a string), ``auth.current_password_wrong`` (422, not 401: the
            caller stays signed in); field ``new_password``: the new password breaks the rule (8..1,024
            characters, not only whitespace) or equals the current one (``auth.password_unchanged``).
        Conflict: ``auth.password_none``: the account signs in with single sign-on only.
        Busy: too many password checks at once.
    """
    if not can_change_password(actor):
        raise Forbidden("account.password_forbidden")
    if current is None or current == "":
        raise InvalidInput("auth.current_password_required", "current_password")
    if not isinstance(current, str):
        raise InvalidInput("auth.current_password_type", "current_password")
    if not is_text(current):  # a NUL or lone surrogate: no password holds one
        raise InvalidInput("auth.current_password_wrong", "current_password")
    check_password(new, "new_password")
    with ctx.session(read_only=True) as s:
        stored = s.get(User, actor.user_id).password_hash  # type: ignore[union-attr]
    if stored is None:
        raise Conflict("auth.password_none", "current_password")
    if not sign_in.checked_password(stored, current):
        raise InvalidInput("auth.current_password_wrong", "current_password")
    if new == current:
        raise InvalidInput("auth.password_unchanged", "new_password")
    new_hash = hash_password(new)  # type: ignore[arg-type]
    with ctx.session() as s:
        user = s.get(User, actor.user_id)
        user.password_hash = new_hash  # type: ignore[union-attr]
        s.add(user)
        keep = hash_token(session_secret) if session_secret else None
        ended = console_sessions.end_user_sessions(s, actor.user_id, keep)
        oplog.record(s, actor, "user:password", actor.username, code="auth.password_changed", args={"ended": ended})
    identity.forget_user(ctx, actor.user_id)
    return ended


def reset_password(ctx: ServiceContext, actor: Actor, username: object, new: object) -> int:
    """Set the password of another account (platform admins), ending all its console sessions and login tokens.

    Returns:
        How many sessions and login tokens were ended.

    Raises:
        Forbidden: not a platform admin (``account.admins_only``), or one's own account (``auth.reset_own``:
            change it with the current password instead).
        NotFound: ``account.not_found``. InvalidInput: the password breaks the rule (``new_password``).
        Conflict: ``auth.password_none``: the account signs in with single sign-on only (it is never given a
            password, which would add a second way into it).
    """
    if not actor.is_admin:
        raise Forbidden("account.admins_only")
    check_password(new, "new_password")
    new_hash = hash_password(new)  # type: ignore[arg-type] - before the transaction: argon2 takes ~0.1 s
    with ctx.session() as s:
        user = user_by_name(s, username) if isinstance(username, str) and is_text(username) else None
        if user is None:
            raise NotFound("account.not_found", "username", username=str(username)[:MAX_USERNAME_CHARS])
        if not can_reset_password(actor, user.id):  # type: ignore[arg-type]
            raise Forbidden("auth.reset_own", "username")
        if user.password_hash is None:
            raise Conflict("auth.password_none", "username")
        user.password_hash = new_hash
        s.add(user)
        ended = console_sessions.end_user_sessions(s, user.id)  # type: ignore[arg-type]
        oplog.record(s, actor, "user:password", user.username, code="auth.password_reset", args={"ended": ended})
        user_id = user.id
    identity.forget_user(ctx, user_id)  # type: ignore[arg-type]
    return ended


def has_password(ctx: ServiceContext, actor: Actor) -> bool:
    """Whether the caller's account has a local password (single sign-on accounts have none to change)."""
    with ctx.session(read_only=True) as s:
        user = s.get(User, actor.user_id)
        return user is not None and user.password_hash is not None
