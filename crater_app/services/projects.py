"""Projects (Crater's "accounts") and their members: create, list, read, set a member's role, remove a member.

Rules:
- Only platform admins create projects; projects are never renamed or deleted (other services cache names).
- A project is visible to platform admins and to its members; to anyone else it does not exist (404, so
  that project names are not disclosed). Its member list is shown to platform admins and project admins.
- Platform admins and the project's admins add members, change roles and remove members.
- A user keeps a default project. Adding a user who has none makes the project their default. Removing a
  user from their default project moves their default to their oldest other membership (lowest project id);
  when they have no other membership the removal is refused (409) - add them elsewhere first.
- Every change writes an operation-log row in the same transaction, and drops the user's cached identity so
  that the new role applies from their next request.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from crater_app.db.models import Project, ProjectMember, User
from crater_app.schemas import ProjectMemberPublic, ProjectPublic
from crater_app.db.types import utcnow
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, NotFound
from crater_app.db.queries.users import user_by_name
from crater_app.domain.naming import check_dns1123_label, check_text, check_username
from crater_app.domain.policy import (
    PROJECT_ROLES,
    Actor,
    can_create_project,
    can_manage_members,
    can_read_members,
    can_read_project,
    can_set_share,
)
from crater_app.domain.times import parse_utc
from crater_app.services import admission, identity, oplog, queues, quotas
from crater_app.services.context import ServiceContext

MAX_DISPLAY_NAME_CHARS = 128
MAX_DESCRIPTION_CHARS = 1024


def _public(project: Project, role: str | None, member_count: int,
            members: list[ProjectMemberPublic] | None = None) -> ProjectPublic:
    return ProjectPublic(
        name=project.name, display_name=project.display_name, description=project.description,
        created_at=project.created_at, expires_at=project.expires_at,
        expired=project_expired(project), role=role,
        member_count=member_count, members=members,
    )


def create_project(
    ctx: ServiceContext, actor: Actor, name: object, display_name: object = "", description: object = "",
    expires_at: object = None,
) -> ProjectPublic:
    """Create a project (platform admins). It starts without members.

    Args:
        name: DNS-1123 label, 1..63 characters, unique.
        display_name: at most 128 characters. description: at most 1,024 characters.
        expires_at: ``None`` (never) or an ISO 8601 time with an offset, in the future (stored as UTC).

    Raises:
        Forbidden: ``project.create_forbidden`` (not a platform admin). InvalidInput: a field breaks its rule (field
        named, limit in the arguments; ``project.expiry_past`` for an expiry not in the future). Conflict:
        ``project.exists`` (the name is taken).
    """
    if not can_create_project(actor):
        raise Forbidden("project.create_forbidden")
    check_dns1123_label(name, "name")
    display_name = check_text(display_name, "display_name", MAX_DISPLAY_NAME_CHARS)
    description = check_text(description, "description", MAX_DESCRIPTION_CHARS)
    expiry = None
    if expires_at is not None:
        expiry = parse_utc(expires_at, "expires_at")
        if expiry <= utcnow():
            raise InvalidInput("project.expiry_past", "expires_at", at=expiry.isoformat())
    with ctx.session() as s:
        project = Project(name=name, display_name=display_name, description=description, expires_at=expiry)
        s.add(project)
        try:
            s.flush()
        except IntegrityError:
            raise Conflict("project.exists", "name", name=name) from None
        if expiry is not None:
            oplog.record(s, actor, "project:create", name, code="project.created_expiring",
                         args={"expires_at": expiry.isoformat()})
        else:
            oplog.record(s, actor, "project:create", name)
        result = _public(project, None, 0)
    queues.sync(ctx, [name])
    return result


def list_projects(ctx: ServiceContext, actor: Actor) -> list[ProjectPublic]:
    """Projects by name: every project for platform admins, the caller's own memberships for everyone else,
    each with the caller's project ``role`` and the ``member_count`` (no member lists here)."""
    with ctx.session(read_only=True) as s:
        stmt = select(Project).order_by(Project.name)
        if not actor.is_admin:
            ids = list(actor.project_roles)
            if not ids:
                return []
            stmt = stmt.where(Project.id.in_(ids))  # type: ignore[union-attr]
        projects = list(s.exec(stmt))
        count_stmt = select(ProjectMember.project_id, func.count()).group_by(ProjectMember.project_id)
        if not actor.is_admin:
            count_stmt = count_stmt.where(ProjectMember.project_id.in_([p.id for p in projects]))  # type: ignore[attr-defined]
        counts = dict(s.exec(count_stmt).all())
        return [_public(p, actor.project_roles.get(p.id), counts.get(p.id, 0)) for p in projects]


