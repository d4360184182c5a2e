"""Routes for projects and members, personal API tokens and the operation log (issue 3), mounted by
``build_api``. Every route resolves the caller and hands it to a service, which asks ``domain.policy``."""

from typing import Annotated, Any, Literal

from fastapi import FastAPI, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from crater_app.api import docs
from crater_app.api.body import decode_object
from crater_app.schemas import (
    OperationLogPage,
    PersonalTokenCreated,
    PersonalTokenPublic,
    ProjectMemberPublic,
    ProjectPublic,
    ProjectQuotaPublic,
)
from crater_app.services import oplog, projects, quotas, tokens



def install(app: FastAPI, prefix: str, Ctx: Any, Me: Any, read: Any) -> None:
    """Add the routes to ``app`` under ``prefix``. ``Ctx``/``Me`` are the context and caller dependencies of
    ``build_api``; ``read`` runs a blocking read in the read thread pool."""

    def dump(model) -> dict:
        return model.model_dump(mode="json")

    # ---- projects and members ----------------------------------------------------------------------------
    @app.post(f"{prefix}/projects", tags=["projects"], status_code=201, response_model=ProjectPublic,
              openapi_extra=docs.PROJECT_CREATE_BODY)
    async def create_project(request: Request, c: Ctx, a: Me) -> JSONResponse:
        """Create a project (platform admins): ``{"name", "display_name"?, "description"?, "expires_at"?}``."""
        body = await decode_object(request, {"name", "display_name", "description", "expires_at"}, "a name")
        project = await run_in_threadpool(
            projects.create_project, c, a, body.get("name"), body.get("display_name", ""),
            body.get("description", ""), body.get("expires_at"),
        )
        return JSONResponse(dump(project), status_code=201)

    @app.get(f"{prefix}/projects", tags=["projects"], response_model=list[ProjectPublic])
    async def list_projects(c: Ctx, a: Me) -> JSONResponse:
        """Projects by name: all for platform admins, the caller's own (with their role) for others."""
        return JSONResponse([dump(p) for p in await read(projects.list_projects, c, a)])

    @app.get(f"{prefix}/projects/{{name}}", tags=["projects"], response_model=ProjectPublic)
    async def get_project(name: str, c: Ctx, a: Me) -> JSONResponse:
        """One project (members and platform admins); the member list for project and platform admins."""
        return JSONResponse(dump(await read(projects.get_project, c, a, name)))

    @app.put(f"{prefix}/projects/{{name}}/members/{{username}}", tags=["projects"],
             response_model=ProjectMemberPublic, openapi_extra=docs.MEMBER_ROLE_BODY)
    async def set_member(name: str, username: str, request: Request, c: Ctx, a: Me) -> JSONResponse:
        """Add a member or change their role and share: ``{"role": "admin"|"member"|"viewer", "share"?: {...}}``
        (platform/project admins; the share is a resource list inside the project's capability)."""
        body = await decode_object(request, {"role", "share"}, "a role")
        member = await run_in_threadpool(projects.set_member, c, a, name, username, body.get("role"),
                                         body.get("share"))
        return JSONResponse(dump(member))

    @app.put(f"{prefix}/projects/{{name}}/quota", tags=["projects"], response_model=ProjectQuotaPublic,
             openapi_extra=docs.QUOTA_BODY)
    async def set_quota(name: str, request: Request, c: Ctx, a: Me) -> JSONResponse:
        """Set the project's quota (platform admins): ``{"guarantee": {...}, "deserved": {...}, "capability":
        {...}}``; answers the quota with the current admitted usage."""
        body = await decode_object(request, {"guarantee", "deserved", "capability"}, "guarantee, deserved or capability")
        return JSONResponse(dump(await run_in_threadpool(quotas.set_quota, c, a, name, body)))

    @app.get(f"{prefix}/projects/{{name}}/quota", tags=["projects"], response_model=ProjectQuotaPublic)
    async def get_quota(name: str, c: Ctx, a: Me) -> JSONResponse:
        """The project's quota, its admitted usage and its admitted/held job counts (whoever may read it)."""
        return JSONResponse(dump(await read(quotas.get_quota, c, a, name)))

    @app.delete(f"{prefix}/projects/{{name}}/members/{{username}}", tags=["projects"], status_code=204)
    async def remove_member(name: str, username: str, c: Ctx, a: Me) -> Response:
        """Remove a member (platform/project admins); 409 when it is their only project (the default one)."""
        await run_in_threadpool(projects.remove_member, c, a, name, username)
        return Response(status_code=204)

    # ---- personal API tokens -----------------------------------------------------------------------------
    @app.post(f"{prefix}/tokens", tags=["tokens"], status_code=201, response_model=PersonalTokenCreated,
              openapi_extra=docs.TOKEN_CREATE_BODY)
    async def create_token(request: Request, c: Ctx, a: Me) -> JSONResponse:
        """Create a personal token: ``{"name", "expires_in_days"?: 1..365}``; the secret is in this answer only."""
        body = await decode_object(request, {"name", "expires_in_days"}, "a name")
        created = await run_in_threadpool(
            tokens.create_token, c, a, body.get("name"), body.get("expires_in_days", tokens.DEFAULT_EXPIRY_DAYS)
        )
        return JSONResponse(dump(created), status_code=201)

    @app.get(f"{prefix}/tokens", tags=["tokens"], response_model=list[PersonalTokenPublic])
    async def list_tokens(c: Ctx, a: Me) -> JSONResponse:
        """The caller's personal tokens, newest first (no secrets)."""
        return JSONResponse([dump(t) for t in await read(tokens.list_tokens, c, a)])

    @app.delete(f"{prefix}/tokens/{{token_id}}", tags=["tokens"], response_model=PersonalTokenPublic)
    async def revoke_token(token_id: int, c: Ctx, a: Me) -> JSONResponse:
        """Revoke a personal token (its owner or a platform admin)."""
        return JSONResponse(dump(await run_in_threadpool(tokens.revoke_token, c, a, token_id)))

    # ---- operation log (read-only: no route edits or deletes it) -------------------------------------------
    @app.get(f"{prefix}/operation-logs", tags=["operation-logs"], response_model=OperationLogPage,
             responses={200: {"content": {"text/csv": {}}}})
    async def operation_logs(
        c: Ctx, a: Me, actor: Annotated[str | None, Query(max_length=64)] = None,
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
            text, truncated = await read(oplog.export_csv, c, a, actor, action, target, since, until)
            return Response(text, media_type="text/csv; charset=utf-8", headers={
                "Content-Disposition": 'attachment; filename="operation-log.csv"',
                "X-Crater-Truncated": "true" if truncated else "false",
            })
        page_ = await read(oplog.list_logs, c, a, actor, action, target, since, until, page, page_size)
        return JSONResponse(dump(page_))
