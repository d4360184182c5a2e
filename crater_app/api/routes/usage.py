"""``/api/v1/usage``: accelerator-, CPU-core- and memory-GiB-hours of the jobs the caller may see."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from crater_app.api.deps import CtxDep, CurrentActor, run_read
from crater_app.api.responses import json_response
from crater_app.api.routes import API_PREFIX
from crater_app.schemas import UsagePublic
from crater_app.services import usage

router = APIRouter(prefix=API_PREFIX, tags=["usage"])


@router.get("/usage", response_model=UsagePublic)
async def get_usage(
    c: CtxDep, a: CurrentActor, group_by: Annotated[str | None, Query(max_length=16)] = None,
    since: Annotated[str | None, Query(alias="from", max_length=64)] = None,
    until: Annotated[str | None, Query(alias="to", max_length=64)] = None,
    granularity: Annotated[str, Query(max_length=16)] = "day",
) -> Response:
    """Accelerator-, CPU-core- and memory-GiB-hours of the jobs the caller may see (platform admins: all;
    project admins: their projects; others: their own), per ``group_by`` (``user``/``project``/``model``;
    default: ``user`` for project admins, else ``project``) and
    ``granularity`` (``day``/``month``, UTC) in ``[from, to)`` (ISO 8601 with offset; default the last 30
    days; at most 366 days)."""
    return json_response(await run_read(usage.usage, c, a, group_by, since, until, granularity), by_alias=True)
