"""``/api/v1/tokens``: the caller's personal API tokens (for the CLI and scripts): create, list, revoke."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool

from crater_app.api import docs
from crater_app.api.body import decode_object
from crater_app.api.deps import CtxDep, CurrentActor, run_read
from crater_app.api.idempotency import IdempotentRoute
from crater_app.api.responses import json_list, json_response
from crater_app.api.params import ObjectId
from crater_app.api.routes import API_PREFIX
from crater_app.schemas import PersonalTokenCreated, PersonalTokenPublic
from crater_app.services import tokens

router = APIRouter(prefix=API_PREFIX, tags=["tokens"], route_class=IdempotentRoute)


@router.post("/tokens", status_code=201, response_model=PersonalTokenCreated, openapi_extra=docs.TOKEN_CREATE_BODY)
async def create_token(request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Create a personal token: ``{"name", "expires_in_days"?: 1..365}``; the secret is in this answer only (and
    in its replay to the same caller for the same ``Idempotency-Key`` within 24 h, kept encrypted until then).
    ``Cache-Control: no-store``: no cache keeps the answer (as for OAuth token answers, RFC 6749 §5.1)."""
    body = await decode_object(request, ("name", "expires_in_days"))
    created = await run_in_threadpool(
        tokens.create_token, c, a, body.get("name"), body.get("expires_in_days", tokens.DEFAULT_EXPIRY_DAYS)
    )
    response = json_response(created, 201)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/tokens", response_model=list[PersonalTokenPublic])
async def list_tokens(c: CtxDep, a: CurrentActor) -> Response:
    """The caller's personal tokens, newest first (no secrets)."""
    return json_list(await run_read(tokens.list_tokens, c, a))


@router.delete("/tokens/{id}", response_model=PersonalTokenPublic)
async def revoke_token(id: ObjectId, c: CtxDep, a: CurrentActor) -> Response:
    """Revoke a personal token (its owner or a platform admin)."""
    return json_response(await run_in_threadpool(tokens.revoke_token, c, a, id))
