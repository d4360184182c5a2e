"""Single sign-on with OpenID Connect: which Crater account a verified identity becomes, its group-mapped project
memberships, and the hand-over to the console. The protocol itself is in ``crater_app.auth.oidc``.

Account rules (documented for admins in the README):

- An identity is the pair (issuer, ``sub``) stored in ``users.oidc_issuer``/``oidc_subject``; a user name or
  e-mail that matches a local account is never used to link accounts (it would let whoever controls a name at
  the provider take over the local account).
- The first sign-in creates the account, ``active`` with platform role ``user``: the provider has already
  authenticated the person and the deployment chose to trust it by configuring it (self sign-up's ``pending``
  gate applies to local sign-ups only). An admin can disable or demote the account like any other; a disabled or
  pending account is refused at its next sign-in.
- The user name comes from ``CRATER_OIDC_USERNAME_CLAIM`` (then the e-mail claim, then ``user``), kept as it is
  when it is a user name (``张三``, ``Zhang.San``, ``zhang.san@corp.example``: see
  :func:`crater_app.domain.naming.check_username`), else derived from it
  (:func:`crater_app.domain.naming.derive_username`: ``Zhang San`` -> ``Zhang-San``); a name whose key (NFKC case
  folded) is taken gets ``-2``, ``-3``, ... E-mail and display name (``name``) are refreshed from the token at
  every sign-in; the user name never changes.
- Groups (``CRATER_OIDC_GROUPS_CLAIM``) map to projects through ``CRATER_OIDC_GROUP_MAPPING``
  (``{"<group>": {"project": "<name>", "role": "admin"|"member"|"viewer"}}``). The mapping is authoritative for
  the projects it names: at every sign-in the account gets the strongest role its groups map to in each such
  project, and loses its membership there when no group maps to it any more (so leaving the group at the
  provider removes the access at the next sign-in). Memberships in projects the mapping does not name are
  never touched, nor is the ``default`` project. A mapped project that does not exist is skipped and named in
  the operation log.

Every sign-in, successful or not, writes one operation-log row ``auth:oidc`` (result ``ok`` or ``error`` with
the step and the error's code); a failed one writes nothing else. A completed sign-in hands over to the console
with a one-time sign-in code (:func:`crater_app.services.sign_in.issue_sign_in_code`), which the callback route
exchanges for the console session cookie.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from crater_app.auth import oidc
from crater_app.auth.keys import derive_key
from crater_app.db.models import Project, ProjectMember, User
from crater_app.db.queries.users import name_taken
from crater_app.domain.naming import MAX_USERNAME_CHARS, derive_username, is_text, username_key, username_skeleton
from crater_app.domain.policy import PROJECT_ROLES, Actor
from crater_app.services import oplog, sign_in, users
from crater_app.services.identity import forget_user
from crater_app.services.context import ServiceContext
from crater_app.settings import Settings

CALLBACK_PATH = "/api/v1/auth/oidc/callback"
_ROLE_STRENGTH = {"viewer": 0, "member": 1, "admin": 2}


@dataclass(frozen=True)
class SignIn:
    """A completed single sign-on: the account's ``username``, the one-time sign-in ``code`` (60 s) that
    :func:`crater_app.services.console_sessions.start_from_code` exchanges for a console session, and the
    ``next_path`` asked for at the start."""

    username: str
    code: str
    next_path: str


def enabled(settings: Settings) -> bool:
    """Whether OIDC sign-in is configured (``CRATER_OIDC_ISSUER`` and ``CRATER_OIDC_CLIENT_ID`` set)."""
    return bool(settings.oidc_issuer and settings.oidc_client_id)


def provider_settings(settings: Settings, base_url: str = "") -> oidc.ProviderSettings:
    """The provider settings; the callback URL is ``CRATER_OIDC_REDIRECT_URL`` or ``<base_url>`` + the callback
    path (``base_url``: the URL the browser reached Crater at, from the request)."""
    redirect = settings.oidc_redirect_url or base_url.rstrip("/") + CALLBACK_PATH
    return oidc.ProviderSettings(
        issuer=settings.oidc_issuer, client_id=settings.oidc_client_id, client_secret=settings.oidc_client_secret,
        redirect_url=redirect, scopes=settings.oidc_scopes, discovery_url=settings.oidc_discovery_url,
    )


def _key(settings: Settings) -> bytes:
    return derive_key(settings.secret_key, settings.data_dir, "oidc-pending-login")


def _require_enabled(settings: Settings) -> None:
    if not enabled(settings):
        raise oidc.OidcError("oidc.disabled", "disabled")


def safe_next(next_path: object) -> str:
    """``next_path`` when it is a path on this site (``/jobs``), else ``""`` (no open redirect)."""
    if isinstance(next_path, str) and next_path.startswith("/") and not next_path.startswith("//") \
            and "\\" not in next_path and len(next_path) <= 512 and next_path.isprintable():
        return next_path
    return ""


def start(ctx: ServiceContext, base_url: str = "", next_path: object = "") -> tuple[str, str]:
    """Begin a sign-in: ``(authorization_url, sealed_pending_login)``; nothing is written.

    Raises:
        OidcError: ``disabled`` (OIDC off) or ``config`` (the discovery document cannot be read or is wrong).
    """
    _require_enabled(ctx.settings)
    return oidc.begin(provider_settings(ctx.settings, base_url), _key(ctx.settings), safe_next(next_path))


def complete(ctx: ServiceContext, sealed: str | None, params: dict[str, str], base_url: str = "") -> SignIn:
    """Finish a sign-in from the callback: verify it (``auth.oidc``), find or create the account, apply the group
    mapping and issue a one-time console code, all in one transaction with an ``auth:oidc`` ok row.

    Raises:
        OidcError: the login failed (``reason`` says where); only an ``auth:oidc`` error row is written.
    """
    try:
        _require_enabled(ctx.settings)
        mapping = group_mapping(ctx.settings)
        pending = oidc.open_pending(sealed, _key(ctx.settings))
        wanted = (ctx.settings.oidc_username_claim, ctx.settings.oidc_email_claim, ctx.settings.oidc_groups_claim)
        identity = oidc.finish(provider_settings(ctx.settings, base_url), pending, params, wanted)
        return _sign_in(ctx, identity, mapping, pending.next_path)
    except oidc.OidcError as exc:
        with ctx.session() as s:
            oplog.record(s, None, "auth:oidc", ctx.settings.oidc_issuer or "-", result="error",
                         details=f"{exc.reason}: {exc.message}", code="auth.oidc_failed",
                         args={"reason": exc.reason, "error": exc.code})
        raise


def group_mapping(settings: Settings) -> dict[str, tuple[str, str]]:
    """``CRATER_OIDC_GROUP_MAPPING`` as ``{group: (project, role)}``.

    Raises:
        OidcError(config): not a JSON object of ``{"project": <name>, "role": admin|member|viewer}`` objects.
    """
    try:
        raw = json.loads(settings.oidc_group_mapping or "{}")
    except ValueError as exc:
        raise oidc.OidcError("oidc.mapping_json", "config", detail=str(exc)[:200]) from None
    if not isinstance(raw, dict):
        raise oidc.OidcError("oidc.mapping_not_object", "config")
    out: dict[str, tuple[str, str]] = {}
    for group, target in raw.items():
        if not isinstance(target, dict) or not isinstance(target.get("project"), str) \
                or target.get("role", "member") not in PROJECT_ROLES:
            raise oidc.OidcError("oidc.mapping_entry", "config", group=str(group)[:200], roles=list(PROJECT_ROLES))
        out[group] = (target["project"], target.get("role", "member"))
    return out


def _claim_text(claims: dict, name: str, limit: int) -> str:
    value = claims.get(name) if name else None
    return value[:limit] if isinstance(value, str) else ""


def _free_username(s, wanted: str) -> str:
    """``wanted``, or ``wanted-2``, ``wanted-3``, ... the first whose key no account has and that looks like no
    account's name (``db.queries.users.name_taken``; cut to stay within 64 characters). Raises :class:`OidcError` (``oidc.account_conflict``) after 1,000 taken names."""
    if not name_taken(s, wanted):
        return wanted
    for n in range(2, 1002):
        suffix = f"-{n}"
        candidate = wanted[:MAX_USERNAME_CHARS - len(suffix)].rstrip("-") + suffix
        if not name_taken(s, candidate):
            return candidate
    raise oidc.OidcError("oidc.account_conflict", "account")


