"""Who may do what: the single permission table (DESIGN.md §4). Pure; services ask it before acting.

Platform roles: ``admin`` (everything), ``user`` (own work in projects they belong to), ``guest``
(read-only). Project roles: ``admin`` (all jobs of the project), ``member`` (own jobs), ``viewer``
(read the project's jobs, submit nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

PLATFORM_ROLES = ("admin", "user", "guest")
PROJECT_ROLES = ("admin", "member", "viewer")
USER_STATUSES = ("active", "pending", "disabled")


@dataclass(frozen=True)
class Actor:
    """The identity behind a request: ``user_id``, ``username``, platform ``role``, ``project_roles``
    (project id -> project role) and ``default_project_id``."""

    user_id: int
    username: str
    role: str
    project_roles: dict[int, str] = field(default_factory=dict)
    default_project_id: int | None = None

    @property
    def is_admin(self) -> bool:
        """Platform admin."""
        return self.role == "admin"


def can_submit(actor: Actor, project_id: int) -> bool:
    """``job:create`` in ``project_id``: platform admin, or a non-guest with project role admin/member."""
    if actor.is_admin:
        return True
    return actor.role != "guest" and actor.project_roles.get(project_id) in ("admin", "member")


def can_read_job(actor: Actor, owner_id: int, project_id: int) -> bool:
    """``job:read`` (status, events, logs): admin, the owner, or project admin/viewer of its project."""
    return actor.is_admin or actor.user_id == owner_id or actor.project_roles.get(project_id) in ("admin", "viewer")


def can_cancel_job(actor: Actor, owner_id: int, project_id: int) -> bool:
    """``job:cancel``: platform admin, the owner (not a guest), or the project's admin."""
    if actor.is_admin or actor.project_roles.get(project_id) == "admin":
        return True
    return actor.user_id == owner_id and actor.role != "guest"


def readable_projects(actor: Actor) -> list[int]:
    """Projects whose every job ``actor`` may read (project admin/viewer); platform admins read all."""
    return sorted(p for p, r in actor.project_roles.items() if r in ("admin", "viewer"))


def can_manage_users(actor: Actor) -> bool:
    """``user:create``/``user:list``: platform admins only."""
    return actor.is_admin


def can_read_nodes(actor: Actor) -> bool:
    """``node:read``: every signed-in active user (the new-job form needs the models)."""
    return actor.role in PLATFORM_ROLES


# --- Projects, members, personal tokens, operation log (issue 3) ----------------------------------------------


def can_create_project(actor: Actor) -> bool:
    """``project:create``: platform admins only."""
    return actor.is_admin


def can_read_project(actor: Actor, project_id: int) -> bool:
    """``project:read`` (name, description, expiry): platform admins and members of any project role.
    Others get "not found" so that project names are not disclosed."""
    return actor.is_admin or project_id in actor.project_roles


def can_read_members(actor: Actor, project_id: int) -> bool:
    """``project:members:read``: platform admins and the project's admins."""
    return actor.is_admin or actor.project_roles.get(project_id) == "admin"


def can_manage_members(actor: Actor, project_id: int) -> bool:
    """``project:members:write`` (add, change role, remove): platform admins and the project's admins
    (a guest never, whatever its project role)."""
    if actor.is_admin:
        return True
    return actor.role != "guest" and actor.project_roles.get(project_id) == "admin"


def can_create_token(actor: Actor) -> bool:
    """``token:create`` (a personal API token for oneself): every signed-in user, guests included (a guest's
    token carries the guest's read-only rights)."""
    return actor.role in PLATFORM_ROLES


def can_revoke_token(actor: Actor, owner_id: int) -> bool:
    """``token:revoke``: the token's owner, or a platform admin."""
    return actor.is_admin or actor.user_id == owner_id


def can_read_operation_log(actor: Actor) -> bool:
    """``oplog:read`` (list and CSV export): platform admins only. Nobody may edit or delete rows."""
    return actor.is_admin


# --- Quotas and admission (issue 3) ---------------------------------------------------------------------------


def can_set_quota(actor: Actor) -> bool:
    """``project:quota:write`` (guarantee, deserved, capability): platform admins only (quota is the platform's
    to hand out; a project asks for more through an approval)."""
    return actor.is_admin


def can_read_quota(actor: Actor, project_id: int) -> bool:
    """``project:quota:read`` (the quota, current admitted usage, held jobs): whoever may read the project."""
    return can_read_project(actor, project_id)


def can_set_share(actor: Actor, project_id: int) -> bool:
    """``project:members:share`` (a member's share inside the project's capability): platform admins and the
    project's admins, like the member list itself."""
    return can_manage_members(actor, project_id)


def needs_approval(actor: Actor, accelerators: int, threshold: int) -> bool:
    """Whether a job of ``accelerators`` devices must wait for an approval before admission: more than
    ``threshold`` devices, submitted by someone other than a platform admin (admins approve such jobs)."""
    return accelerators > threshold and not actor.is_admin
