"""Routes for usage reports and billing in points (issue 3), mounted by ``build_api``. Every route resolves the
caller and hands it to a service, which asks ``domain.policy``."""

from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from crater_app.api.body import decode_body, decode_object
from crater_app.api.docs import request_body
from crater_app.schemas import (
    BalancePublic,
    BillingPricePublic,
    PointGrantPublic,
    ProjectBillingPublic,
    UsagePublic,
)
from crater_app.domain.billing import MAX_ALLOWANCE_POINTS, MAX_GRANT_POINTS, MAX_NOTE_CHARS, MAX_POINTS_PER_HOUR
from crater_app.domain.naming import MAX_MODEL_CHARS
from crater_app.services import billing, usage


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
    username: str = Field(max_length=63)
    points: float = Field(ge=-MAX_GRANT_POINTS, le=MAX_GRANT_POINTS, description="non-zero; negative takes back")
    note: str = Field(default="", max_length=MAX_NOTE_CHARS)


class ProjectBilling(BaseModel):
    """``PUT /api/v1/projects/{name}/billing`` body (platform admins)."""

    model_config = ConfigDict(extra="forbid")
    member_allowance_points: float = Field(ge=0, le=MAX_ALLOWANCE_POINTS, description="free points per member per billing period (month)")


_PRICES_BODY = {"requestBody": {"required": True, "content": {"application/json": {"schema": {
    "type": "array", "items": PriceItem.model_json_schema()}}}}}


def install(app: FastAPI, prefix: str, Ctx: Any, Me: Any, read: Any) -> None:
    """Add the routes to ``app`` under ``prefix``. ``Ctx``/``Me`` are the context and caller dependencies of
    ``build_api``; ``read`` runs a blocking read in the read thread pool."""

    def dump(model) -> dict:
        return model.model_dump(mode="json", by_alias=True)

    @app.get(f"{prefix}/usage", tags=["usage"], response_model=UsagePublic)
    async def get_usage(
        c: Ctx, a: Me, group_by: Annotated[str | None, Query(max_length=16)] = None,
        since: Annotated[str | None, Query(alias="from", max_length=64)] = None,
        until: Annotated[str | None, Query(alias="to", max_length=64)] = None,
        granularity: Annotated[str, Query(max_length=16)] = "day",
    ) -> JSONResponse:
        """Accelerator-, CPU-core- and memory-GiB-hours of the jobs the caller may see (platform admins: all;
        project admins: their projects; others: their own), per ``group_by`` (``user``/``project``/``model``;
        default: ``user`` for project admins, else ``project``) and
        ``granularity`` (``day``/``month``, UTC) in ``[from, to)`` (ISO 8601 with offset; default the last 30
        days; at most 366 days)."""
        return JSONResponse(dump(await read(usage.usage, c, a, group_by, since, until, granularity)))

    @app.get(f"{prefix}/billing/prices", tags=["billing"], response_model=list[BillingPricePublic])
    async def list_prices(c: Ctx, a: Me) -> JSONResponse:
        """The price table: points per hour per core (``cpu``), per GiB (``memory``), per device of an accelerator
        resource, optionally per accelerator model."""
        return JSONResponse([dump(p) for p in await read(billing.list_prices, c, a)])

    @app.put(f"{prefix}/billing/prices", tags=["billing"], response_model=list[BillingPricePublic],
             openapi_extra=_PRICES_BODY)
    async def set_prices(request: Request, c: Ctx, a: Me) -> JSONResponse:
        """Replace the price table (platform admins): a list of ``{"resource", "model"?, "points_per_hour"}``."""
        body = await decode_body(request)
        return JSONResponse([dump(p) for p in await run_in_threadpool(billing.set_prices, c, a, body)])

    @app.get(f"{prefix}/billing/balance", tags=["billing"], response_model=BalancePublic)
    async def get_balance(
        c: Ctx, a: Me, project: Annotated[str | None, Query(max_length=63)] = None,
    ) -> JSONResponse:
        """The caller's balances: the free allowance left this month per project (``project``: only that one) and
        the extra balance."""
        return JSONResponse(dump(await read(billing.balance, c, a, project)))

    @app.post(f"{prefix}/billing/grants", tags=["billing"], status_code=201, response_model=PointGrantPublic,
              openapi_extra=request_body(PointGrant))
    async def grant_points(request: Request, c: Ctx, a: Me) -> JSONResponse:
        """Add points to a user's extra balance (platform admins): ``{"username", "points", "note"?}``."""
        body = await decode_object(request, {"username", "points", "note"}, "a username and points")
        granted = await run_in_threadpool(billing.grant_points, c, a, body.get("username"), body.get("points"),
                                          body.get("note", ""))
        return JSONResponse(dump(granted), status_code=201)

    @app.put(f"{prefix}/projects/{{name}}/billing", tags=["projects"], response_model=ProjectBillingPublic,
             openapi_extra=request_body(ProjectBilling))
    async def set_project_billing(name: str, request: Request, c: Ctx, a: Me) -> JSONResponse:
        """Set the free points each member of the project gets per month (platform admins):
        ``{"member_allowance_points"}``."""
        body = await decode_object(request, {"member_allowance_points"}, "member_allowance_points")
        result = await run_in_threadpool(billing.set_project_billing, c, a, name,
                                         body.get("member_allowance_points"))
        return JSONResponse(dump(result))