def _visible_project(s: Session, actor: Actor, name: object) -> Project:
    check_dns1123_label(name, "name")
    project = s.exec(select(Project).where(Project.name == name)).first()
    if project is None or not can_read_project(actor, project.id):
        raise NotFound("project.not_found", "name", name=name)
    return project


def _members(s: Session, project_id: int) -> list[ProjectMemberPublic]:
    rows = s.exec(
        select(ProjectMember, User).where(ProjectMember.project_id == project_id, ProjectMember.user_id == User.id)
        .order_by(User.username)
    ).all()
    return [ProjectMemberPublic(username=u.username, display_name=u.display_name, role=m.role,
                                default=u.default_project_id == project_id, share=dict(m.share or {}))
            for m, u in rows]


def get_project(ctx: ServiceContext, actor: Actor, name: object) -> ProjectPublic:
    """One project; ``members`` is filled for platform admins and the project's admins; ``quota`` (guarantee,
    deserved, capability, admitted usage, admitted/held job counts) for everyone who may read it.

    Raises:
        InvalidInput: ``name`` is not a DNS-1123 label. NotFound: ``project.not_found`` (no such project, or the
        caller is neither a member nor a platform admin).
    """
    with ctx.session(read_only=True) as s:
        project = _visible_project(s, actor, name)
        members = _members(s, project.id)
        shown = members if can_read_members(actor, project.id) else None
        public = _public(project, actor.project_roles.get(project.id), len(members), shown)
        return public.model_copy(update={"quota": quotas.quota_public(s, project)})


def _target_user(s: Session, username: object) -> User:
    check_username(username, "username")
    # Locked (PostgreSQL) so that two concurrent changes cannot both leave the user without a default project.
    user = user_by_name(s, username, lock=True)  # type: ignore[arg-type] - by key: 'Alice' finds 'alice'
    if user is None:
        raise NotFound("project.unknown_user", "username", name=username)
    return user


def _managed_project(s: Session, actor: Actor, name: object) -> Project:
    project = _visible_project(s, actor, name)
    if not can_manage_members(actor, project.id):
        raise Forbidden("project.members_forbidden", project=project.name)
    return project


def set_member(ctx: ServiceContext, actor: Actor, project_name: object, username: object,
               role: object, share: object = None) -> ProjectMemberPublic:
    """Add ``username`` to the project with ``role``, or change their role and/or ``share`` (idempotent).

    ``share`` (optional): the member's ceiling inside the project's capability, a quota resource list
    (``{"nvidia.com/gpu": 2}``; ``{}`` removes it; ``None`` leaves it as it is). ``role`` may be left out
    (``None``) when only the share of an existing member changes.

    A user without a default project gets this one as default. The user's cached identity is dropped, so the
    role applies from their next request.

    Raises:
        InvalidInput: bad name/username, ``project.role`` (``role`` not one of admin, member, viewer),
        ``project.role_required`` (a new member without a role), or a bad ``share`` (field ``share.<key>``: a
        resource or model no node offers, or above the project's capability). NotFound: ``project.not_found`` (not visible to the caller) or
        ``project.unknown_user``. Forbidden: ``project.members_forbidden``/``project.shares_forbidden`` (not a
        platform admin or an admin of the project). Conflict: ``project.last_admin`` (a project admin demoting the
        project's last admin).
    """
    if role is not None and role not in PROJECT_ROLES or role is None and share is None:
        raise InvalidInput("project.role", "role", roles=list(PROJECT_ROLES))
    offered = quotas.offered_resources(ctx) if share is not None else None
    with ctx.session() as s:
        project = _managed_project(s, actor, project_name)
        if share is not None and not can_set_share(actor, project.id):
            raise Forbidden("project.shares_forbidden", project=project.name)
        user = _target_user(s, username)
        member = s.get(ProjectMember, (project.id, user.id))
        new_share = quotas.parse_share(s, project, share, offered, member.share if member else None) \
            if offered is not None else None
        before = member.role if member is not None else None
        if role is None and member is None:
            raise InvalidInput("project.role_required", "role", username=user.username, project=project.name)
        role = role if role is not None else before
        if before == "admin" and role != "admin":
            _check_keeps_an_admin(s, actor, project, user.id)
        share_before = dict(member.share or {}) if member is not None else {}
        if member is None:
            member = ProjectMember(project_id=project.id, user_id=user.id, role=role)
        member.role = role  # type: ignore[assignment]
        if new_share is not None:
            member.share = new_share
        s.add(member)
        if user.default_project_id is None:
            user.default_project_id = project.id
            s.add(user)
        target = f"{project.name}/{user.username}"
        share_changed = new_share is not None and new_share != share_before
        old_share, share_now = quotas.share_usage(share_before), quotas.share_usage(new_share or {})
        if before is None and share_changed:
            oplog.record(s, actor, "project:member:set", target, code="project.member_added_share",
                         args={"role": role, "share": share_now})
        elif before is None:
            oplog.record(s, actor, "project:member:set", target, code="project.member_added", args={"role": role})
        elif before != role and share_changed:
            oplog.record(s, actor, "project:member:set", target, code="project.member_role_share_set",
                         args={"role_before": before, "role": role, "share_before": old_share, "share": share_now})
        elif before != role:
            oplog.record(s, actor, "project:member:set", target, code="project.member_set",
                         args={"role_before": before, "role": role})
        elif share_changed:
            oplog.record(s, actor, "project:member:set", target, code="project.member_share_set",
                         args={"share_before": old_share, "share": share_now})
        result = ProjectMemberPublic(username=user.username, display_name=user.display_name, role=role,  # type: ignore[arg-type]
                                     default=user.default_project_id == project.id, share=dict(member.share or {}))
        user_id = user.id
    identity.forget_user(ctx, user_id)
    if new_share is not None and new_share != share_before:
        admission.invalidate(ctx)
        queues.sync(ctx, [str(project_name)])
    return result


