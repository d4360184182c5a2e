"""Projects, their members and quotas as the API shows them."""

from __future__ import annotations

from datetime import datetime

from crater_app.schemas.base import Public


class ProjectMemberPublic(Public):
    """A member of a project: ``username``, ``display_name``, project ``role`` (``admin``/``member``/``viewer``),
    whether the project is the user's ``default`` one, and ``share``: the member's ceiling inside the project's
    capability as a resource list (``{}``: none)."""

    username: str
    display_name: str
    role: str
    default: bool = False
    share: dict[str, str] = {}


class ProjectQuotaPublic(Public):
    """A project's quota and what it uses now. ``guarantee``/``deserved``/``capability``: resource lists as in a
    JobSpec (a key may carry an accelerator model after a colon, ``nvidia.com/gpu:NVIDIA-A100-SXM4-80GB``);
    ``capability`` ``{}`` = no ceiling. ``used``: the admitted (``Queued`` + ``Running``) jobs' requests, same
    shape; ``admitted_jobs``/``held_jobs``: how many jobs are admitted / held (``Held``) now."""

    project: str
    guarantee: dict[str, str]
    deserved: dict[str, str]
    capability: dict[str, str]
    used: dict[str, str]
    admitted_jobs: int
    held_jobs: int


class ProjectPublic(Public):
    """A project. ``role`` is the caller's project role (``None`` for a platform admin who is not a member);
    ``members`` is filled only for platform admins and the project's admins (``None`` otherwise); times UTC;
    ``expires_at`` ``None`` means never; ``expired`` is whether it lies in the past; ``quota`` (in the single-project
    answer only) its guarantee/deserved/capability and current usage."""

    name: str
    display_name: str
    description: str
    created_at: datetime
    expires_at: datetime | None
    expired: bool
    role: str | None
    member_count: int
    members: list[ProjectMemberPublic] | None = None
    quota: ProjectQuotaPublic | None = None
