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
from crater_app.schemas import TokenPublic, UserDetail, UserPublic
from crater_app.db.types import utcnow
from crater_app.domain.errors import Busy, Conflict, Forbidden, InvalidInput, NotFound, Unauthenticated
from crater_app.domain.jobs import parse_duration
from crater_app.domain.naming import check_dns1123_label, check_text, is_text, username_key
from crater_app.domain.policy import (
    PLATFORM_ROLES,
    USER_LIMIT_FIELDS,
    USER_STANDING_FIELDS,
    USER_STATUSES,
    Actor,
    can_change_user,
    can_manage_users,
    can_read_user,
    can_sign_up,
)
from crater_app.services import admission, oplog
from crater_app.services.context import ServiceContext

DEFAULT_PROJECT = "default"
#: ``ApiToken.kind`` of a one-time login code (the console's hand-over after single sign-on); never a bearer token
LOGIN_CODE_KIND = "sso"
LOGIN_CODE_TTL_S = 60
#: the largest per-user limits an admin may set (a limit above them is no limit at all)
MAX_SESSIONS_LIMIT = 1000
MAX_ACCELERATORS_LIMIT = 1024
#: the longest display name and e-mail address of an account, in characters (local, sign-up and single sign-on)
MAX_DISPLAY_NAME_CHARS = 128
MAX_EMAIL_CHARS = 254  # RFC 5321's longest forward path
ADMIN_USERNAME = "admin"
#: the fields :func:`update_user` changes (the ``PATCH /users/{name}`` body)
USER_UPDATE_FIELDS = (*USER_STANDING_FIELDS, *USER_LIMIT_FIELDS)
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


class AccountNotActive(Unauthenticated):
    """The password (or the identity provider) was right but the account cannot sign in: ``status`` is
    ``pending`` (a sign-up waiting for an administrator) or ``disabled``. HTTP 401; only said after the credentials
    were checked, so it discloses nothing to someone without them."""

    def __init__(self, status: str) -> None:
        message = ("your account is waiting for an administrator's approval" if status == "pending"
                   else "your account is disabled; ask an administrator")
        super().__init__(message, None)
        self.status = status


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


def _insert_user(ctx, actor, username, password, role, display_name, email, project_id, status="active",
                 action="user:create") -> UserPublic:
    with ctx.session() as s:
        user = User(
            username=username, username_key=username_key(username), display_name=display_name, email=email, password_hash=hash_password(password),
            role=role, status=status, default_project_id=project_id,
        )
        s.add(user)
        try:
            s.flush()
        except IntegrityError:
            raise Conflict(f"user '{username}' already exists", "username") from None
        if status == "active":  # a pending account joins at activation (update_user), so member lists stay true
            s.add(ProjectMember(project_id=project_id, user_id=user.id, role="admin" if role == "admin" else "member"))
        oplog.record(s, actor, action, username, details=f"role={role} status={status}")
        return _public(user, DEFAULT_PROJECT)


def _check_choice(value: object, choices: tuple[str, ...], field: str) -> str:
    """``value`` when it is one of ``choices``; else :class:`InvalidInput` naming ``field`` and the choices."""
    if value not in choices:
        raise InvalidInput(f"{field} must be one of {', '.join(choices)}", field)
    return value  # type: ignore[return-value]


def is_email(value: str) -> bool:
    """Whether ``value`` is an acceptable account e-mail: empty, or text of at most 254 characters with an ``@``."""
    return len(value) <= MAX_EMAIL_CHARS and (not value or "@" in value) and is_text(value)


def _check_account_fields(username: object, password: object, display_name: object, email: object,
                          role: object = "user") -> None:
    """The rules of a new local account (see :func:`create_user`); raises :class:`InvalidInput` naming the field."""
    check_dns1123_label(username, "username")
    if not isinstance(password, str) or not MIN_PASSWORD_CHARS <= len(password) <= MAX_PASSWORD_CHARS or not is_text(password):
        raise InvalidInput(
            f"password must be {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters", "password"
        )
    _check_choice(role, PLATFORM_ROLES, "role")
    check_text(display_name, "display_name", MAX_DISPLAY_NAME_CHARS)
    if not isinstance(email, str) or not is_email(email):
        raise InvalidInput(f"email must be an address of at most {MAX_EMAIL_CHARS} characters", "email")


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
    _check_account_fields(username, password, display_name, email, role)
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
        raise AccountNotActive(user.status)
    with ctx.session() as s:
        return start_session(ctx, s, user, "auth:login")


def start_session(ctx: ServiceContext, s, user: User, action: str, details: str = "") -> TokenPublic:
    """Issue a session token for ``user`` (an active account) valid ``settings.token_ttl_s`` seconds, in the
    session ``s``, with an operation-log row ``action`` (``auth:login``, ``auth:oidc``)."""
    secret, digest = new_token()
    expires = utcnow() + timedelta(seconds=ctx.settings.token_ttl_s)
    s.add(ApiToken(user_id=user.id, token_hash=digest, kind="session", expires_at=expires))
    oplog.record(s, Actor(user.id, user.username, user.role), action, user.username, details=details)
    return TokenPublic(access_token=secret, expires_at=expires)


