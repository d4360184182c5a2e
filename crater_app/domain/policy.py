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

    def administers(self, project_id: int | None) -> bool:
        """Whether the actor's project role in ``project_id`` is ``admin`` (platform role not considered)."""
        return project_id is not None and self.project_roles.get(project_id) == "admin"

    def administered_projects(self) -> list[int]:
        """Ids of the projects where the actor's project role is ``admin``, ascending."""
        return sorted(p for p, r in self.project_roles.items() if r == "admin")


def can_submit(actor: Actor, project_id: int) -> bool:
    """``job:create`` in ``project_id``: platform admin, or a non-guest with project role admin/member."""
    return can_submit_as(actor.role, actor.project_roles.get(project_id))


def can_submit_as(platform_role: str, project_role: str | None) -> bool:
    """:func:`can_submit` from the roles alone (``project_role`` ``None``: not a member), for callers that hold
    a project listing's role rather than the project id (the console's new-job project choices)."""
    return platform_role == "admin" or platform_role != "guest" and project_role in ("admin", "member")


def can_read_job(actor: Actor, owner_id: int, project_id: int) -> bool:
    """``job:read`` (status, events, logs): admin, the owner, or project admin/viewer of its project."""
    return actor.is_admin or actor.user_id == owner_id or actor.project_roles.get(project_id) in ("admin", "viewer")


def can_cancel_job(actor: Actor, owner_id: int, project_id: int) -> bool:
    """``job:cancel``: platform admin, the owner (not a guest), or the project's admin."""
    if actor.is_admin or actor.administers(project_id):
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


# --- Projects, members, personal tokens, operation log ---------------------------------------------------------------


def can_create_project(actor: Actor) -> bool:
    """``project:create``: platform admins only."""
    return actor.is_admin


def can_read_project(actor: Actor, project_id: int) -> bool:
    """``project:read`` (name, description, expiry): platform admins and members of any project role.
    Others get "not found" so that project names are not disclosed."""
    return actor.is_admin or project_id in actor.project_roles


def can_read_members(actor: Actor, project_id: int) -> bool:
    """``project:members:read``: platform admins and the project's admins."""
    return actor.is_admin or actor.administers(project_id)


def can_manage_members(actor: Actor, project_id: int) -> bool:
    """``project:members:write`` (add, change role, remove): platform admins and the project's admins
    (a guest never, whatever its project role)."""
    if actor.is_admin:
        return True
    return actor.role != "guest" and actor.administers(project_id)


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


# --- Approvals and notifications -------------------------------------------------------------------------------------


def can_request_approval(actor: Actor, kind: str, project_id: int, owner_id: int | None = None) -> bool:
    """``approval:create`` of ``kind`` for ``project_id`` (and, for job requests, the job's ``owner_id``).

    - ``quota``: platform admins, and the project's admins and members (not viewers, never guests).
    - ``extend_runtime``, ``reclaim_lock``: platform admins, the job's owner (not a guest), the project's admins.
    - ``large_job``: nobody; the submission path writes these when a job is over the size threshold.
    """
    if kind == "large_job":
        return False
    if actor.is_admin:
        return True
    if actor.role == "guest":
        return False
    role = actor.project_roles.get(project_id)
    if kind == "quota":
        return role in ("admin", "member")
    return role == "admin" or (owner_id is not None and actor.user_id == owner_id)


def can_read_approval(actor: Actor, requester_id: int, project_id: int | None) -> bool:
    """``approval:read``: platform admins, the requester, and the admins of the request's project. Others get
    "not found" (a request's existence tells about another project's work)."""
    if actor.is_admin or actor.user_id == requester_id:
        return True
    return actor.administers(project_id)


def can_decide_approval(actor: Actor, kind: str, project_id: int | None, requester_id: int) -> bool:
    """``approval:decide`` (approve or reject): platform admins for every request; a project's admins for the
    requests of their project except ``quota`` (raising a project's quota is a platform decision) and except
    their own requests (nobody but a platform admin approves what they asked for themselves). Never guests."""
    if actor.is_admin:
        return True
    if actor.role == "guest" or kind == "quota" or project_id is None or actor.user_id == requester_id:
        return False
    return actor.administers(project_id)


def approval_projects(actor: Actor) -> list[int]:
    """Projects whose requests ``actor`` reads as their project admin (:func:`can_read_approval` as a list);
    platform admins read every request."""
    return actor.administered_projects()


def can_read_notifications(actor: Actor) -> bool:
    """``notification:read``/``notification:mark-read``: every signed-in user, for their own notifications."""
    return actor.role in PLATFORM_ROLES


# --- Usage and billing -----------------------------------------------------------------------------------------------


def usage_scope(actor: Actor) -> tuple[bool, list[int]]:
    """``usage:read``: whose usage ``actor`` may see, as ``(everything, project ids)``.

    Platform admins see everything (``(True, [])``); everyone else sees their own jobs plus every job of the
    projects they administer (the ids returned). Viewers and members see only their own usage.
    """
    if actor.is_admin:
        return True, []
    return False, actor.administered_projects()


def can_read_prices(actor: Actor) -> bool:
    """``billing:prices:read``: every signed-in user (prices are public inside the platform)."""
    return actor.role in PLATFORM_ROLES


def can_manage_billing(actor: Actor) -> bool:
    """``billing:write`` (set prices, grant extra points, set a project's member allowance): platform admins."""
    return actor.is_admin


def can_read_balance(actor: Actor) -> bool:
    """``billing:balance:read`` of one's own balances: every signed-in user (a guest sees zeros)."""
    return actor.role in PLATFORM_ROLES


# --- Accounts: sign-up and administration of users -------------------------------------------------------------------

#: user fields an admin changes with ``PATCH /users/{username}``; the first two are an account's standing.
USER_STANDING_FIELDS = ("role", "status")
USER_LIMIT_FIELDS = ("max_sessions", "max_accelerators_per_job", "max_runtime")


def can_read_user(actor: Actor) -> bool:
    """``user:read`` (one account with its limits): platform admins only (users read themselves via ``/me``)."""
    return actor.is_admin


def can_change_user(actor: Actor, target_user_id: int, field: str) -> bool:
    """``user:update`` of ``field``: platform admins; the role and status of their own account never (an admin
    cannot demote or disable themself: another admin must), their own limits yes."""
    if not actor.is_admin:
        return False
    return not (field in USER_STANDING_FIELDS and target_user_id == actor.user_id)


def can_change_password(actor: Actor) -> bool:
    """``user:password`` of one's own account (with the current password): every signed-in user, guests included."""
    return actor.role in PLATFORM_ROLES


def can_reset_password(actor: Actor, target_user_id: int) -> bool:
    """``user:password:reset`` (set another account's password without knowing it): platform admins, never for
    their own account (they change it with their current password, like everyone)."""
    return actor.is_admin and target_user_id != actor.user_id


def can_manage_sessions(actor: Actor, owner_id: int) -> bool:
    """``session:read``/``session:end`` (a console session, "sign out everywhere"): its owner only. An admin ends
    someone's sessions by disabling the account or resetting its password."""
    return actor.user_id == owner_id


def can_sign_up(signup_enabled: bool) -> bool:
    """``user:signup`` (anyone, signed in or not, creates a ``pending`` local account): only when the deployment
    turns self sign-up on (``CRATER_SIGNUP_ENABLED``); the account works after an admin activates it."""
    return signup_enabled


# --- Quotas and admission --------------------------------------------------------------------------------------------


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
