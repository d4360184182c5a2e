"""``/api/v1/approvals``: approval requests (quota, longer run time, reclamation lock, large jobs) and their
decisions. Every route resolves the caller and hands it to a service, which asks ``domain.policy``."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from crater_app.api.body import decode_object, decode_optional_object
from crater_app.api.deps import CtxDep, CurrentActor, run_read
from crater_app.api.docs import request_body
from crater_app.api.error_docs import raises
from crater_app.api.idempotency import IdempotentRoute
from crater_app.api.responses import json_response
from crater_app.api.params import ObjectId
from crater_app.api.routes import API_PREFIX
from crater_app.domain.approvals import MAX_NOTE_CHARS, MAX_REASON_CHARS
from crater_app.schemas import ApprovalPage, ApprovalPublic
from crater_app.services import approvals

router = APIRouter(prefix=API_PREFIX, tags=["approvals"], route_class=IdempotentRoute)


class ApprovalCreate(BaseModel):
    """``POST /api/v1/approvals`` body."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["quota", "extend_runtime", "reclaim_lock"]
    reason: str = Field(min_length=1, max_length=MAX_REASON_CHARS)
    project: str | None = Field(default=None, max_length=63, description="project name (quota; optional for jobs)")
    job_id: int | None = Field(default=None, description="the job (extend_runtime, reclaim_lock)")
    payload: dict | None = Field(default=None, description=(
        'quota: {"guarantee"|"deserved"|"capability": {"nvidia.com/gpu": 8, "cpu": "64", '
        '"nvidia.com/gpu:NVIDIA-A100-SXM4-80GB": 4}}; extend_runtime: {"max_runtime": 43200 or "12h"}'))


class ApprovalDecision(BaseModel):
    """``POST /api/v1/approvals/{id}/approve`` and ``/reject`` body (optional)."""

    model_config = ConfigDict(extra="forbid")
    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS)


CREATE_BODY = request_body(ApprovalCreate)
DECISION_BODY = {"requestBody": {**request_body(ApprovalDecision)["requestBody"], "required": False}}


@router.post("/approvals", status_code=201, response_model=ApprovalPublic, openapi_extra=CREATE_BODY,
             responses=raises(404, 409))
async def create_approval(request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Ask for an approval: ``{"kind", "reason", "project"?, "job_id"?, "payload"?}``. An ``extend_runtime``
    request under the auto-approval rule comes back ``approved`` with ``auto: true``."""
    body = await decode_object(request, ("kind", "reason", "project", "job_id", "payload"))
    created = await run_in_threadpool(
        approvals.create_request, c, a, body.get("kind"), body.get("reason"), body.get("project"),
        body.get("job_id"), body.get("payload"),
    )
    return json_response(created, 201)


@router.get("/approvals", response_model=ApprovalPage)
async def list_approvals(
    c: CtxDep, a: CurrentActor, status: Annotated[str | None, Query(max_length=16)] = None,
    kind: Annotated[str | None, Query(max_length=32)] = None, mine: bool = False,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=approvals.MAX_PAGE_SIZE)] = 20,
) -> Response:
    """Requests the caller may read, newest first (platform admins: all; project admins: their projects' and
    their own; others: their own). Filters ``status``, ``kind``, ``mine=true``."""
    return json_response(await run_read(approvals.list_approvals, c, a, status, kind, mine, page, page_size))


@router.get("/approvals/{id}", response_model=ApprovalPublic)
async def get_approval(id: ObjectId, c: CtxDep, a: CurrentActor) -> Response:
    """One request (its requester, the admins of its project, platform admins)."""
    return json_response(await run_read(approvals.get_approval, c, a, id))


@router.post("/approvals/{id}/approve", response_model=ApprovalPublic, openapi_extra=DECISION_BODY)
async def approve(id: ObjectId, request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Approve a pending request and carry it out (``{"note"?}``); 409 when it is decided or closed."""
    body = await decode_optional_object(request, ("note",))
    return json_response(await run_in_threadpool(approvals.approve, c, a, id, body.get("note")))


@router.post("/approvals/{id}/reject", response_model=ApprovalPublic, openapi_extra=DECISION_BODY)
async def reject(id: ObjectId, request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Reject a pending request (``{"note"?}``); a rejected large job is cancelled. 409 when decided/closed."""
    body = await decode_optional_object(request, ("note",))
    return json_response(await run_in_threadpool(approvals.reject, c, a, id, body.get("note")))
