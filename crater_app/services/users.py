"""Accounts: the first admin, local accounts (created by admins or by self sign-up), their administration (role,
status, per-user limits) and the caller's own record. Signing in is in :mod:`crater_app.services.sign_in`, console
sessions in :mod:`crater_app.services.console_sessions`, who a request is in :mod:`crater_app.services.identity`.

User names are Unicode (:func:`crater_app.domain.naming.check_username`) and unique after NFKC case folding; every
lookup by name compares keys, so ``Alice`` finds ``alice``.
"""

from __future__ import annotations

import secrets

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from crater_app.auth.passwords import check_password, hash_password
from crater_app.db.models import ApiToken, Project, ProjectMember, User
from crater_app.db.queries.users import confusable_with, user_by_name
from crater_app.domain import field_paths
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, NotFound
from crater_app.domain.jobs import parse_duration
from crater_app.domain.naming import (
    MAX_USERNAME_CHARS, check_text, check_username, is_text, username_key, username_skeleton,
)
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
from crater_app.domain.times import utcnow
from crater_app.schemas import UserDetail, UserPublic
from crater_app.services import admission, console_sessions, identity, oplog
from crater_app.services.context import ServiceContext

DEFAULT_PROJECT = "default"
#: the largest per-user limits an admin may set (a limit above them is no limit at all)
MAX_SESSIONS_LIMIT = 1000
MAX_ACCELERATORS_LIMIT = 1024
#: the longest display name and e-mail address of an account, in characters (local, sign-up and single sign-on)
MAX_DISPLAY_NAME_CHARS = 128
MAX_EMAIL_CHARS = 254  # RFC 5321's longest forward path
ADMIN_USERNAME = "admin"
#: the fields :func:`update_user` changes (the ``PATCH /users/{name}`` body)
USER_UPDATE_FIELDS = (*USER_STANDING_FIELDS, *USER_LIMIT_FIELDS)


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
            oplog.record(s, None, "project:create", DEFAULT_PROJECT, code="account.default_project")
        return project.id  # type: ignore[return-value]


def ensure_admin(ctx: ServiceContext, password: str | None) -> str | None:
    """Create the first admin (``admin``) unless one exists.

    Args:
        password: the admin's password; ``None``/empty generates a random one.

    Returns:
        The generated password (to print once) or ``None`` when the admin existed or a password was given.
    """
    project_id = ensure_default_project(ctx)
    with ctx.session(read_only=True) as s:
        if user_by_name(s, ADMIN_USERNAME) is not None:
            return None
    generated = None
    if not password:
        generated = password = secrets.token_urlsafe(12)
    _insert_user(ctx, None, ADMIN_USERNAME, password, "admin", "Administrator", "", project_id)
    return generated


def _insert_user(ctx: ServiceContext, actor: Actor | None, username: str, password: str, role: str,
                 display_name: str, email: str, project_id: int, status: str = "active",
                 action: str = "user:create") -> UserPublic:
    password_hash = hash_password(password)  # before the transaction: argon2 takes ~0.1 s
    with ctx.session() as s:
        twin = confusable_with(s, username)
        if twin is not None:
            raise Conflict("account.confusable", "username", username=username, existing=twin)
        user = User(
            username=username, username_key=username_key(username), username_skeleton=username_skeleton(username),
            display_name=display_name, email=email, password_hash=password_hash, role=role, status=status,
            default_project_id=project_id,
        )
        s.add(user)
        try:
            s.flush()
        except IntegrityError:
            raise Conflict("account.exists", "username", username=username) from None
        if status == "active":  # a pending account joins at activation (update_user), so member lists stay true
            s.add(ProjectMember(project_id=project_id, user_id=user.id, role="admin" if role == "admin" else "member"))
        if action == "user:signup":
            oplog.record(s, actor, action, username, code="account.signed_up", args={"role": role, "status": status})
        else:
            oplog.record(s, actor, action, username, code="account.created", args={"role": role, "status": status})
        return _public(user, DEFAULT_PROJECT)


def _check_choice(value: object, choices: tuple[str, ...], field: str) -> str:
    """``value`` when it is one of ``choices``; else :class:`InvalidInput` naming ``field`` and the choices."""
    if value not in choices:
        raise InvalidInput("account.choice", field, field_name=field, choices=list(choices))
    return value  # type: ignore[return-value]


def is_email(value: str) -> bool:
    """Whether ``value`` is an acceptable account e-mail: empty, or text of at most 254 characters with an ``@``."""
    return len(value) <= MAX_EMAIL_CHARS and (not value or "@" in value) and is_text(value)


