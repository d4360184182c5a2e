"""SQLModel tables (schema changes go through Alembic, see ``alembic/versions``).

Units: CPU in millicores, memory in bytes, accelerators in devices, durations in seconds, times UTC.
"""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from sqlalchemy import JSON, BigInteger, Column, Float, Index, Integer, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from crater_app.db.types import UTCDateTime, utcnow


class User(SQLModel, table=True):
    """A person. ``role`` is the platform role (``admin``/``user``/``guest``); ``status`` is
    ``active``/``pending``/``disabled``; ``password_hash`` is an argon2 hash or ``None`` (OIDC-only)."""

    __tablename__ = "users"
    __table_args__ = (
        Index("uq_users_oidc_identity", "oidc_issuer", "oidc_subject", unique=True),
        Index("uq_users_username_key", "username_key", unique=True),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    username: str = Field(max_length=64, unique=True, index=True)
    # The name's identity for uniqueness: NFKC case-folded (``Zhang.San`` and ``zhang.san`` are one account);
    # migration 0005. Case folding may lengthen a name (``ß`` -> ``ss``), hence the wider column.
    username_key: str = Field(max_length=256)
    # What the name looks like (``domain.naming.username_skeleton``: Cyrillic/Greek look-alikes as Latin), so that a
    # new name confusable with an existing one is refused; migration 0005. Not unique: accounts made before may
    # share one. ``None`` for rows written without it.
    username_skeleton: Optional[str] = Field(default=None, max_length=256, index=True)
    display_name: str = Field(default="", max_length=128)
    email: str = Field(default="", max_length=254)
    password_hash: Optional[str] = Field(default=None, max_length=255)
    role: str = Field(default="user", max_length=16)
    status: str = Field(default="active", max_length=16)
    default_project_id: Optional[int] = Field(default=None, foreign_key="projects.id")
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    # Per-user limits (migration 0004); ``None``: the platform default from settings (itself ``None`` = no limit).
    max_sessions: Optional[int] = None  # concurrent interactive sessions (jobs of kind ``interactive``)
    max_accelerators_per_job: Optional[int] = None  # devices of one job
    max_runtime_s: Optional[int] = None  # the largest ``max_runtime`` a job of this user may ask for, seconds
    # Billing (migration 0004): points the user holds beyond the projects' periodic free allowance.
    extra_points: float = Field(default=0.0, sa_column=Column(Float, nullable=False, default=0.0))
    # OIDC identity (migration 0004): issuer URL + ``sub`` claim; both ``None`` for local accounts.
    oidc_issuer: Optional[str] = Field(default=None, max_length=255)
    oidc_subject: Optional[str] = Field(default=None, max_length=255)


class ConsoleSession(SQLModel, table=True):
    """A signed-in browser (migration 0005): the console's cookie holds a random secret whose SHA-256 is
    ``id_hash``. It ends at ``expires_at`` (absolute), after ``idle_timeout_s`` without a request, or when
    ``revoked_at`` is set (sign-out, sign-out everywhere, a disabled account, a changed password)."""

    __tablename__ = "console_sessions"
    id: Optional[int] = Field(default=None, primary_key=True)
    id_hash: str = Field(max_length=64, unique=True)
    user_id: int = Field(foreign_key="users.id", index=True)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    last_seen_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    idle_timeout_s: int
    user_agent: str = Field(default="", max_length=255)
    ip: str = Field(default="", max_length=45)
    revoked_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)


class IdempotencyRecord(SQLModel, table=True):
    """The first answer to a ``POST`` sent with an ``Idempotency-Key`` (migration 0005), replayed for the same key
    and body within 24 h. ``status_code`` is ``None`` while the first request is still being answered."""

    __tablename__ = "idempotency_records"
    __table_args__ = (UniqueConstraint("user_id", "key", name="uq_idempotency_records_user_key"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="users.id")
    key: str = Field(max_length=255)
    method: str = Field(max_length=8)
    path: str = Field(max_length=255)
    body_hash: str = Field(max_length=64)
    status_code: Optional[int] = None
    content_type: str = Field(default="", max_length=128)
    response: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime, index=True)