def _sign_in(ctx: ServiceContext, identity: oidc.Identity, mapping: dict[str, tuple[str, str]],
             next_path: str) -> SignIn:
    """:func:`_sign_in_once`, again when a concurrent sign-in created the same account or took the same user name
    first (the unique indexes on (issuer, subject) and on the user name decide; the retry then finds the row)."""
    for attempt in range(3):
        try:
            return _sign_in_once(ctx, identity, mapping, next_path)
        except IntegrityError:
            if attempt == 2:
                raise oidc.OidcError("oidc.account_conflict", "account") from None
    raise AssertionError("unreachable")


def _groups(raw: object) -> set[str]:
    """The groups claim as a set: a list of names (non-strings ignored) or a single name."""
    if isinstance(raw, str):
        return {raw}
    return {g for g in raw if isinstance(g, str)} if isinstance(raw, list) else set()


def _sign_in_once(ctx: ServiceContext, identity: oidc.Identity, mapping: dict[str, tuple[str, str]],
                  next_path: str) -> SignIn:
    settings = ctx.settings
    claims = identity.claims
    email = _claim_text(claims, settings.oidc_email_claim, users.MAX_EMAIL_CHARS)
    if not users.is_email(email):
        email = ""
    display_name = _claim_text(claims, "name", users.MAX_DISPLAY_NAME_CHARS)
    if not is_text(display_name):  # a NUL or lone surrogate no database column can store
        display_name = ""
    groups = _groups(claims.get(settings.oidc_groups_claim) if settings.oidc_groups_claim else None)
    default_project_id = users.ensure_default_project(ctx)
    with ctx.session() as s:
        user = s.exec(select(User).where(User.oidc_issuer == identity.issuer,
                                         User.oidc_subject == identity.subject)).first()
        created = user is None
        if user is None:
            base = derive_username(_claim_text(claims, settings.oidc_username_claim, 255) or email or "user")
            username = _free_username(s, base)
            user = User(username=username, username_key=username_key(username),
                        username_skeleton=username_skeleton(username), display_name=display_name, email=email,
                        password_hash=None, role="user", status="active", default_project_id=default_project_id,
                        oidc_issuer=identity.issuer, oidc_subject=identity.subject[:255])
            s.add(user)
            s.flush()
            s.add(ProjectMember(project_id=default_project_id, user_id=user.id, role="member"))
            oplog.record(s, None, "user:create", user.username, code="account.created_by_oidc",
                         args={"issuer": identity.issuer})
        elif user.status != "active":
            if user.status == "pending":
                raise oidc.OidcError("auth.account_pending", "account")
            raise oidc.OidcError("auth.account_disabled", "account")
        else:
            user.email = email or user.email
            user.display_name = display_name or user.display_name
            s.add(user)
        notes = _apply_groups(s, user, groups, mapping)
        s.flush()
        code = sign_in.issue_sign_in_code(s, user.id)
        who = Actor(user.id, user.username, user.role)
        subject, memberships = identity.subject[:80], notes or ["-"]
        oplog.record(s, who, "auth:oidc", user.username,
                     code="auth.oidc_signed_in_new" if created else "auth.oidc_signed_in",
                     args={"issuer": identity.issuer, "subject": subject, "groups": memberships})
        username = user.username
    forget_user(ctx, user.id)
    return SignIn(username=username, code=code, next_path=next_path)


