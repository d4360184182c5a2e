"""Read-only views for the web console: one call per screen refresh, built from the other services.

The console's job-detail page refreshes the job, its events and its log tail together every couple of
seconds; :func:`job_view` returns all three in one call (one authorisation check, one round of reads).
The project page asks :func:`project_view` which controls to show (the services enforce the same rules); the
operation-log page gets its rows and the action names for its filter from :func:`operation_log_view`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from sqlmodel import select

from crater_app.db.models import Project
from crater_app.schemas import JobEventPublic, JobPublic, OperationLogPage, ProjectPublic
from crater_app.domain.policy import Actor, can_manage_members, can_set_quota
from crater_app.domain.errors import NotFound
from crater_app.schemas.replicas import ReplicaPublic
from crater_app.services import job_replicas, jobs, oplog, projects
from crater_app.services.context import ServiceContext


class JobView(BaseModel):
    """A job with its events (oldest first), its replicas (:mod:`crater_app.services.job_replicas`), the tail of one
    replica's log (``log_task``/``log_replica``: the one shown) and, where the backend keeps the objects it made
    (``keeps_manifests``), their ``manifest`` as YAML (``""`` while there is none)."""

    model_config = ConfigDict(frozen=True)

    job: JobPublic
    events: list[JobEventPublic]
    logs: str
    replicas: list[ReplicaPublic] = []
    log_task: str | None = None
    log_replica: int = 0
    keeps_manifests: bool = False
    manifest: str = ""


def job_view(ctx: ServiceContext, actor: Actor, job_id: int, tail_bytes: int = 65536, *, task: str | None = None,
             replica: int = 0) -> JobView:
    """The job ``job_id``, its events, its replicas, the last ``tail_bytes`` of one replica's log (``task`` ``None``:
    the first task's; a task or replica the job no longer has shows no log) and its manifest.

    Raises:
        NotFound: the job does not exist or the actor may not read it; InvalidInput: bad ``tail_bytes``.
    """
    job = jobs.get_job(ctx, actor, job_id)
    try:
        logs = job_replicas.replica_logs(ctx, actor, job_id, tail_bytes, task=task, replica=replica)
    except NotFound as exc:
        if not exc.code.startswith("replicas."):
            raise
        logs = ""
    keeps = job_replicas.keeps_manifests(ctx)
    manifest = ""
    if keeps:
        try:
            manifest = job_replicas.manifest_yaml(job_replicas.job_manifests(ctx, actor, job_id))
        except NotFound as exc:
            if not exc.code.startswith("replicas."):
                raise
    return JobView(
        job=job, events=jobs.job_events(ctx, actor, job_id), logs=logs,
        replicas=job_replicas.job_replicas(ctx, actor, job_id), log_task=task, log_replica=replica,
        keeps_manifests=keeps, manifest=manifest,
    )


class ProjectView(BaseModel):
    """A project as :func:`crater_app.services.projects.get_project` returns it, plus ``can_manage``: whether the
    caller may add members, change their roles and shares and remove them (``domain.policy.can_manage_members``,
    ``can_set_share``), and ``can_set_quota``: whether the caller may edit the quota (``policy.can_set_quota``)."""

    model_config = ConfigDict(frozen=True)

    project: ProjectPublic
    can_manage: bool
    can_set_quota: bool = False


def project_view(ctx: ServiceContext, actor: Actor, name: object) -> ProjectView:
    """The project ``name`` for its console page.

    Raises:
        InvalidInput: ``name`` is not a DNS-1123 label. NotFound: no such project, or the caller is neither a
        member nor a platform admin.
    """
    project = projects.get_project(ctx, actor, name)
    with ctx.session(read_only=True) as s:
        project_id = s.exec(select(Project.id).where(Project.name == project.name)).one()
    return ProjectView(project=project, can_manage=can_manage_members(actor, project_id),
                       can_set_quota=can_set_quota(actor))


class OperationLogView(BaseModel):
    """One page of the operation log and every ``action`` name present in it (for the action filter)."""

    model_config = ConfigDict(frozen=True)

    page: OperationLogPage
    actions: list[str]


def operation_log_view(
    ctx: ServiceContext, actor: Actor, who: str | None = None, action: str | None = None, target: str | None = None,
    since: object = None, until: object = None, page: int = 1, page_size: int = 50,
) -> OperationLogView:
    """The operation-log page (filters and limits as :func:`crater_app.services.oplog.list_logs`, ``who`` being
    its ``actor`` filter) with :func:`crater_app.services.oplog.list_actions`.

    Raises:
        Forbidden: not a platform admin. InvalidInput: a bad filter, page or page size (field named).
    """
    found = oplog.list_logs(ctx, actor, who, action, target, since, until, page, page_size)
    return OperationLogView(page=found, actions=oplog.list_actions(ctx, actor))