class Project(SQLModel, table=True):
    """A project (Crater's "account"): the unit that owns jobs and, later, quota. Projects are never renamed or
    deleted (services cache name <-> id)."""

    __tablename__ = "projects"
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(max_length=63, unique=True, index=True)
    display_name: str = Field(default="", max_length=128)
    description: str = Field(default="", max_length=1024)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    # After this instant (UTC) the project is expired; ``None``: it never expires. Migration 0003.
    expires_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)
    # Quota (migration 0004): resource lists as in JobSpec (name -> quantity string), where a name may carry an
    # accelerator model after a colon (``"nvidia.com/gpu:NVIDIA-A100-SXM4-80GB"``). ``{}`` for capability means
    # no ceiling; for guarantee/deserved it means zero. Volcano Queue spec.guarantee/deserved/capability.
    guarantee: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))
    deserved: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))
    capability: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))
    # Billing (migration 0004): free points each member gets per billing period in this project.
    member_allowance_points: float = Field(default=0.0, sa_column=Column(Float, nullable=False, default=0.0))


class ProjectMember(SQLModel, table=True):
    """Membership of a user in a project with a project role (``admin``/``member``/``viewer``)."""

    __tablename__ = "project_members"
    project_id: int = Field(foreign_key="projects.id", primary_key=True)
    user_id: int = Field(foreign_key="users.id", primary_key=True, index=True)
    role: str = Field(default="member", max_length=16)
    # The member's share inside the project's capability (migration 0004): a resource list like
    # ``Project.capability``; ``{}`` means no per-member limit.
    share: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))


class ApiToken(SQLModel, table=True):
    """A bearer token: only the SHA-256 of the secret is stored. ``kind`` is ``session`` (login)
    or ``personal`` (created by the user for the CLI); ``sso`` is a one-time single sign-on code (60 s, revoked
    when the console redeems it), never accepted as a bearer token."""

    __tablename__ = "api_tokens"
    id: Optional[int] = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="users.id", index=True)
    token_hash: str = Field(max_length=64, unique=True, index=True)
    kind: str = Field(default="session", max_length=16)
    name: str = Field(default="", max_length=64)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)
    last_used_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)
    revoked_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)


class Job(SQLModel, table=True):
    """A submitted job. ``uid`` is the idempotency key towards the cluster backend.

    ``resources`` is the request as submitted (Kubernetes resource list); ``cpu_m``/``memory_bytes``/``gpus``
    are the parsed totals; ``devices`` the assigned accelerator indices; ``phase`` a :class:`JobPhase` value.
    """

    __tablename__ = "jobs"
    # The list filters (phase, name) ride along in the phase/project indexes and in (user_id, phase, id), so that
    # counting and paging job lists read only indexes; (user_id, id) stays narrow for count(*). Migration 0002.
    __table_args__ = (
        Index("ix_jobs_phase_id", "phase", "id", "name"),
        Index("ix_jobs_user_id_id", "user_id", "id"),
        Index("ix_jobs_project_id_id", "project_id", "id", "phase", "name"),
        Index("ix_jobs_user_id_phase_id", "user_id", "phase", "id", "name"),
        # Admission counts a project's held jobs (migration 0004); with the name (migration 0006) it also answers
        # the count of a project admin's filtered list (phase, own or their projects' jobs, name pattern) alone.
        Index("ix_jobs_phase_project_user", "phase", "project_id", "user_id", "name"),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    uid: str = Field(max_length=36, unique=True)
    name: str = Field(max_length=63, index=True)
    project_id: int = Field(foreign_key="projects.id")
    user_id: int = Field(foreign_key="users.id")
    image: str = Field(max_length=255)
    command: list = Field(sa_column=Column(JSON, nullable=False))
    env: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    working_dir: Optional[str] = Field(default=None, max_length=255)
    resources: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    cpu_m: int = 0
    memory_bytes: int = Field(default=0, sa_type=BigInteger)
    gpus: int = 0
    accelerator_model: Optional[str] = Field(default=None, max_length=128)
    max_runtime_s: Optional[int] = None
    priority: int = 0
    phase: str = Field(default="Queued", max_length=16)
    reason: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    exit_code: Optional[int] = None
    devices: list = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    started_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)
    finished_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)
    resubmitted_from: Optional[int] = None
    # Governance (migration 0004):
    kind: str = Field(default="batch", max_length=16)  # batch, pytorch, mpi or interactive (counts as a session)
    preemptible: bool = False  # Crater's "backfill": may be stopped to give a project its deserved share
    reclaim_lock: bool = False  # approved lock against automatic reclamation
    # Why the job is not running, machine-readable, for translation: ``reason_code`` (e.g. ``quota``,
    # ``capacity``, ``queue``, ``approval``, ``billing``) and its parameters; ``reason`` is the English sentence.
    reason_code: str = Field(default="", max_length=64)  # 64 since migration 0005 (event codes are as long)
    reason_args: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))
    admitted_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)
    # Billing: points charged so far and the instant up to which run time has been charged.
    charged_points: float = Field(default=0.0, sa_column=Column(Float, nullable=False, default=0.0))
    charged_until: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)
    # Migration 0005: the run it is on (1 for the first; a preempted job that goes back to the queue starts the next
    # one), whether a preemption sends it back to the queue (else it ends Failed), when a stop was asked for
    # (cancel, deadline, preemption: the job is ``Stopping`` until its last process exits) and the signal that
    # ended its process, if one did (``9`` for SIGKILL; ``exit_code`` is then ``128 + signal``).
    attempt: int = Field(default=1, sa_column=Column(Integer, nullable=False, default=1))
    requeue_on_preemption: bool = True
    stop_requested_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)
    exit_signal: Optional[int] = None
    # Migration 0007: the job's normalized tasks (``[]``: the single task of the columns above; each
    # ``{name, replicas, image, command, args, env, working_dir, resources (per replica), ports, ends_job}``), its gang
    # (``None``: all replicas) and its options (``restart_policy``, ``max_retry``, ``volumes``, ``shm_size_bytes``,
    # ``node_selector``, ``ttl_after_finished_s``). ``resources``/``cpu_m``/``memory_bytes``/``gpus`` are the totals
    # over all replicas.
    tasks: list = Field(default_factory=list, sa_column=Column(JSON, nullable=False, default=list))
    min_available: Optional[int] = None
    options: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))


