"""Public (read) schemas returned by services: frozen pydantic models, safe to pickle into UI state."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict


class _Public(BaseModel):
    model_config = ConfigDict(frozen=True)


class UserPublic(_Public):
    """A user as others see it (no password hash)."""

    id: int
    username: str
    display_name: str
    email: str
    role: str
    status: str
    default_project: str | None
    created_at: datetime


class TokenPublic(_Public):
    """``POST /auth/token`` answer: the secret (shown once), its type and expiry (UTC)."""

    access_token: str
    token_type: str = "bearer"
    expires_at: datetime | None


class JobPublic(_Public):
    """A job as the API returns it. ``resources`` as submitted; ``devices`` assigned indices; times UTC.

    Why it waits: ``reason`` (a sentence; for a ``Held`` job it names the limit, the usage and the position),
    ``reason_code`` (``quota``, ``share``, ``sessions``, ``capacity``, ``fairshare``, ``queue``, ``approval``,
    ``preempted``; ``""`` when Crater itself does not hold the job) and ``reason_args`` (the sentence's values,
    for translation). ``admitted_at``: when it passed admission (``Held`` -> ``Queued``); ``kind`` ``batch`` or
    ``interactive``; ``preemptible``: may be stopped to give a project its deserved share back.
    """

    id: int
    uid: str
    name: str
    project: str
    user: str
    image: str
    command: list[str]
    env: dict[str, str]
    working_dir: str | None
    phase: str
    reason: str
    exit_code: int | None
    resources: dict
    accelerator_model: str | None
    gpus: int
    devices: list[int]
    max_runtime: int | None
    priority: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    resubmitted_from: int | None = None
    kind: str = "batch"
    preemptible: bool = False
    reason_code: str = ""
    reason_args: dict = {}
    admitted_at: datetime | None = None


class JobPage(_Public):
    """One page of jobs: ``items`` newest first and the ``total`` matching the filter."""

    items: list[JobPublic]
    total: int
    page: int
    page_size: int


class JobEventPublic(_Public):
    """One job event: ``phase`` after it, ``reason`` word, ``message`` sentence, ``at`` UTC."""

    id: int
    at: datetime
    phase: str
    reason: str
    message: str


class DevicePublic(_Public):
    """One accelerator and who holds it (``job_id``/``job_name``/``user`` are ``None`` when free or hidden)."""

    index: int
    resource: str
    model: str
    memory_bytes: int
    uuid: str
    virtual: bool
    busy: bool
    job_id: int | None = None
    job_name: str | None = None
    user: str | None = None


class NodePublic(_Public):
    """A node: capacity (``cpu_m`` millicores, ``memory_bytes`` bytes), allocation and devices."""

    name: str
    backend: str
    device_source: str
    cpu_m: int
    memory_bytes: int
    cpu_m_allocated: int
    memory_bytes_allocated: int
    devices: list[DevicePublic]
    models: list[str]


class ProjectMemberPublic(_Public):
    """A member of a project: ``username``, ``display_name``, project ``role`` (``admin``/``member``/``viewer``),
    whether the project is the user's ``default`` one, and ``share``: the member's ceiling inside the project's
    capability as a resource list (``{}``: none)."""

    username: str
    display_name: str
    role: str
    default: bool = False
    share: dict[str, str] = {}


class ProjectQuotaPublic(_Public):
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


class ProjectPublic(_Public):
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


class PersonalTokenPublic(_Public):
    """A personal API token's metadata (never its secret or hash); times UTC; ``last_used_at`` is updated at
    most once a minute per token."""

    id: int
    name: str
    user: str
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked: bool
    revoked_at: datetime | None


class PersonalTokenCreated(PersonalTokenPublic):
    """``POST /api/v1/tokens`` answer: the metadata plus ``access_token``, the secret, shown this once only."""

    access_token: str
    token_type: str = "bearer"


class OperationLogPublic(_Public):
    """One operation-log row: ``at`` UTC, ``actor`` (user name or ``system``), ``actor_role``, ``action``
    (``noun:verb``), ``target``, ``result`` (``ok``/``error``), ``details``."""

    id: int
    at: datetime
    actor: str
    actor_role: str
    action: str
    target: str
    result: str
    details: str


class OperationLogPage(_Public):
    """One page of the operation log, newest first, and the ``total`` matching the filters."""

    items: list[OperationLogPublic]
    total: int
    page: int
    page_size: int