def _check_account_fields(username: object, password: object, display_name: object, email: object,
                          role: object = "user") -> str:
    """The rules of a new local account (see :func:`create_user`); the user name in NFC form. Raises
    :class:`InvalidInput` naming the field."""
    name = check_username(username, "username")
    check_password(password, "password")
    _check_choice(role, PLATFORM_ROLES, "role")
    check_text(display_name, "display_name", MAX_DISPLAY_NAME_CHARS)
    if not isinstance(email, str) or not is_email(email):
        raise InvalidInput("account.email", "email", max=MAX_EMAIL_CHARS)
    return name


def create_user(
    ctx: ServiceContext, actor: Actor, username: object, password: object, role: object = "user",
    display_name: object = "", email: object = "",
) -> UserPublic:
    """Create a local account (platform admins only); it joins the ``default`` project as a member.

    Raises:
        Forbidden: actor is not a platform admin.
        InvalidInput: username not a user name (1..64 Unicode letters, digits, ``. _ - @``), password shorter
            than 8 or longer than 1,024 chars, unknown role, over-long display name/email.
        Conflict: the username exists (compared after NFKC case folding: ``Alice`` is ``alice``;
            ``account.exists``), or looks like an existing one (``account.confusable``, ``existing``: ``аlice`` with a
            Cyrillic а beside ``alice``; ``domain.naming.username_skeleton``). Two confusable names created at the
            very same moment are not caught (the index on the skeleton is not unique).
    """
    if not can_manage_users(actor):
        raise Forbidden("account.admins_only")
    name = _check_account_fields(username, password, display_name, email, role)
    project_id = ensure_default_project(ctx)
    return _insert_user(ctx, actor, name, password, role, display_name, email, project_id)  # type: ignore[arg-type]


def list_users(ctx: ServiceContext, actor: Actor) -> list[UserPublic]:
    """All users, by name (platform admins only). Raises :class:`Forbidden` otherwise."""
    if not can_manage_users(actor):
        raise Forbidden("account.admins_only")
    with ctx.session(read_only=True) as s:
        projects = {p.id: p.name for p in s.exec(select(Project))}
        return [_public(u, projects.get(u.default_project_id)) for u in s.exec(select(User).order_by(User.username))]


def me(ctx: ServiceContext, actor: Actor) -> UserPublic:
    """The actor's own user record."""
    with ctx.session(read_only=True) as s:
        user = s.get(User, actor.user_id)
        project = s.get(Project, user.default_project_id) if user.default_project_id else None
        return _public(user, project.name if project else None)


def signup(ctx: ServiceContext, username: object, password: object, email: object = "",
           display_name: object = "") -> UserPublic:
    """Create a local account for oneself when ``settings.signup_enabled``; it is ``pending`` (role ``user``) and
    cannot sign in until an admin sets its status to ``active``.

    The account's ``default_project`` is ``default``, but it is not a *member* of it while pending: member lists
    show only people who can work. :func:`update_user` adds the membership (role ``member``) when an admin first
    activates the account (pending -> active); an account an admin rejects (pending -> disabled) never joins.

    Raises:
        Forbidden: self sign-up is off. InvalidInput: as :func:`create_user` (username, password 8..1,024 chars,
        display_name, email; field named). Conflict: the username exists or looks like an existing one.
    """
    if not can_sign_up(ctx.settings.signup_enabled):
        raise Forbidden("account.signup_off")
    name = _check_account_fields(username, password, display_name, email)
    project_id = ensure_default_project(ctx)
    return _insert_user(ctx, None, name, password, "user", display_name, email, project_id,  # type: ignore[arg-type]
                        status="pending", action="user:signup")


def _detail(user: User, project_name: str | None) -> UserDetail:
    sign_in = "+".join(k for k, on in (("password", user.password_hash), ("oidc", user.oidc_subject)) if on)
    return UserDetail(
        **_public(user, project_name).model_dump(), max_sessions=user.max_sessions,
        max_accelerators_per_job=user.max_accelerators_per_job, max_runtime_s=user.max_runtime_s,
        sign_in=sign_in or "none", oidc_issuer=user.oidc_issuer,
    )


def _named(s, username: object, lock: bool = False) -> User:
    """The user called ``username`` (by key). Raises :class:`NotFound` ``account.not_found``."""
    user = user_by_name(s, username, lock) if isinstance(username, str) and is_text(username) else None
    if user is None:
        raise NotFound("account.not_found", "username", username=str(username)[:MAX_USERNAME_CHARS])
    return user


def get_user(ctx: ServiceContext, actor: Actor, username: str) -> UserDetail:
    """One account with its limits and sign-in method (platform admins); ``username`` compared by key.

    Raises:
        Forbidden: not a platform admin. NotFound: no such user.
    """
    if not can_read_user(actor):
        raise Forbidden("account.admins_only")
    with ctx.session(read_only=True) as s:
        user = _named(s, username)
        project = s.get(Project, user.default_project_id) if user.default_project_id else None
        return _detail(user, project.name if project else None)


