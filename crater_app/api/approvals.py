"""Routes for approval requests and the caller's notifications (issue 3), mounted by ``build_api``. Every route
resolves the caller and hands it to a service, which asks ``domain.policy``."""

from typing import Annotated, Any, Literal

from fastapi import FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from crater_app.api.body import decode_object
from crater_app.api.docs import request_body
from crater_app.api.errors import request_language
from crater_app.schemas import ApprovalPage, ApprovalPublic, NotificationList
from crater_app.domain.approvals import MAX_NOTE_CHARS, MAX_REASON_CHARS
from crater_app.services import approvals, notifications


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


class NotificationsRead(BaseModel):
    """``POST /api/v1/notifications/read`` body: ``ids`` to mark read; left out: all of the caller's."""

    model_config = ConfigDict(extra="forbid")
    ids: list[int] | None = Field(default=None, max_length=notifications.MAX_IDS)


CREATE_BODY = request_body(ApprovalCreate)
DECISION_BODY = {"requestBody": {**request_body(ApprovalDecision)["requestBody"], "required": False}}
READ_BODY = {"requestBody": {**request_body(NotificationsRead)["requestBody"], "required": False}}


async def _optional_object(request: Request, allowed: set[str], what: str) -> dict:
    """The body as :func:`decode_object` reads it, or ``{}`` when the request has no body at all."""
    if request.headers.get("content-length") in (None, "0") and "transfer-encoding" not in request.headers:
        return {}
    return await decode_object(request, allowed, what)


def install(app: FastAPI, prefix: str, Ctx: Any, Me: Any, read: Any) -> None:
    """Add the routes to ``app`` under ``prefix``. ``Ctx``/``Me`` are the context and caller dependencies of
    ``build_api``; ``read`` runs a blocking read in the read thread pool."""

    def dump(model) -> dict:
        return model.model_dump(mode="json")

    @app.post(f"{prefix}/approvals", tags=["approvals"], status_code=201, response_model=ApprovalPublic,
              openapi_extra=CREATE_BODY)
    async def create_approval(request: Request, c: Ctx, a: Me) -> JSONResponse:
        """Ask for an approval: ``{"kind", "reason", "project"?, "job_id"?, "payload"?}``. An ``extend_runtime``
        request under the auto-approval rule comes back ``approved`` with ``auto: true``."""
        body = await decode_object(request, {"kind", "reason", "project", "job_id", "payload"}, "a kind and a reason")
        created = await run_in_threadpool(
            approvals.create_request, c, a, body.get("kind"), body.get("reason"), body.get("project"),
            body.get("job_id"), body.get("payload"),
        )
        return JSONResponse(dump(created), status_code=201)

    @app.get(f"{prefix}/approvals", tags=["approvals"], response_model=ApprovalPage)
    async def list_approvals(
        c: Ctx, a: Me, status: Annotated[str | None, Query(max_length=16)] = None,
        kind: Annotated[str | None, Query(max_length=32)] = None, mine: bool = False,
        page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
        page_size: Annotated[int, Query(ge=1, le=approvals.MAX_PAGE_SIZE)] = 20,
    ) -> JSONResponse:
        """Requests the caller may read, newest first (platform admins: all; project admins: their projects' and
        their own; others: their own). Filters ``status``, ``kind``, ``mine=true``."""
        return JSONResponse(dump(await read(approvals.list_approvals, c, a, status, kind, mine, page, page_size)))

    @app.get(f"{prefix}/approvals/{{approval_id}}", tags=["approvals"], response_model=ApprovalPublic)
    async def get_approval(approval_id: int, c: Ctx, a: Me) -> JSONResponse:
        """One request (its requester, the admins of its project, platform admins)."""
        return JSONResponse(dump(await read(approvals.get_approval, c, a, approval_id)))

    @app.post(f"{prefix}/approvals/{{approval_id}}/approve", tags=["approvals"], response_model=ApprovalPublic,
              openapi_extra=DECISION_BODY)
    async def approve(approval_id: int, request: Request, c: Ctx, a: Me) -> JSONResponse:
        """Approve a pending request and carry it out (``{"note"?}``); 409 when it is decided or closed."""
        body = await _optional_object(request, {"note"}, "an optional note")
        return JSONResponse(dump(await run_in_threadpool(approvals.approve, c, a, approval_id, body.get("note"))))

    @app.post(f"{prefix}/approvals/{{approval_id}}/reject", tags=["approvals"], response_model=ApprovalPublic,
              openapi_extra=DECISION_BODY)
    async def reject(approval_id: int, request: Request, c: Ctx, a: Me) -> JSONResponse:
        """Reject a pending request (``{"note"?}``); a rejected large job is cancelled. 409 when decided/closed."""
        body = await _optional_object(request, {"note"}, "an optional note")
        return JSONResponse(dump(await run_in_threadpool(approvals.reject, c, a, approval_id, body.get("note"))))

    @app.get(f"{prefix}/notifications", tags=["notifications"], response_model=NotificationList)
    async def list_notifications(
        request: Request, c: Ctx, a: Me, limit: Annotated[int, Query(ge=1, le=notifications.MAX_LIST)] = 50,
        unread: bool = False,
    ) -> JSONResponse:
        """The caller's notifications, unread first then newest (``unread=true``: only unread), and the count of
        unread ones; each ``message`` in the request's language (``Accept-Language``), ``kind`` + ``args`` as
        stored."""
        found = await read(notifications.list_notifications, c, a, limit, unread)
        return JSONResponse(dump(notifications.localized(found, request_language(request))))

    @app.post(f"{prefix}/notifications/read", tags=["notifications"], openapi_extra=READ_BODY)
    async def mark_read(request: Request, c: Ctx, a: Me) -> JSONResponse:
        """Mark notifications read: ``{"ids": [...]}``, or all of them without ``ids``. Answers
        ``{"marked": n, "unread": m}``."""
        body = await _optional_object(request, {"ids"}, "optional ids")
        marked = await run_in_threadpool(notifications.mark_read, c, a, body.get("ids"))
        return JSONResponse({"marked": marked, "unread": await read(notifications.unread_count, c, a)})