def _apply_groups(s, user: User, groups: set[str], mapping: dict[str, tuple[str, str]]) -> list[str]:
    """Make the user's memberships in the mapped projects follow ``groups`` (see the module docstring); return
    the changes for the operation log, language-neutral: ``ml: none -> member`` (joined), ``ml: viewer -> admin``,
    ``ml: member -> none`` (left), ``nosuch: ? (group)`` (a mapped project that does not exist)."""
    if not mapping:
        return []
    names = {project for project, _ in mapping.values()}
    projects = {p.name: p for p in s.exec(select(Project).where(Project.name.in_(names)))}  # type: ignore[attr-defined]
    wanted: dict[int, str] = {}
    notes = []
    for group, (project_name, role) in sorted(mapping.items()):
        if group not in groups:
            continue
        project = projects.get(project_name)
        if project is None:
            notes.append(f"{project_name}: ? ({group})")
            continue
        if _ROLE_STRENGTH[role] > _ROLE_STRENGTH.get(wanted.get(project.id, ""), -1):
            wanted[project.id] = role
    current = {m.project_id: m for m in s.exec(select(ProjectMember).where(ProjectMember.user_id == user.id))}
    by_id = {p.id: p.name for p in projects.values()}
    for project_id, role in sorted(wanted.items()):
        member = current.get(project_id)
        if member is None:
            s.add(ProjectMember(project_id=project_id, user_id=user.id, role=role))
            notes.append(f"{by_id[project_id]}: none -> {role}")
        elif member.role != role:
            notes.append(f"{by_id[project_id]}: {member.role} -> {role}")
            member.role = role
            s.add(member)
    for project_id, member in current.items():
        if project_id in by_id and project_id not in wanted and project_id != user.default_project_id \
                and by_id[project_id] != users.DEFAULT_PROJECT:
            s.delete(member)
            notes.append(f"{by_id[project_id]}: {member.role} -> none")
    return notes
