"""The API's dependencies (the full-stack FastAPI template's ``api/deps.py``): the service context, the caller and
the read thread pool, as ``Annotated`` types that routes name in their signatures::

    @router.get("/jobs/{job_id}")
    async def get_job(job_id: int, c: CtxDep, a: CurrentActor) -> Response:
        return json_response(await run_read(jobs.get_job, c, a, job_id))

The dependencies are ``async`` so that FastAPI does not hand each of them to a worker thread (a thread hop per
dependency per request); only work that may touch the database goes to a thread (bench/README.md).
"""

from __future__ import annotations

import os
from functools import partial
from typing import Annotated, Callable, TypeVar

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar
from fastapi import Depends, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import APIKeyCookie, HTTPBearer

from crater_app.domain.policy import Actor
from crater_app.services import identity
from crater_app.services.context import ServiceContext
from crater_app.settings import get_settings

T = TypeVar("T")

# Reads (job pages, single jobs, events, nodes, the signed-in user) run in a small thread pool of their own
# instead of FastAPI's default of 40 threads: the process is bound by the interpreter lock, so more threads
# only add hand-overs between them (measured: 400 -> 560 first pages/s with 8 clients on 2 cores). One per core
# (at least 2, so that a query in SQLite, which releases the lock, overlaps with Python work), at most 8.
# Writes keep the default pool: concurrent submissions are written together (services.jobs), so they gain
# from many threads waiting at once.
READ_THREADS = max(2, min(8, os.cpu_count() or 2))
_read_limiter: RunVar[anyio.CapacityLimiter] = RunVar("crater_read_limiter")


async def run_read(fn: Callable[..., T], *args, **kwargs) -> T:
    """Run the blocking read ``fn(*args, **kwargs)`` in the read pool (one pool of :data:`READ_THREADS` per event
    loop) and return its result."""
    try:
        limiter = _read_limiter.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(READ_THREADS)
        _read_limiter.set(limiter)
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs), limiter=limiter)


# ---- the service context ---------------------------------------------------------------------------------------
def provide_context(app: FastAPI, provider: Callable[[], ServiceContext]) -> None:
    """Make ``provider`` the source of the :class:`ServiceContext` of ``app``'s requests (``build_api`` does)."""
    app.state.crater_context = provider


def context_of(request: Request) -> ServiceContext:
    """The service context of the app that answers ``request`` (see :func:`provide_context`)."""
    return request.app.state.crater_context()


async def get_context(request: Request) -> ServiceContext:
    """Dependency: the service context."""
    return context_of(request)


CtxDep = Annotated[ServiceContext, Depends(get_context)]


# ---- the caller ---------------------------------------------------------------------------------------------------
bearer = HTTPBearer(auto_error=False, description="a token from POST /api/v1/auth/token or a personal token")
session_cookie = APIKeyCookie(name=get_settings().session_cookie_name, auto_error=False,
                              description="the console's session cookie (writes only from the console's origin)")


def credentials_of(request: Request) -> identity.Credentials:
    """The plain request data :func:`crater_app.services.identity.resolve` reads, from a Starlette request."""
    h = request.headers
    return identity.Credentials(
        authorization=h.get("authorization", ""), cookie=h.get("cookie", ""), origin=h.get("origin", ""),
        referer=h.get("referer", ""), host=h.get("host", ""), method=request.method,
    )


async def resolve_caller(request: Request, ctx: ServiceContext) -> Actor:
    """The one place where the caller of a request is resolved: ``Authorization: Bearer`` (a login token or a
    personal API token) or the console's session cookie (cookie-authenticated writes only from an allowed
    ``Origin``), by :func:`crater_app.services.identity.resolve`.

    A bearer token seen in the last 5 s resolves from memory (no I/O); otherwise the lookup runs in a worker thread.

    Raises:
        Unauthenticated: no credentials, an unknown, expired or revoked token or session, or a disabled account
            (HTTP 401). Forbidden: a cookie-authenticated write from another origin (HTTP 403).
    """
    credentials = credentials_of(request)
    cached = identity.cached_actor(ctx, credentials.bearer())
    return cached or await run_in_threadpool(identity.resolve, ctx, credentials)


async def current_actor(request: Request, ctx: CtxDep, _: Annotated[object, Depends(bearer)] = None,
                        __: Annotated[object, Depends(session_cookie)] = None) -> Actor:
    """Dependency: the caller (:func:`resolve_caller`; the ``bearer``/``session_cookie`` dependencies only declare
    the schemes in OpenAPI)."""
    return await resolve_caller(request, ctx)


CurrentActor = Annotated[Actor, Depends(current_actor)]