def _check_keeps_an_admin(s, actor: Actor, project: Project, user_id: int) -> None:
    """Refuse (Conflict, field ``role``) when a project admin's change would leave ``project`` without an admin:
    demoting or removing its last admin ``user_id``. Platform admins may (they manage every project anyway)."""
    if actor.is_admin:
        return
    others = s.exec(select(func.count()).select_from(ProjectMember).where(
        ProjectMember.project_id == project.id, ProjectMember.role == "admin", ProjectMember.user_id != user_id,
    )).one()
    if not others:
        raise Conflict("project.last_admin", "role", project=project.name)


def remove_member(ctx: ServiceContext, actor: Actor, project_name: object, username: object) -> None:
    """Remove ``username`` from the project.

    When it was the user's default project, their default moves to their other membership with the lowest
    project id.

    Raises:
        InvalidInput: bad name/username. NotFound: ``project.not_found``, ``project.unknown_user`` or
        ``project.not_a_member``. Forbidden: ``project.members_forbidden``. Conflict: ``project.default_only`` (it
        is the user's default project and they belong to no other project: a user keeps a default project) or
        ``project.last_admin``.
    """
    with ctx.session() as s:
        project = _managed_project(s, actor, project_name)
        user = _target_user(s, username)
        member = s.get(ProjectMember, (project.id, user.id))
        if member is None:
            raise NotFound("project.not_a_member", "username", username=user.username, project=project.name)
        moved_to = ""
        if member.role == "admin":
            _check_keeps_an_admin(s, actor, project, user.id)
        if user.default_project_id == project.id:
            other = s.exec(
                select(ProjectMember.project_id).where(ProjectMember.user_id == user.id,
                                                       ProjectMember.project_id != project.id)
                .order_by(ProjectMember.project_id)
            ).first()
            if other is None:
                raise Conflict("project.default_only", "username", username=user.username, project=project.name)
            user.default_project_id = other
            s.add(user)
            moved_to = s.get(Project, other).name
        s.delete(member)
        target = f"{project.name}/{user.username}"
        if moved_to:
            oplog.record(s, actor, "project:member:remove", target, code="project.member_removed_default_moved",
                         args={"role": member.role, "default_project": moved_to})
        else:
            oplog.record(s, actor, "project:member:remove", target, code="project.member_removed",
                         args={"role": member.role})
        user_id, had_share, name = user.id, bool(member.share), project.name
    identity.forget_user(ctx, user_id)
    if had_share:
        queues.sync(ctx, [name])  # its child queue goes


def project_expired(project: Project, now: datetime | None = None) -> bool:
    """Whether ``project`` has an expiry at or before ``now`` (default: the current UTC time)."""
    return project.expires_at is not None and project.expires_at <= (now or utcnow())