class ActiveUsage(SQLModel, table=True):
    """How many active jobs (``Queued``/``Running``/``Stopping``, not being stopped by a preemption) each project and
    user has of one request shape: kept by database triggers on ``jobs`` (migration 0006), so that admission reads
    a project's usage in a few rows instead of grouping every active job under the write lock.

    ``accelerator_model`` is ``""`` for a job without one; ``resources`` the job's request as its JSON text. Rows
    whose count falls to 0 are deleted by the triggers.
    """

    __tablename__ = "active_usage"
    project_id: int = Field(primary_key=True)
    user_id: int = Field(primary_key=True)
    kind: str = Field(primary_key=True, max_length=16)
    preemptible: bool = Field(primary_key=True)
    accelerator_model: str = Field(primary_key=True, max_length=128)
    resources: str = Field(sa_column=Column(Text, primary_key=True))
    jobs: int = Field(default=0, sa_column=Column(Integer, nullable=False))


class JobEvent(SQLModel, table=True):
    """One transition or notable fact about a job: ``phase`` after it, ``reason`` (CamelCase word),
    ``message`` (sentence). Backend states Crater does not know are kept verbatim in ``message``."""

    __tablename__ = "job_events"
    id: Optional[int] = Field(default=None, primary_key=True)
    job_id: int = Field(foreign_key="jobs.id", index=True)
    at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    phase: str = Field(max_length=16)
    reason: str = Field(max_length=64)
    message: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    # Migration 0005: the message as a code and its arguments (``event.<code>`` in the catalogues), so that it
    # reads in the viewer's language; ``message`` keeps the English sentence (and backend text kept verbatim).
    code: str = Field(default="", max_length=64)
    args: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))


class OperationLog(SQLModel, table=True):
    """Audit row for a state-changing action: who (``actor``, ``actor_role``), ``action``, ``target``,
    ``result`` (``ok``/``error``) and ``details``."""

    __tablename__ = "operation_logs"
    # The admin page filters by actor or action, newest first (migration 0003).
    __table_args__ = (
        Index("ix_operation_logs_actor_at", "actor", "at"),
        Index("ix_operation_logs_action_at", "action", "at"),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, index=True)
    actor: str = Field(max_length=64)
    actor_role: str = Field(default="", max_length=16)
    action: str = Field(max_length=64)
    target: str = Field(default="", max_length=255)
    result: str = Field(default="ok", max_length=16)
    details: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    # Migration 0005: the details as a code and arguments (``oplog.<code>`` in the catalogues); ``details`` keeps
    # the English text (CSV export, rows written before the migration).
    code: str = Field(default="", max_length=64)
    args: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))


