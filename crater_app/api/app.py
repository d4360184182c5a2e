"""The HTTP API (``/api/v1``), ``/healthz`` and ``/metrics``: a FastAPI app that Reflex mounts with
``api_transformer`` so that console and API share one port (DESIGN.md §6)."""


import os
from functools import partial
from typing import Annotated, Callable

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar
from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.security import APIKeyCookie, HTTPBearer
from fastapi.responses import JSONResponse, PlainTextResponse
from sqlalchemy import text

from crater_app.api import accounts, approvals, billing, docs, errors, fallback, governance, metrics, sessions
from crater_app.api.body import decode_body, decode_object
from crater_app.api.language import preferred_language
from crater_app.schemas import JobEventPublic, JobPage, JobPublic, NodePublic, TokenPublic, UserPublic
from crater_app.domain.policy import Actor
from crater_app.services import admission, identity, jobs, nodes, sign_in, users
from crater_app.services import metrics as platform_metrics
from crater_app.services.context import ServiceContext
from crater_app.settings import get_settings

API_PREFIX = "/api/v1"
# Reads (job pages, single jobs, events, nodes, the signed-in user) run in a small thread pool of their own
# instead of FastAPI's default of 40 threads: the process is bound by the interpreter lock, so more threads
# only add hand-overs between them (measured: 400 -> 560 first pages/s with 8 clients on 2 cores). One per core
# (at least 2, so that a query in SQLite, which releases the lock, overlaps with Python work), at most 8.
# Writes keep the default pool: concurrent submissions are written together (services.jobs), so they gain
# from many threads waiting at once.
READ_THREADS = max(2, min(8, os.cpu_count() or 2))
_read_limiter: RunVar[anyio.CapacityLimiter] = RunVar("crater_read_limiter")


async def _read(fn, *args, **kwargs):
    """Run the blocking read ``fn(*args, **kwargs)`` in the read pool (one pool per event loop)."""
    try:
        limiter = _read_limiter.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(READ_THREADS)
        _read_limiter.set(limiter)
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs), limiter=limiter)


def _dump(model) -> dict:
    return model.model_dump(mode="json")


def _json(model, status_code: int = 200) -> Response:
    """``model`` as a JSON response, serialised by pydantic-core in one step: the same document as
    ``JSONResponse(_dump(model))`` without building the intermediate dicts (hot paths: job pages, submit)."""
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")


def _localized(job: JobPublic, lang: str) -> JobPublic:
    """``job`` with its ``reason`` in ``lang`` (hold and preemption sentences; others stay as written)."""
    text = admission.reason_text(lang, job.reason_code, job.reason_args, job.reason)
    return job if text == job.reason else job.model_copy(update={"reason": text})