def issue_login_code(s, user_id: int) -> str:
    """A one-time login code for ``user_id`` (in session ``s``): stored as a SHA-256 digest in ``api_tokens`` with
    kind ``sso``, valid 60 s, revoked when redeemed; never accepted as a bearer token. The console's hand-over
    after single sign-on (see :func:`redeem_login_code`)."""
    secret, digest = new_token()
    s.add(ApiToken(user_id=user_id, token_hash=digest, kind=LOGIN_CODE_KIND,
                   expires_at=utcnow() + timedelta(seconds=LOGIN_CODE_TTL_S)))
    return secret


def redeem_login_code(ctx: ServiceContext, code: object) -> TokenPublic:
    """Exchange a one-time login code from :func:`issue_login_code` for a session token.

    Single use across every process: the code's row is revoked by one conditional ``UPDATE`` (only the
    transaction that changes it gets a session), so a replayed code fails even on another worker.

    Raises:
        InvalidInput: ``code`` not a string of at most 128 characters.
        Unauthenticated: unknown, used or expired (60 s) code. AccountNotActive: the account is not active.
    """
    if not isinstance(code, str) or not code or len(code) > 128 or not is_text(code):
        raise InvalidInput("code must be the one-time sign-in code (a string of at most 128 characters)", "code")
    now = utcnow()
    with ctx.session() as s:
        row = s.exec(select(ApiToken).where(ApiToken.token_hash == hash_token(code),
                                            ApiToken.kind == LOGIN_CODE_KIND)).first()
        if row is None:
            raise Unauthenticated("the sign-in code is unknown; sign in again")
        claimed = s.exec(  # type: ignore[call-overload]
            update(ApiToken).where(ApiToken.id == row.id, ApiToken.revoked_at.is_(None),  # type: ignore[union-attr]
                                   ApiToken.expires_at > now).values(revoked_at=now)
        ).rowcount
        if claimed != 1:
            raise Unauthenticated("the sign-in code was already used or has expired; sign in again")
        user = s.get(User, row.user_id)
        if user is None or user.status != "active":
            raise AccountNotActive(user.status if user is not None else "disabled")
        return start_session(ctx, s, user, "auth:login", details="single sign-on")


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
        if row is None or row.revoked_at is not None or row.kind == LOGIN_CODE_KIND:
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


# --- Self sign-up and administration of accounts (issue 3) ------------------------------------------------------


def signup(ctx: ServiceContext, username: object, password: object, email: object = "",
           display_name: object = "") -> UserPublic:
    """Create a local account for oneself when ``settings.signup_enabled``; it is ``pending`` (role ``user``) and
    cannot sign in until an admin sets its status to ``active``.

    The account's ``default_project`` is ``default``, but it is not a *member* of it while pending: member lists
    show only people who can work. :func:`update_user` adds the membership (role ``member``) when an admin first
    activates the account (pending -> active); an account an admin rejects (pending -> disabled) never joins.

    Raises:
        Forbidden: self sign-up is off. InvalidInput: as :func:`create_user` (username, password 8..1,024 chars,
        display_name, email; field named). Conflict: the username exists.
    """
    if not can_sign_up(ctx.settings.signup_enabled):
        raise Forbidden("self sign-up is turned off on this Crater; ask an administrator for an account")
    _check_account_fields(username, password, display_name, email)
    project_id = ensure_default_project(ctx)
    return _insert_user(ctx, None, username, password, "user", display_name, email, project_id, status="pending",
                        action="user:signup")


def _detail(user: User, project_name: str | None) -> UserDetail:
    sign_in = "+".join(k for k, on in (("password", user.password_hash), ("oidc", user.oidc_subject)) if on)
    return UserDetail(
        **_public(user, project_name).model_dump(), max_sessions=user.max_sessions,
        max_accelerators_per_job=user.max_accelerators_per_job, max_runtime_s=user.max_runtime_s,
        sign_in=sign_in or "none", oidc_issuer=user.oidc_issuer,
    )


def get_user(ctx: ServiceContext, actor: Actor, username: str) -> UserDetail:
    """One account with its limits and sign-in method (platform admins).

    Raises:
        Forbidden: not a platform admin. NotFound: no such user.
    """
    if not can_read_user(actor):
        raise Forbidden("only platform admins may read accounts")
    with ctx.session(read_only=True) as s:
        user = s.exec(select(User).where(User.username == username)).first()
        if user is None:
            raise NotFound(f"no user '{str(username)[:63]}'", "username")
        project = s.get(Project, user.default_project_id) if user.default_project_id else None
        return _detail(user, project.name if project else None)


