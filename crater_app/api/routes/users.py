"""``/api/v1/users``: accounts (platform admins): create, list, read one with its limits, change one."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from crater_app.api import docs
from crater_app.api.body import decode_object
from crater_app.api.deps import CtxDep, CurrentActor, run_read
from crater_app.api.error_docs import raises
from crater_app.api.idempotency import IdempotentRoute
from crater_app.api.responses import json_list, json_response
from crater_app.api.routes import API_PREFIX
from crater_app.schemas import UserDetail, UserPublic
from crater_app.services import users

router = APIRouter(prefix=API_PREFIX, tags=["users"], route_class=IdempotentRoute)


class UserUpdate(BaseModel):
    """``PATCH /api/v1/users/{username}`` body (platform admins): any subset; ``null`` clears a limit."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["admin", "user", "guest"] | None = None
    status: Literal["active", "pending", "disabled"] | None = None
    max_sessions: int | None = Field(default=None, ge=0, le=users.MAX_SESSIONS_LIMIT)
    max_accelerators_per_job: int | None = Field(default=None, ge=0, le=users.MAX_ACCELERATORS_LIMIT)
    max_runtime: int | str | None = Field(default=None, description="seconds, or a duration such as '12h' or '1d'")


@router.post("/users", status_code=201, response_model=UserPublic, openapi_extra=docs.USER_CREATE_BODY)
async def create_user(request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Create a user (platform admins): ``{"username", "password", "role"?, "display_name"?, "email"?}``."""
    body = await decode_object(request, ("username", "password", "role", "display_name", "email"))
    user = await run_in_threadpool(
        users.create_user, c, a, body.get("username"), body.get("password"), body.get("role", "user"),
        body.get("display_name", ""), body.get("email", ""),
    )
    return json_response(user, 201)


@router.get("/users", response_model=list[UserPublic], responses=raises(403))
async def list_users(c: CtxDep, a: CurrentActor) -> Response:
    """All users (platform admins)."""
    return json_list(await run_read(users.list_users, c, a))


@router.get("/users/{username}", response_model=UserDetail, responses=raises(403))
async def get_user(username: str, c: CtxDep, a: CurrentActor) -> Response:
    """One account with its limits and how it signs in (platform admins)."""
    return json_response(await run_read(users.get_user, c, a, username))


@router.patch("/users/{username}", response_model=UserDetail, openapi_extra=docs.request_body(UserUpdate, yaml=True),
              responses=raises(409))
async def update_user(username: str, request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Change an account (platform admins): ``role``, ``status`` (activate a sign-up, disable: revokes its
    tokens), ``max_sessions``, ``max_accelerators_per_job``, ``max_runtime``; ``null`` clears a limit. Not
    one's own role or status; never the last active admin."""
    body = await decode_object(request, users.USER_UPDATE_FIELDS)
    return json_response(await run_in_threadpool(users.update_user, c, a, username, body))
