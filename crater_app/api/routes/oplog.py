"""``/api/v1/operation-logs``: the operation log (platform admins), read-only: no route edits or deletes it."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request, Response

from crater_app.api.deps import CtxDep, CurrentActor, run_read
from crater_app.api.error_docs import raises
from crater_app.api.errors import request_language
from crater_app.api.responses import json_response
from crater_app.api.routes import API_PREFIX
from crater_app.schemas import OperationLogPage, OperationLogPublic
from crater_app.services import oplog

router = APIRouter(prefix=API_PREFIX, tags=["operation-logs"])


@router.get("/operation-logs", response_model=OperationLogPage,
            responses={200: {"content": {"text/csv": {}}}, **raises(403)})
async def operation_logs(
    request: Request, c: CtxDep, a: CurrentActor, actor: Annotated[str | None, Query(max_length=64)] = None,
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
    (at most 100,000; header ``X-Crater-Truncated: true`` when cut) as ``text/csv``. ``details`` are in the
    request's language (``Accept-Language``), rendered from each row's ``code`` + ``args`` (a row without a code
    keeps the text it was written with)."""
    lang = request_language(request)
    if format == "csv":
        text, truncated = await run_read(oplog.export_csv, c, a, actor, action, target, since, until, lang=lang)
        return Response(text, media_type="text/csv; charset=utf-8", headers={
            "Content-Disposition": 'attachment; filename="operation-log.csv"',
            "X-Crater-Truncated": "true" if truncated else "false",
        })
    found = await run_read(oplog.list_logs, c, a, actor, action, target, since, until, page, page_size)
    return json_response(found.model_copy(update={"items": [localized_row(r, lang) for r in found.items]}))


def localized_row(row: OperationLogPublic, lang: str) -> OperationLogPublic:
    """``row`` with its ``details`` in ``lang`` (see :func:`crater_app.services.oplog.details_text`)."""
    text = oplog.details_text(lang, row.code, row.args, row.details)
    return row if text == row.details else row.model_copy(update={"details": text})
