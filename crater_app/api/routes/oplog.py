"""``/api/v1/operation-logs``: the operation log (platform admins), read-only: no route edits or deletes it."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response

from crater_app.api.deps import CtxDep, CurrentActor, run_read
from crater_app.api.responses import json_response
from crater_app.api.routes import API_PREFIX
from crater_app.schemas import OperationLogPage
from crater_app.services import oplog

router = APIRouter(prefix=API_PREFIX, tags=["operation-logs"])


@router.get("/operation-logs", response_model=OperationLogPage, responses={200: {"content": {"text/csv": {}}}})
async def operation_logs(
    c: CtxDep, a: CurrentActor, actor: Annotated[str | None, Query(max_length=64)] = None,
    action: Annotated[str | None, Query(max_length=64)] = None,
    target: Annotated[str | None, Query(max_length=255)] = None,
    since: Annotated[str | None, Query(alias="from", max_length=64)] = None,
    until: Annotated[str | None, Query(alias="to", max_length=64)] = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=oplog.MAX_PAGE_SIZE)] = 50,
    format: Literal["json", "csv"] = "json",
) -> Response:
    """The operation log, newest first (platform admins). Filters: ``actor``, ``action`` (exact),
    ``target`` (substring), ``from``/``to`` (ISO 8601 with offset). ``format=csv``: every matching row
    (at most 100,000; header ``X-Crater-Truncated: true`` when cut) as ``text/csv``."""
    if format == "csv":
        text, truncated = await run_read(oplog.export_csv, c, a, actor, action, target, since, until)
        return Response(text, media_type="text/csv; charset=utf-8", headers={
            "Content-Disposition": 'attachment; filename="operation-log.csv"',
            "X-Crater-Truncated": "true" if truncated else "false",
        })
    return json_response(await run_read(oplog.list_logs, c, a, actor, action, target, since, until, page, page_size))
