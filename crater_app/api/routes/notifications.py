"""``/api/v1/notifications``: the caller's notifications (approval requests and decisions, ...)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from crater_app.api.body import decode_optional_object
from crater_app.api.deps import CtxDep, CurrentActor, run_read
from crater_app.api.docs import request_body
from crater_app.api.error_docs import raises
from crater_app.api.errors import request_language
from crater_app.api.responses import json_response
from crater_app.api.routes import API_PREFIX
from crater_app.schemas import NotificationList
from crater_app.services import notifications

router = APIRouter(prefix=API_PREFIX, tags=["notifications"])


class NotificationsRead(BaseModel):
    """``POST /api/v1/notifications/read`` body: ``ids`` to mark read; left out: all of the caller's."""

    model_config = ConfigDict(extra="forbid")
    ids: list[int] | None = Field(default=None, max_length=notifications.MAX_IDS)


READ_BODY = {"requestBody": {**request_body(NotificationsRead)["requestBody"], "required": False}}


@router.get("/notifications", response_model=NotificationList, responses=raises(403))
async def list_notifications(
    request: Request, c: CtxDep, a: CurrentActor, limit: Annotated[int, Query(ge=1, le=notifications.MAX_LIST)] = 50,
    unread: bool = False,
) -> Response:
    """The caller's notifications, unread first then newest (``unread=true``: only unread), and the count of
    unread ones; each ``message`` in the request's language (``Accept-Language``), ``kind`` + ``args`` as
    stored."""
    found = await run_read(notifications.list_notifications, c, a, limit, unread)
    return json_response(notifications.localized(found, request_language(request)))


@router.post("/notifications/read", openapi_extra=READ_BODY)
async def mark_read(request: Request, c: CtxDep, a: CurrentActor) -> JSONResponse:
    """Mark notifications read: ``{"ids": [...]}``, or all of them without ``ids``. Answers
    ``{"marked": n, "unread": m}``."""
    body = await decode_optional_object(request, ("ids",))
    marked = await run_in_threadpool(notifications.mark_read, c, a, body.get("ids"))
    return JSONResponse({"marked": marked, "unread": await run_read(notifications.unread_count, c, a)})
