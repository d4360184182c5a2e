"""Users, login and identity: local accounts (argon2), login tokens, and token -> :class:`Actor`."""

from __future__ import annotations

import functools
import os
import secrets
import threading
import time
from datetime import timedelta

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from crater_app.auth.passwords import MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS, hash_password, verify_password
from crater_app.auth.tokens import hash_token, new_token
from crater_app.db.models import ApiToken, Project, ProjectMember, User
from crater_app.db.schemas import TokenPublic, UserPublic
from crater_app.db.types import utcnow
from crater_app.domain.errors import Busy, Conflict, Forbidden, InvalidInput, Unauthenticated
from crater_app.domain.naming import check_dns1123_label, is_text
from crater_app.domain.policy import PLATFORM_ROLES, Actor, can_manage_users
from crater_app.services import oplog
from crater_app.services.context import ServiceContext

DEFAULT_PROJECT = "default"
ADMIN_USERNAME = "admin"
_CACHE_TTL_S = 5.0  # a revoked or disabled token stops working within this many seconds
_LAST_USED_EVERY_S = 60.0
_cache: dict[str, tuple[float, Actor, float | None]] = {}
_cache_lock = threading.Lock()
_last_used: dict[str, float] = {}
# Password checks at once: each argon2 check holds 64 MiB for ~0.1 s, so 40 concurrent sign-ins (FastAPI's thread
# pool) took the process from 0.3 to 2.5 GB. More than one per core gains no throughput; a sign-in that cannot get
# a slot within _LOGIN_WAIT_S is answered 429 (busy) instead of queueing without bound.
_LOGIN_SLOTS = threading.BoundedSemaphore(max(2, os.cpu_count() or 2))
_LOGIN_WAIT_S = 5.0


@functools.lru_cache(maxsize=1)
def _dummy_hash() -> str:
    """A hash of a random secret, checked against when the user does not exist (constant-time login)."""
    return hash_password(secrets.token_urlsafe(16))


def _public(user: User, project_name: str | None) -> UserPublic:
    return UserPublic(
        id=user.id, username=user.username, display_name=user.display_name, email=user.email, role=user.role,
        status=user.status, default_project=project_name, created_at=user.created_at,
    )


def ensure_default_project(ctx: ServiceContext) -> int:
    """Create the ``default`` project if missing; return its id."""
    with ctx.session() as s:
        project = s.exec(select(Project).where(Project.name == DEFAULT_PROJECT)).first()
        if project is None:
            project = Project(name=DEFAULT_PROJECT, display_name="Default project")
            s.add(project)
            s.flush()
            oplog.record(s, None, "project:create", DEFAULT_PROJECT)
        return project.id


def ensure_admin(ctx: ServiceContext, password: str | None) -> str | None:
    """Create the first admin (``admin``) unless one exists.

    Args:
        password: the admin's password; ``None``/empty generates a random one.

    Returns:
        The generated password (to print once) or ``None`` when the admin existed or a password was given.
    """
    project_id = ensure_default_project(ctx)
    with ctx.session(read_only=True) as s:
        if s.exec(select(User).where(User.username == ADMIN_USERNAME)).first() is not None:
            return None
    generated = None
    if not password:
        generated = password = secrets.token_urlsafe(12)
    _insert_user(ctx, None, ADMIN_USERNAME, password, "admin", "Administrator", "", project_id)
    return generated


def _insert_user(ctx, actor, username, password, role, display_name, email, project_id) -> UserPublic:
    with ctx.session() as s:
        user = User(
            username=username, display_name=display_name, email=email, password_hash=hash_password(password),
            role=role, status="active", default_project_id=project_id,
        )
        s.add(user)
        try:
            s.flush()
        except IntegrityError:
            raise Conflict(f"user '{username}' already exists", "username") from None
        s.add(ProjectMember(project_id=project_id, user_id=user.id, role="admin" if role == "admin" else "member"))
        oplog.record(s, actor, "user:create", username, details=f"role={role}")
        return _public(user, DEFAULT_PROJECT)


def create_user(
    ctx: ServiceContext, actor: Actor, username: object, password: object, role: object = "user",
    display_name: object = "", email: object = "",
) -> UserPublic:
    """Create a local account (platform admins only); it joins the ``default`` project as a member.

    Raises:
        Forbidden: actor is not a platform admin.
        InvalidInput: username not a DNS-1123 label, password shorter than 8 or longer than 1,024 chars,
            unknown role, over-long display name/email.
        Conflict: the username exists.
    """
    if not can_manage_users(actor):
        raise Forbidden("only platform admins may create users")
    check_dns1123_label(username, "username")
    if not isinstance(password, str) or not MIN_PASSWORD_CHARS <= len(password) <= MAX_PASSWORD_CHARS or not is_text(password):
        raise InvalidInput(
            f"password must be {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters", "password"
        )
    if role not in PLATFORM_ROLES:
        raise InvalidInput(f"role must be one of {', '.join(PLATFORM_ROLES)}", "role")
    if not isinstance(display_name, str) or len(display_name) > 128 or not is_text(display_name):
        raise InvalidInput("display_name must be a string of at most 128 characters", "display_name")
    if not isinstance(email, str) or len(email) > 254 or (email and "@" not in email) or not is_text(email):
        raise InvalidInput("email must be an address of at most 254 characters", "email")
    project_id = ensure_default_project(ctx)
    return _insert_user(ctx, actor, username, password, role, display_name, email, project_id)


