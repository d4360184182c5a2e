"""Read-only views for the web console: one call per screen refresh, built from the other services.

The console's job-detail page refreshes the job, its events and its log tail together every couple of
seconds; :func:`job_view` returns all three in one call (one authorisation check, one round of reads).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from crater_app.db.schemas import JobEventPublic, JobPublic
from crater_app.domain.policy import Actor
from crater_app.services import jobs
from crater_app.services.context import ServiceContext


class JobView(BaseModel):
    """A job with its events (oldest first) and the tail of its log."""

    model_config = ConfigDict(frozen=True)

    job: JobPublic
    events: list[JobEventPublic]
    logs: str


def job_view(ctx: ServiceContext, actor: Actor, job_id: int, tail_bytes: int = 65536) -> JobView:
    """The job ``job_id``, its events and the last ``tail_bytes`` of its log.

    Raises:
        NotFound: the job does not exist or the actor may not read it; InvalidInput: bad ``tail_bytes``.
    """
    job = jobs.get_job(ctx, actor, job_id)
    return JobView(
        job=job,
        events=jobs.job_events(ctx, actor, job_id),
        logs=jobs.job_logs(ctx, actor, job_id, tail_bytes=tail_bytes),
    )
