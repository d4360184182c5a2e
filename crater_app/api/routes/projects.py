"""``/api/v1/projects``: projects, their members and shares, their quota and their billing allowance. Every route
resolves the caller and hands it to a service, which asks ``domain.policy``."""

from __future__ import annotations

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
from crater_app.domain.billing import MAX_ALLOWANCE_POINTS
from crater_app.schemas import ProjectBillingPublic, ProjectMemberPublic, ProjectPublic, ProjectQuotaPublic
from crater_app.services import billing, projects, quotas

router = APIRouter(prefix=API_PREFIX, tags=["projects"], route_class=IdempotentRoute)


class ProjectBilling(BaseModel):
    """``PUT /api/v1/projects/{name}/billing`` body (platform admins)."""

    model_config = ConfigDict(extra="forbid")
    member_allowance_points: float = Field(ge=0, le=MAX_ALLOWANCE_POINTS,
                                           description="free points per member per billing period (month)")


@router.post("/projects", status_code=201, response_model=ProjectPublic, openapi_extra=docs.PROJECT_CREATE_BODY)
async def create_project(request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Create a project (platform admins): ``{"name", "display_name"?, "description"?, "expires_at"?}``."""
    body = await decode_object(request, ("name", "display_name", "description", "expires_at"))
    project = await run_in_threadpool(
        projects.create_project, c, a, body.get("name"), body.get("display_name", ""),
        body.get("description", ""), body.get("expires_at"),
    )
    return json_response(project, 201)


@router.get("/projects", response_model=list[ProjectPublic])
async def list_projects(c: CtxDep, a: CurrentActor) -> Response:
    """Projects by name: all for platform admins, the caller's own (with their role) for others."""
    return json_list(await run_read(projects.list_projects, c, a))


@router.get("/projects/{name}", response_model=ProjectPublic)
async def get_project(name: str, c: CtxDep, a: CurrentActor) -> Response:
    """One project (members and platform admins); the member list for project and platform admins."""
    return json_response(await run_read(projects.get_project, c, a, name))


@router.put("/projects/{name}/members/{username}", response_model=ProjectMemberPublic, responses=raises(409),
            openapi_extra=docs.MEMBER_ROLE_BODY)
async def set_member(name: str, username: str, request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Add a member or change their role and share: ``{"role": "admin"|"member"|"viewer", "share"?: {...}}``
    (platform/project admins; the share is a resource list inside the project's capability)."""
    body = await decode_object(request, ("role", "share"))
    member = await run_in_threadpool(projects.set_member, c, a, name, username, body.get("role"), body.get("share"))
    return json_response(member)


@router.put("/projects/{name}/quota", response_model=ProjectQuotaPublic, openapi_extra=docs.QUOTA_BODY)
async def set_quota(name: str, request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Set the project's quota (platform admins): ``{"guarantee": {...}, "deserved": {...}, "capability":
    {...}}``; answers the quota with the current admitted usage."""
    body = await decode_object(request, ("guarantee", "deserved", "capability"))
    return json_response(await run_in_threadpool(quotas.set_quota, c, a, name, body))


@router.get("/projects/{name}/quota", response_model=ProjectQuotaPublic)
async def get_quota(name: str, c: CtxDep, a: CurrentActor) -> Response:
    """The project's quota, its admitted usage and its admitted/held job counts (whoever may read it)."""
    return json_response(await run_read(quotas.get_quota, c, a, name))


@router.delete("/projects/{name}/members/{username}", status_code=204, responses=raises(409))
async def remove_member(name: str, username: str, c: CtxDep, a: CurrentActor) -> Response:
    """Remove a member (platform/project admins); 409 when it is their only project (the default one)."""
    await run_in_threadpool(projects.remove_member, c, a, name, username)
    return Response(status_code=204)


@router.put("/projects/{name}/billing", response_model=ProjectBillingPublic,
            openapi_extra=docs.request_body(ProjectBilling))
async def set_project_billing(name: str, request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """Set the free points each member of the project gets per month (platform admins):
    ``{"member_allowance_points"}``."""
    body = await decode_object(request, ("member_allowance_points",))
    result = await run_in_threadpool(billing.set_project_billing, c, a, name, body.get("member_allowance_points"))
    return json_response(result, by_alias=True)