class Lease(SQLModel, table=True):
    """Leader lease: one row per loop group; ``holder`` keeps it while ``expires_at`` is in the future."""

    __tablename__ = "leases"
    name: str = Field(primary_key=True, max_length=64)
    holder: str = Field(max_length=128)
    expires_at: datetime = Field(sa_type=UTCDateTime)


class Approval(SQLModel, table=True):
    """A request that needs an admin's (or project admin's) decision (migration 0004).

    ``kind``: ``quota`` (more quota for ``project_id``; ``payload`` = {"guarantee"|"deserved"|"capability": list}),
    ``extend_runtime`` (``job_id``; ``payload`` = {"max_runtime": seconds}), ``reclaim_lock`` (``job_id``),
    ``large_job`` (``job_id`` held until approved). ``status``: ``pending``/``approved``/``rejected``/``closed``
    (closed: its target is gone). ``auto``: granted by the auto-approval rule. ``decision_note``: the decider's
    note, or the English text of ``decision_code``/``decision_args`` when Crater decided (closed, auto-approved).
    ``reason``: the requester's own words, or the English text of ``reason_code``/``reason_args`` when Crater wrote
    the request (``large_job``).
    """

    __tablename__ = "approvals"
    __table_args__ = (Index("ix_approvals_status_id", "status", "id"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    kind: str = Field(max_length=32)
    status: str = Field(default="pending", max_length=16)
    requester_id: int = Field(foreign_key="users.id", index=True)
    project_id: Optional[int] = Field(default=None, foreign_key="projects.id", index=True)
    job_id: Optional[int] = Field(default=None, foreign_key="jobs.id", index=True)
    payload: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))
    reason: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    auto: bool = False
    decided_by: Optional[int] = Field(default=None, foreign_key="users.id")
    decision_note: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    #: a note Crater wrote itself (closed, approved by the rule) as a code (``decision.<code>`` in the catalogues)
    #: and its arguments, read in the viewer's language; ``""`` for a decider's own note (migration 0005)
    decision_code: str = Field(default="", max_length=64)
    decision_args: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))
    #: the reason of a request Crater wrote itself (a large job) as a code (``request.<code>`` in the catalogues)
    #: and its arguments, read in the viewer's language; ``""`` for a requester's own words (migration 0005)
    reason_code: str = Field(default="", max_length=64)
    reason_args: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    decided_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)


class Notification(SQLModel, table=True):
    """A message for one user shown in the console (migration 0004): ``kind`` (e.g. ``approval.approved``,
    ``job.preempted``), ``args`` for translation, ``message`` the English sentence, ``read_at`` once seen."""

    __tablename__ = "notifications"
    __table_args__ = (Index("ix_notifications_user_id_id", "user_id", "id"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="users.id")
    at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    kind: str = Field(max_length=64)
    args: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))
    message: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    read_at: Optional[datetime] = Field(default=None, sa_type=UTCDateTime)


class BillingPrice(SQLModel, table=True):
    """Points per hour for one unit of ``resource`` (``cpu``: one core, ``memory``: one GiB, an accelerator:
    one device), optionally only for accelerator ``model`` (``""`` = every model). Migration 0004."""

    __tablename__ = "billing_prices"
    __table_args__ = (UniqueConstraint("resource", "model", name="uq_billing_prices_resource_model"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    resource: str = Field(max_length=253)
    model: str = Field(default="", max_length=128)
    points_per_hour: float = Field(sa_column=Column(Float, nullable=False))
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class PointLedger(SQLModel, table=True):
    """One movement of points (migration 0004): ``points`` < 0 is a charge, > 0 a grant. ``source`` is
    ``allowance`` (the member's free allowance of ``project_id`` in ``period``, e.g. ``2026-11``) or ``extra``
    (the user's extra balance, mirrored in ``User.extra_points``)."""

    __tablename__ = "point_ledger"
    __table_args__ = (Index("ix_point_ledger_user_period", "user_id", "period", "project_id"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    user_id: int = Field(foreign_key="users.id")
    project_id: Optional[int] = Field(default=None, foreign_key="projects.id")
    job_id: Optional[int] = Field(default=None, foreign_key="jobs.id", index=True)
    period: str = Field(max_length=16)
    source: str = Field(max_length=16)
    points: float = Field(sa_column=Column(Float, nullable=False))
    note: str = Field(default="", max_length=255)
