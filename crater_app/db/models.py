"""SQLModel tables (schema changes go through Alembic, see ``alembic/versions``).

Units: CPU in millicores, memory in bytes, accelerators in devices, durations in seconds, times UTC.
"""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from sqlalchemy import JSON, BigInteger, Column, Index, Text
from sqlmodel import Field, SQLModel

from crater_app.db.types import UTCDateTime, utcnow


class User(SQLModel, table=True):
    """A person. ``role`` is the platform role (``admin``/``user``/``guest``); ``status`` is
    ``active``/``pending``/``disabled``; ``password_hash`` is an argon2 hash or ``None`` (OIDC-only)."""

    __tablename__ = "users"
    id: Optional[int] = Field(default=None, primary_key=True)
    username: str = Field(max_length=63, unique=True, index=True)
    display_name: str = Field(default="", max_length=128)
    email: str = Field(default="", max_length=254)
    password_hash: Optional[str] = Field(default=None, max_length=255)
    role: str = Field(default="user", max_length=16)
    status: str = Field(default="active", max_length=16)
    default_project_id: Optional[int] = Field(default=None, foreign_key="projects.id")
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


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


class ProjectMember(SQLModel, table=True):
    """Membership of a user in a project with a project role (``admin``/``member``/``viewer``)."""

    __tablename__ = "project_members"
    project_id: int = Field(foreign_key="projects.id", primary_key=True)
    user_id: int = Field(foreign_key="users.id", primary_key=True, index=True)
    role: str = Field(default="member", max_length=16)


class ApiToken(SQLModel, table=True):
    """A bearer token: only the SHA-256 of the secret is stored. ``kind`` is ``session`` (login)
    or ``personal`` (created by the user for the CLI)."""

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
    actor: str = Field(max_length=63)
    actor_role: str = Field(default="", max_length=16)
    action: str = Field(max_length=64)
    target: str = Field(default="", max_length=255)
    result: str = Field(default="ok", max_length=16)
    details: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))


class Lease(SQLModel, table=True):
    """Leader lease: one row per loop group; ``holder`` keeps it while ``expires_at`` is in the future."""

    __tablename__ = "leases"
    name: str = Field(primary_key=True, max_length=64)
    holder: str = Field(max_length=128)
    expires_at: datetime = Field(sa_type=UTCDateTime)