def list_users(ctx: ServiceContext, actor: Actor) -> list[UserPublic]:
    """All users, by name (platform admins only). Raises :class:`Forbidden` otherwise."""
    if not can_manage_users(actor):
        raise Forbidden("only platform admins may list users")
    with ctx.session(read_only=True) as s:
        projects = {p.id: p.name for p in s.exec(select(Project))}
        return [_public(u, projects.get(u.default_project_id)) for u in s.exec(select(User).order_by(User.username))]


def login(ctx: ServiceContext, username: object, password: object) -> TokenPublic:
    """Check a local password and issue a session token valid ``settings.token_ttl_s`` seconds.

    Raises:
        InvalidInput: username/password missing or not strings (field named).
        Unauthenticated: unknown user, wrong password, or the account is not active (same message for
            the first two so that user names cannot be probed).
    """
    for name, value in (("username", username), ("password", password)):
        if not isinstance(value, str) or not value:
            raise InvalidInput(f"{name} is required and must be a string", name)
        if len(value) > MAX_PASSWORD_CHARS or not is_text(value):
            raise InvalidInput(f"{name} is limited to {MAX_PASSWORD_CHARS} characters of valid text", name)
    with ctx.session(read_only=True) as s:
        user = s.exec(select(User).where(User.username == username)).first()
    # The (deliberately slow) hash check runs outside any transaction, so it holds no database lock.
    # An unknown name costs one hash check too, so response times do not tell which user names exist.
    stored = user.password_hash if user is not None else _dummy_hash()
    if not _LOGIN_SLOTS.acquire(timeout=_LOGIN_WAIT_S):
        raise Busy("too many sign-ins at once; try again in a few seconds")
    try:
        ok = verify_password(stored, password)
    finally:
        _LOGIN_SLOTS.release()
    if not ok or user is None:
        raise Unauthenticated("wrong user name or password")
    if user.status != "active":
        raise Unauthenticated(f"account '{username}' is {user.status}")
    secret, digest = new_token()
    expires = utcnow() + timedelta(seconds=ctx.settings.token_ttl_s)
    with ctx.session() as s:
        s.add(ApiToken(user_id=user.id, token_hash=digest, kind="session", expires_at=expires))
        oplog.record(s, Actor(user.id, user.username, user.role), "auth:login", username)
    return TokenPublic(access_token=secret, expires_at=expires)


def logout(ctx: ServiceContext, token: str) -> None:
    """Revoke the session token ``token`` (unknown tokens are ignored)."""
    digest = hash_token(token)
    with ctx.session() as s:
        row = s.exec(select(ApiToken).where(ApiToken.token_hash == digest)).first()
        if row is not None and row.revoked_at is None:
            row.revoked_at = utcnow()
            s.add(row)
    with _cache_lock:
        _cache.pop(digest, None)


def authenticate(ctx: ServiceContext, token: str | None) -> Actor:
    """Resolve a bearer token to its :class:`Actor` (cached for 5 s).

    Raises:
        Unauthenticated: missing, unknown, expired or revoked token, or a user that is not active.
    """
    if not token:
        raise Unauthenticated("sign in first: send 'Authorization: Bearer <token>'")
    cached = cached_actor(token)
    if cached is not None:
        return cached
    digest = hash_token(token)
    now = time.monotonic()
    with ctx.session(read_only=True) as s:
        row = s.exec(select(ApiToken).where(ApiToken.token_hash == digest)).first()
        if row is None or row.revoked_at is not None:
            raise Unauthenticated("the token is unknown or revoked")
        if row.expires_at is not None and row.expires_at <= utcnow():
            raise Unauthenticated("the token has expired; sign in again")
        user = s.get(User, row.user_id)
        if user is None or user.status != "active":
            raise Unauthenticated("the account is not active")
        roles = {m.project_id: m.role for m in s.exec(select(ProjectMember).where(ProjectMember.user_id == user.id))}
        actor = Actor(user.id, user.username, user.role, roles, user.default_project_id)
        expires = row.expires_at.timestamp() if row.expires_at else None
    if now - _last_used.get(digest, -1e9) > _LAST_USED_EVERY_S:
        with ctx.session() as s:  # its own short write, only once a minute per token
            s.exec(update(ApiToken).where(ApiToken.id == row.id).values(last_used_at=utcnow()))  # type: ignore[call-overload]
        _last_used[digest] = now
    with _cache_lock:
        _cache[digest] = (now, actor, expires)
    return actor


def cached_actor(token: str | None) -> Actor | None:
    """The :class:`Actor` of ``token`` when :func:`authenticate` resolved it less than 5 s ago, else ``None``.

    No I/O, so an async caller can try it before handing :func:`authenticate` to a thread.
    """
    if not token:
        return None
    digest = hash_token(token)
    with _cache_lock:
        hit = _cache.get(digest)
    if hit is not None and time.monotonic() - hit[0] < _CACHE_TTL_S and (hit[2] is None or hit[2] > time.time()):
        return hit[1]
    return None


def me(ctx: ServiceContext, actor: Actor) -> UserPublic:
    """The actor's own user record."""
    with ctx.session(read_only=True) as s:
        user = s.get(User, actor.user_id)
        project = s.get(Project, user.default_project_id) if user.default_project_id else None
        return _public(user, project.name if project else None)


def forget_cached_identities() -> None:
    """Drop the token cache (tests, or after a role change)."""
    with _cache_lock:
        _cache.clear()


def forget_user(user_id: int) -> None:
    """Drop every cached identity of user ``user_id`` from this process's token cache, so that a change of
    their roles, memberships or tokens applies from their next request (other processes within 5 s)."""
    with _cache_lock:
        for digest in [d for d, (_, cached, _) in _cache.items() if cached.user_id == user_id]:
            del _cache[digest]