def build_api(ctx_provider: Callable[[], ServiceContext] | None = None) -> FastAPI:
    """Build the API app. ``ctx_provider`` returns the :class:`ServiceContext` (default: the process one)."""
    if ctx_provider is None:
        from crater_app.bootstrap import get_context

        ctx_provider = get_context
    app = FastAPI(
        title="Crater API", version="1", openapi_url=f"{API_PREFIX}/openapi.json", docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
    )
    errors.install(app)

    # The dependencies are ``async`` so that FastAPI does not hand each of them to a worker thread (a thread
    # hop per dependency per request); only work that may touch the database goes to a thread.
    async def ctx() -> ServiceContext:
        return ctx_provider()

    Ctx = Annotated[ServiceContext, Depends(ctx)]

    bearer = HTTPBearer(auto_error=False, description="a token from POST /api/v1/auth/token or a personal token")
    cookie = APIKeyCookie(name=get_settings().session_cookie_name, auto_error=False,
                          description="the console's session cookie (writes only from the console's origin)")

    async def actor(request: Request, c: Ctx, _: Annotated[object, Depends(bearer)] = None,
                    __: Annotated[object, Depends(cookie)] = None) -> Actor:
        """The caller: ``Authorization: Bearer`` or the console session cookie, resolved by
        ``services.identity.resolve`` (the ``bearer``/``cookie`` dependencies only document the schemes)."""
        credentials = sessions.credentials_of(request)
        # Every request is authenticated; a bearer token seen in the last 5 s resolves from memory (no I/O).
        cached = identity.cached_actor(c, credentials.bearer())
        return cached or await run_in_threadpool(identity.resolve, c, credentials)

    Me = Annotated[Actor, Depends(actor)]

    @app.get("/healthz", tags=["health"])
    def healthz(c: Ctx) -> dict:
        """Liveness and readiness: the database answers and the backend lists its nodes."""
        with c.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return {"status": "ok", "backend": c.backend.name, "nodes": len(c.backend.inventory())}

    @app.post(f"{API_PREFIX}/auth/token", tags=["auth"], response_model=TokenPublic, openapi_extra=docs.LOGIN_BODY)
    async def token(request: Request, c: Ctx) -> JSONResponse:
        """Exchange ``{"username", "password"}`` for a bearer token."""
        body = await decode_object(request, {"username", "password"}, "username and password")
        result = await run_in_threadpool(sign_in.login, c, body.get("username"), body.get("password"))
        return JSONResponse(_dump(result))

    @app.get(f"{API_PREFIX}/me", tags=["auth"], response_model=UserPublic)
    async def get_me(c: Ctx, a: Me) -> JSONResponse:
        """The signed-in user."""
        return _json(await _read(users.me, c, a))

    @app.post(f"{API_PREFIX}/users", tags=["users"], status_code=201, response_model=UserPublic,
              openapi_extra=docs.USER_CREATE_BODY)
    async def create_user(request: Request, c: Ctx, a: Me) -> JSONResponse:
        """Create a user (platform admins): ``{"username", "password", "role"?, "display_name"?, "email"?}``."""
        body = await decode_object(request, {"username", "password", "role", "display_name", "email"}, "a username")
        user = await run_in_threadpool(
            users.create_user, c, a, body.get("username"), body.get("password"), body.get("role", "user"),
            body.get("display_name", ""), body.get("email", ""),
        )
        return JSONResponse(_dump(user), status_code=201)

    @app.get(f"{API_PREFIX}/users", tags=["users"], response_model=list[UserPublic])
    async def list_users(c: Ctx, a: Me) -> JSONResponse:
        """All users (platform admins)."""
        return JSONResponse([_dump(u) for u in await _read(users.list_users, c, a)])

    @app.post(f"{API_PREFIX}/jobs", tags=["jobs"], status_code=201, response_model=JobPublic,
              openapi_extra=docs.JOB_SPEC_BODY)
    async def submit(request: Request, c: Ctx, a: Me) -> JSONResponse:
        """Submit a job spec (JSON, or YAML with ``Content-Type: application/yaml``)."""
        body = await decode_body(request)
        job = await run_in_threadpool(jobs.submit_job, c, a, body)
        return _json(job, 201)

    @app.get(f"{API_PREFIX}/jobs", tags=["jobs"], response_model=JobPage)
    async def list_jobs(
        request: Request, c: Ctx, a: Me, phase: str | None = None, q: str | None = None,
        page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
        page_size: Annotated[int, Query(ge=1, le=jobs.MAX_PAGE_SIZE)] = 20,
    ) -> JSONResponse:
        """Jobs visible to the caller, newest first: ``{"items", "total", "page", "page_size"}``. A held job's
        ``reason`` says why it waits, in Chinese when ``Accept-Language`` prefers ``zh``."""
        found = await _read(jobs.list_jobs, c, a, phase=phase, q=q, page=page, page_size=page_size)
        lang = preferred_language(request.headers.get("accept-language"))
        if lang != "en" and any(j.reason_code for j in found.items):
            found = found.model_copy(update={"items": [_localized(j, lang) for j in found.items]})
        return _json(found)

    @app.get(f"{API_PREFIX}/jobs/{{job_id}}", tags=["jobs"], response_model=JobPublic)
    async def get_job(job_id: int, request: Request, c: Ctx, a: Me) -> JSONResponse:
        """One job; ``reason``/``reason_code``/``reason_args`` say why it waits (``reason`` in Chinese when
        ``Accept-Language`` prefers ``zh``)."""
        job = await _read(jobs.get_job, c, a, job_id)
        return _json(_localized(job, preferred_language(request.headers.get("accept-language"))))

    @app.delete(f"{API_PREFIX}/jobs/{{job_id}}", tags=["jobs"], response_model=JobPublic)
    def cancel_job(job_id: int, c: Ctx, a: Me) -> JSONResponse:
        """Cancel a job (SIGTERM, SIGKILL after the grace period)."""
        return _json(jobs.cancel_job(c, a, job_id))

    @app.post(f"{API_PREFIX}/jobs/{{job_id}}/resubmit", tags=["jobs"], status_code=201, response_model=JobPublic)
    def resubmit_job(job_id: int, c: Ctx, a: Me) -> JSONResponse:
        """Submit a copy of the job as a new job."""
        return _json(jobs.resubmit_job(c, a, job_id), 201)

    @app.get(f"{API_PREFIX}/jobs/{{job_id}}/logs", tags=["jobs"], response_class=PlainTextResponse)
    async def job_logs(
        job_id: int, c: Ctx, a: Me, tail_bytes: Annotated[int, Query(ge=1, le=jobs.MAX_LOG_TAIL_BYTES)] = 65536
    ) -> Response:
        """The last ``tail_bytes`` of the job's stdout+stderr, as text."""
        return PlainTextResponse(await _read(jobs.job_logs, c, a, job_id, tail_bytes))

    @app.get(f"{API_PREFIX}/jobs/{{job_id}}/events", tags=["jobs"], response_model=list[JobEventPublic])
    async def job_events(job_id: int, c: Ctx, a: Me) -> JSONResponse:
        """The job's events, oldest first."""
        return JSONResponse([_dump(e) for e in await _read(jobs.job_events, c, a, job_id)])

    @app.get(f"{API_PREFIX}/nodes", tags=["nodes"], response_model=list[NodePublic])
    async def list_nodes(c: Ctx, a: Me) -> JSONResponse:
        """Nodes with capacity and each device's holder."""
        return JSONResponse([_dump(n) for n in await _read(nodes.list_nodes, c, a)])

    @app.get("/metrics", tags=["health"], response_class=PlainTextResponse)
    async def prometheus_metrics(c: Ctx) -> Response:
        """Platform health in the Prometheus text format (aggregates only; no token needed)."""
        body, content_type = metrics.render(await _read(platform_metrics.platform_figures, c))
        return Response(body, media_type=content_type)

    # Projects, members, personal tokens, operation log; before the catch-all below, which must stay last.
    governance.install(app, API_PREFIX, Ctx, Me, _read)
    # Approval requests and the caller's notifications.
    approvals.install(app, API_PREFIX, Ctx, Me, _read)
    billing.install(app, API_PREFIX, Ctx, Me, _read)  # usage and billing
    # Single sign-on, self sign-up, one account's administration.
    accounts.install(app, API_PREFIX, Ctx, Me, _read)
    # Console sessions (the cookie's round trips, sign out everywhere) and passwords.
    sessions.install(app, API_PREFIX, Ctx, Me, _read)

    # Last: JSON 404/405 for every other path and method under /api/v1 (and HEAD as GET without a body); the
    # console that Reflex mounts after these routes never answers an API path.
    app.router.routes.append(fallback.ApiFallback(API_PREFIX, app.router.routes))

    return app