def _limit(value: object, field: str, ceiling: int) -> int | None:
    """A per-user count limit: ``None`` (clears it: the platform default applies) or an integer 0..``ceiling``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= ceiling:
        raise InvalidInput(f"{field} must be a whole number from 0 to {ceiling}, or null to clear it", field)
    return value


def update_user(ctx: ServiceContext, actor: Actor, username: str, changes: dict) -> UserDetail:
    """Change an account (platform admins): any of ``role`` (admin|user|guest), ``status``
    (active|pending|disabled), ``max_sessions`` (0..1,000), ``max_accelerators_per_job`` (0..1,024) and
    ``max_runtime`` (seconds or a duration such as ``"12h"``, 1 s..30 days); ``None`` clears a limit.

    All changes apply together or not at all. An admin cannot change their own role or status, and the last
    active platform admin cannot be demoted or disabled (the admins' rows are locked while counting, so two
    admins demoting each other at once cannot both succeed). Disabling revokes every session and personal
    token of the account and drops it from this process's identity cache (other processes: within 5 s).
    Activating a self-signed-up account (``pending`` -> ``active``) makes it a ``member`` of its default project
    (see :func:`signup`) unless it already is one. One operation-log row ``user:update`` lists the changes
    (``field: before -> after``, a cleared limit written ``none``).

    Raises:
        Forbidden: not a platform admin, or one's own role/status (field named). NotFound: no such user.
        InvalidInput: an unknown field, an empty change, or a value out of range (field named).
        Conflict: the change would leave no active platform admin.
    """
    if not can_read_user(actor):
        raise Forbidden("only platform admins may change accounts")
    if not isinstance(changes, dict) or not changes:
        raise InvalidInput("send at least one of role, status, " + ", ".join(USER_LIMIT_FIELDS))
    allowed = USER_UPDATE_FIELDS
    unknown = sorted(str(k) for k in changes if k not in allowed)
    if unknown:
        raise InvalidInput(f"unknown field '{unknown[0]}'; allowed: {', '.join(sorted(allowed))}", unknown[0])
    values: dict[str, object] = {}
    if "role" in changes:
        values["role"] = _check_choice(changes["role"], PLATFORM_ROLES, "role")
    if "status" in changes:
        values["status"] = _check_choice(changes["status"], USER_STATUSES, "status")
    if "max_sessions" in changes:
        values["max_sessions"] = _limit(changes["max_sessions"], "max_sessions", MAX_SESSIONS_LIMIT)
    if "max_accelerators_per_job" in changes:
        values["max_accelerators_per_job"] = _limit(changes["max_accelerators_per_job"], "max_accelerators_per_job",
                                                    MAX_ACCELERATORS_LIMIT)
    if "max_runtime" in changes:
        values["max_runtime_s"] = parse_duration(changes["max_runtime"], "max_runtime")
    with ctx.session() as s:
        user = s.exec(select(User).where(User.username == username)).first()
        if user is None:
            raise NotFound(f"no user '{str(username)[:63]}'", "username")
        for name in ("role", "status"):
            if name in values and values[name] != getattr(user, name) and not can_change_user(actor, user.id, name):
                raise Forbidden(f"you cannot change the {name} of your own account; ask another admin", name)
        stays_admin = values.get("role", user.role) == "admin" and values.get("status", user.status) == "active"
        if user.role == "admin" and user.status == "active" and not stays_admin:
            admins = s.exec(select(User.id).where(User.role == "admin", User.status == "active")  # type: ignore[call-overload]
                            .with_for_update()).all()
            if not [a for a in admins if a != user.id]:
                raise Conflict(f"'{user.username}' is the last active platform admin; make another admin first",
                               "role" if "role" in values and values["role"] != "admin" else "status")
        before = {k: getattr(user, k) for k in values}
        for key, value in values.items():
            setattr(user, key, value)
        s.add(user)
        changed = {k: v for k, v in values.items() if before[k] != v}
        revoked = 0
        if values.get("status") == "disabled" and before.get("status") != "disabled":
            revoked = s.exec(update(ApiToken).where(  # type: ignore[call-overload]
                ApiToken.user_id == user.id, ApiToken.revoked_at.is_(None)  # type: ignore[union-attr]
            ).values(revoked_at=utcnow())).rowcount
        details = ", ".join(f"{k}: {oplog.value(before[k])} -> {oplog.value(v)}" for k, v in changed.items()) or "no change"
        if before.get("status") == "pending" and values.get("status") == "active" and user.default_project_id:
            if s.get(ProjectMember, (user.default_project_id, user.id)) is None:
                s.add(ProjectMember(project_id=user.default_project_id, user_id=user.id, role="member"))
                details += "; joined its default project as member"
        if revoked:
            details += f"; {revoked} token(s) revoked"
        oplog.record(s, actor, "user:update", user.username, details=details)
        project = s.get(Project, user.default_project_id) if user.default_project_id else None
        result = _detail(user, project.name if project else None)
    forget_user(result.id)
    admission.invalidate(ctx)  # limits and standing feed admission: re-decide held jobs
    return result
