"""``/api/v1/jobs``: submit (JSON or YAML), list, read, cancel, resubmit and events (DESIGN.md §2; a job's replicas,
logs and manifest: :mod:`crater_app.api.routes.replicas`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from crater_app.api import docs
from crater_app.api.body import decode_documents, one_document
from crater_app.api.deps import CtxDep, CurrentActor, run_read
from crater_app.api.error_docs import raises
from crater_app.api.errors import request_language
from crater_app.api.idempotency import IdempotentRoute
from crater_app.api.responses import json_list, json_response
from crater_app.api.params import ObjectId
from crater_app.api.routes import API_PREFIX
from crater_app.domain.manifests import refuse_manifests
from crater_app.schemas import JobEventPublic, JobPage, JobPublic
from crater_app.services import admission, job_events, jobs

router = APIRouter(prefix=API_PREFIX, tags=["jobs"], route_class=IdempotentRoute)


def localized(job: JobPublic, lang: str) -> JobPublic:
    """``job`` with its ``reason`` in ``lang``, rendered from ``reason_code``/``reason_args`` (holds, placement and
    stop reasons, with estimates counted from now); a reason without a code stays as written."""
    text = admission.reason_text(lang, job.reason_code, job.reason_args, job.reason)
    return job if text == job.reason else job.model_copy(update={"reason": text})


@router.post("/jobs", status_code=201, response_model=JobPublic, openapi_extra=docs.JOB_SPEC_BODY,
             responses=raises(402, 404))
async def submit(request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Submit a job spec (JSON, or YAML with ``Content-Type: application/yaml``). A spec without ``cpu`` or
    ``memory`` gets the deployment's defaults (see ``resources``). A Kubernetes manifest (``apiVersion`` + ``kind``)
    is refused with what it is (also a YAML stream of manifests, ``---`` separated, or a list of them)."""
    documents = await decode_documents(request)
    refuse_manifests(documents)
    job = await run_in_threadpool(jobs.submit_job, c, a, one_document(documents))
    return json_response(job, 201)


@router.get("/jobs", response_model=JobPage)
async def list_jobs(
    request: Request, c: CtxDep, a: CurrentActor, phase: str | None = None, q: str | None = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=jobs.MAX_PAGE_SIZE)] = 20,
) -> Response:
    """Jobs visible to the caller, newest first: ``{"items", "total", "page", "page_size"}``. A held job's
    ``reason`` says why it waits, in Chinese when ``Accept-Language`` prefers ``zh``."""
    found = await run_read(jobs.list_jobs, c, a, phase=phase, q=q, page=page, page_size=page_size)
    lang = request_language(request)
    if any(j.reason_code for j in found.items):
        found = found.model_copy(update={"items": [localized(j, lang) for j in found.items]})
    return json_response(found)


@router.get("/jobs/{id}", response_model=JobPublic)
async def get_job(id: ObjectId, request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """One job; ``reason``/``reason_code``/``reason_args`` say why it waits (``reason`` in Chinese when
    ``Accept-Language`` prefers ``zh``)."""
    return json_response(localized(await run_read(jobs.get_job, c, a, id), request_language(request)))


@router.delete("/jobs/{id}", status_code=202, response_model=JobPublic, responses=raises(409))
async def cancel_job(id: ObjectId, request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Cancel a job: 202 (accepted) with the job; its processes get SIGTERM, then SIGKILL after the grace period,
    and it ends ``Cancelled`` (a held job at once)."""
    job = await run_in_threadpool(jobs.cancel_job, c, a, id)
    return json_response(localized(job, request_language(request)), 202)


@router.post("/jobs/{id}/resubmit", status_code=201, response_model=JobPublic, responses=raises(402))
async def resubmit_job(id: ObjectId, c: CtxDep, a: CurrentActor) -> Response:
    """Submit a copy of the job as a new job."""
    return json_response(await run_in_threadpool(jobs.resubmit_job, c, a, id), 201)


@router.get("/jobs/{id}/events", response_model=list[JobEventPublic])
async def list_job_events(id: ObjectId, request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """The job's events, oldest first; each ``message`` in the request's language (``Accept-Language``), rendered
    from its ``code`` + ``args`` (an event without a code, a backend's own text, stays as written)."""
    events = await run_read(jobs.job_events, c, a, id)
    lang = request_language(request)
    return json_list([localized_event(e, lang) for e in events])


def localized_event(event: JobEventPublic, lang: str) -> JobEventPublic:
    """``event`` with its ``message`` in ``lang`` (see :func:`crater_app.services.job_events.event_text`)."""
    text = job_events.event_text(lang, event.code, event.args, event.message)
    return event if text == event.message else event.model_copy(update={"message": text})