def _limit(value: object, field: str, ceiling: int) -> int | None:
    """A per-user count limit: ``None`` (clears it: the platform default applies) or an integer 0..``ceiling``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= ceiling:
        raise InvalidInput("account.limit", field, field_name=field, max=ceiling)
    return value


def _changes(changes: object) -> dict[str, object]:
    """The checked values of an :func:`update_user` body (field name -> new value; ``max_runtime`` seconds)."""
    if not isinstance(changes, dict) or not changes:
        raise InvalidInput("account.no_change", None, fields=list(USER_UPDATE_FIELDS))
    unknown = sorted(str(k) for k in changes if k not in USER_UPDATE_FIELDS)
    if unknown:
        raise InvalidInput("account.unknown_field", field_paths.key(None, unknown[0]), field_name=field_paths.shown(unknown[0]),
                           allowed=sorted(USER_UPDATE_FIELDS))
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
    return values


def update_user(ctx: ServiceContext, actor: Actor, username: str, changes: dict) -> UserDetail:
    """Change an account (platform admins): any of ``role`` (admin|user|guest), ``status``
    (active|pending|disabled), ``max_sessions`` (0..1,000), ``max_accelerators_per_job`` (0..1,024) and
    ``max_runtime`` (seconds or a duration such as ``"12h"``, 1 s..30 days); ``None`` clears a limit.

    All changes apply together or not at all. An admin cannot change their own role or status, and the last
    active platform admin cannot be demoted or disabled (the admins' rows are locked while counting, so two
    admins demoting each other at once cannot both succeed). Disabling ends every console session and revokes
    every login and personal token of the account at once, in every process (sessions are checked on every
    request; tokens are cached for at most 5 s elsewhere). Activating a self-signed-up account (``pending`` ->
    ``active``) makes it a ``member`` of its default project (see :func:`signup`) unless it already is one. One
    operation-log row ``user:update`` lists the changes (``field: before -> after``, a cleared limit ``none``).

    Raises:
        Forbidden: not a platform admin, or one's own role/status (field named). NotFound: no such user.
        InvalidInput: an unknown field, an empty change, or a value out of range (field named).
        Conflict: the change would leave no active platform admin.
    """
    if not can_read_user(actor):
        raise Forbidden("account.admins_only")
    values = _changes(changes)
    with ctx.session() as s:
        user = _named(s, username)
        for name in ("role", "status"):
            if name in values and values[name] != getattr(user, name) and not can_change_user(actor, user.id, name):
                raise Forbidden("account.own_standing", name, field_name=name)
        stays_admin = values.get("role", user.role) == "admin" and values.get("status", user.status) == "active"
        if user.role == "admin" and user.status == "active" and not stays_admin:
            admins = s.exec(select(User.id).where(User.role == "admin", User.status == "active")  # type: ignore[call-overload]
                            .with_for_update()).all()
            if not [a for a in admins if a != user.id]:
                raise Conflict("account.last_admin", "role" if "role" in values and values["role"] != "admin"
                               else "status", username=user.username)
        before = {k: getattr(user, k) for k in values}
        for key, value in values.items():
            setattr(user, key, value)
        s.add(user)
        changed = [f"{k}: {oplog.value(before[k])} -> {oplog.value(v)}" for k, v in values.items() if before[k] != v]
        name = user.username
        if values.get("status") == "disabled" and before.get("status") != "disabled":
            ended = console_sessions.end_user_sessions(s, user.id)  # type: ignore[arg-type]
            ended += s.exec(update(ApiToken).where(  # type: ignore[call-overload]
                ApiToken.user_id == user.id, ApiToken.revoked_at.is_(None)  # type: ignore[union-attr]
            ).values(revoked_at=utcnow())).rowcount
            oplog.record(s, actor, "user:update", name, code="account.disabled", args={"changes": changed,
                                                                                       "ended": ended})
        elif (before.get("status") == "pending" and values.get("status") == "active" and user.default_project_id
              and s.get(ProjectMember, (user.default_project_id, user.id)) is None):
            s.add(ProjectMember(project_id=user.default_project_id, user_id=user.id, role="member"))
            oplog.record(s, actor, "user:update", name, code="account.activated", args={"changes": changed})
        elif changed:
            oplog.record(s, actor, "user:update", name, code="account.updated", args={"changes": changed})
        else:
            oplog.record(s, actor, "user:update", name, code="account.unchanged")
        project = s.get(Project, user.default_project_id) if user.default_project_id else None
        result = _detail(user, project.name if project else None)
    identity.forget_user(ctx, result.id)
    admission.invalidate(ctx)  # limits and standing feed admission: re-decide held jobs
    return result
