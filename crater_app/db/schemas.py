"""Public (read) schemas returned by services: frozen pydantic models, safe to pickle into UI state."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


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


class UserDetail(UserPublic):
    """A user as an admin manages them (``GET``/``PATCH /api/v1/users/{username}``): the public fields plus the
    per-user limits (``None``: the platform default applies), how the account signs in, and its OIDC issuer."""

    max_sessions: int | None
    max_accelerators_per_job: int | None
    max_runtime_s: int | None
    sign_in: str  # "password", "oidc" or "password+oidc"
    oidc_issuer: str | None


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


class ApprovalPublic(_Public):
    """An approval request. ``kind``: ``quota``/``extend_runtime``/``reclaim_lock``/``large_job``; ``status``:
    ``pending``/``approved``/``rejected``/``closed``; ``project`` the project's name; ``job_id``/``job_name``
    the target job (job kinds); ``payload`` what is asked (``{"max_runtime": seconds}``, quota resource lists);
    ``current`` the value in force when the request was read (``{"max_runtime": seconds|None}``, the project's
    quota sections), for comparison; ``auto`` granted by the auto-approval rule; ``decided_by`` a user name
    (``None`` while pending, when automatic or closed by the system); times UTC. ``can_decide``: whether the
    caller may approve or reject it now."""

    id: int
    kind: str
    status: str
    requester: str
    project: str | None
    job_id: int | None
    job_name: str | None
    payload: dict
    current: dict
    reason: str
    auto: bool
    decided_by: str | None
    decision_note: str
    created_at: datetime
    decided_at: datetime | None
    can_decide: bool = False


class ApprovalPage(_Public):
    """One page of approval requests, newest first, and the ``total`` matching the filters."""

    items: list[ApprovalPublic]
    total: int
    page: int
    page_size: int


class NotificationPublic(_Public):
    """A console notification for the caller: ``kind`` (``approval.approved``, ``approval.rejected``,
    ``approval.closed``, ...), ``args`` for the translated text, ``message`` in English, ``read`` once seen;
    ``at`` UTC."""

    id: int
    at: datetime
    kind: str
    args: dict
    message: str
    read: bool


class NotificationList(_Public):
    """The caller's notifications, unread first then newest first, and the ``unread`` count."""

    items: list[NotificationPublic]
    unread: int


# --- Usage and billing (issue 3) ---------------------------------------------------------------------------------


class UsageRowPublic(_Public):
    """Usage of one ``key`` in one ``period`` (``YYYY-MM-DD`` or ``YYYY-MM``, UTC; ``total`` for the totals):
    accelerator-hours (devices x hours), CPU-core-hours, memory-GiB-hours, and how many ``jobs`` ran in it."""

    key: str
    period: str
    accelerator_hours: float
    cpu_core_hours: float
    memory_gib_hours: float
    jobs: int


class UsagePublic(_Public):
    """``GET /api/v1/usage`` answer: the window ``from`` .. ``to`` (UTC, half-open), ``group_by``,
    ``granularity``, ``rows`` (by period, then key), ``keys`` (each key's totals over the window, period ``total``)
    and ``totals``. In ``keys`` and ``totals`` a job counts once, in ``rows`` once per period it ran in."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)
    group_by: str
    granularity: str
    start: datetime = Field(serialization_alias="from")
    end: datetime = Field(serialization_alias="to")
    rows: list[UsageRowPublic]
    keys: list[UsageRowPublic]
    totals: UsageRowPublic


class BillingPricePublic(_Public):
    """A price: ``points_per_hour`` for one unit of ``resource`` (``cpu``: a core, ``memory``: a GiB, an
    accelerator resource: a device), for accelerator ``model`` only, or for every model when ``model`` is ``""``."""

    resource: str
    model: str
    points_per_hour: float
    updated_at: datetime


class ProjectBalancePublic(_Public):
    """The caller's free allowance in one project for the current period: ``allowance_points`` per member,
    ``used_points`` charged against it, ``left_points`` (never below 0)."""

    project: str
    allowance_points: float
    used_points: float
    left_points: float


class BalancePublic(_Public):
    """``GET /api/v1/billing/balance``: ``billing_enabled``, the ``period`` (``YYYY-MM``, UTC), the caller's
    ``extra_points`` (may be negative after a run outlasted the balance) and the allowance per project."""

    username: str
    billing_enabled: bool
    period: str
    extra_points: float
    projects: list[ProjectBalancePublic]


class PointGrantPublic(_Public):
    """``POST /api/v1/billing/grants`` answer: the user, the ``points`` granted (negative: taken back), the note
    and the user's ``extra_points`` after it."""

    username: str
    points: float
    note: str
    extra_points: float


class ProjectBillingPublic(_Public):
    """``PUT /api/v1/projects/{name}/billing`` answer: the free points each member gets per billing period."""

    project: str
    member_allowance_points: float
