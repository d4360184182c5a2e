"""``/api/v1/billing``: the price table in points, the caller's balances and grants of points (platform admins).
A project's monthly allowance is ``PUT /api/v1/projects/{name}/billing`` (routes/projects.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from crater_app.api.body import decode_body, decode_object
from crater_app.api.deps import CtxDep, CurrentActor, run_read
from crater_app.api.docs import request_body
from crater_app.api.error_docs import raises
from crater_app.api.idempotency import IdempotentRoute
from crater_app.api.responses import json_list, json_response
from crater_app.api.routes import API_PREFIX
from crater_app.domain.billing import MAX_GRANT_POINTS, MAX_NOTE_CHARS, MAX_POINTS_PER_HOUR
from crater_app.domain.naming import MAX_MODEL_CHARS
from crater_app.schemas import BalancePublic, BillingPricePublic, PointGrantPublic
from crater_app.services import billing

router = APIRouter(prefix=API_PREFIX, tags=["billing"], route_class=IdempotentRoute)


class PriceItem(BaseModel):
    """One row of ``PUT /api/v1/billing/prices`` (the body is a list of these; it replaces the whole table)."""

    model_config = ConfigDict(extra="forbid")
    resource: str = Field(description="'cpu' (per core), 'memory' (per GiB) or an accelerator resource such as "
                                      "'nvidia.com/gpu' (per device)")
    model: str = Field(default="", max_length=MAX_MODEL_CHARS, description="accelerator model; '' = every model")
    points_per_hour: float = Field(ge=0, le=MAX_POINTS_PER_HOUR)


class PointGrant(BaseModel):
    """``POST /api/v1/billing/grants`` body (platform admins)."""

    model_config = ConfigDict(extra="forbid")
    username: str = Field(max_length=64)
    points: float = Field(ge=-MAX_GRANT_POINTS, le=MAX_GRANT_POINTS, description="non-zero; negative takes back")
    note: str = Field(default="", max_length=MAX_NOTE_CHARS)


_PRICES_BODY = {"requestBody": {"required": True, "content": {"application/json": {"schema": {
    "type": "array", "items": PriceItem.model_json_schema()}}}}}


@router.get("/billing/prices", response_model=list[BillingPricePublic], responses=raises(403))
async def list_prices(c: CtxDep, a: CurrentActor) -> Response:
    """The price table: points per hour per core (``cpu``), per GiB (``memory``), per device of an accelerator
    resource, optionally per accelerator model."""
    return json_list(await run_read(billing.list_prices, c, a), by_alias=True)


@router.put("/billing/prices", response_model=list[BillingPricePublic], openapi_extra=_PRICES_BODY)
async def set_prices(request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Replace the price table (platform admins): a list of ``{"resource", "model"?, "points_per_hour"}``."""
    body = await decode_body(request)
    return json_list(await run_in_threadpool(billing.set_prices, c, a, body), by_alias=True)


@router.get("/billing/balance", response_model=BalancePublic, responses=raises(403, 404))
async def get_balance(c: CtxDep, a: CurrentActor, project: Annotated[str | None, Query(max_length=63)] = None,
                      ) -> Response:
    """The caller's balances: the free allowance left this month per project (``project``: only that one) and
    the extra balance."""
    return json_response(await run_read(billing.balance, c, a, project), by_alias=True)


@router.post("/billing/grants", status_code=201, response_model=PointGrantPublic, responses=raises(404),
             openapi_extra=request_body(PointGrant))
async def grant_points(request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Add points to a user's extra balance (platform admins): ``{"username", "points", "note"?}``."""
    body = await decode_object(request, ("username", "points", "note"))
    granted = await run_in_threadpool(billing.grant_points, c, a, body.get("username"), body.get("points"),
                                      body.get("note", ""))
    return json_response(granted, 201, by_alias=True)
