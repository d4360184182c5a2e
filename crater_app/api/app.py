"""The HTTP API (``/api/v1``), ``/healthz`` and ``/metrics``: a FastAPI app that Reflex mounts with
``api_transformer`` so that console and API share one port (DESIGN.md §6).

The routes live in ``api/routes/<resource>.py`` (one :class:`~fastapi.APIRouter` each) and take their
dependencies from ``api/deps.py``; :func:`build_api` assembles them, with the JSON fallback route last, the API's
middleware (:mod:`crater_app.api.middleware`) and the error answers of every operation in the OpenAPI document
(:mod:`crater_app.api.error_docs`). :func:`console_mount` hands the app to Reflex.
"""

from __future__ import annotations

from typing import Callable

from fastapi import APIRouter, FastAPI
from starlette.types import ASGIApp

from crater_app.api import docs, error_docs, errors, fallback
from crater_app.api.deps import provide_context
from crater_app.api.idempotency import IdempotentRoute
from crater_app.api.middleware import ApiAnswers
from crater_app.api.routes import (
    API_PREFIX, approvals, auth, billing, health, jobs, nodes, notifications, oplog, projects, replicas, sessions,
    tokens, usage, users,
)
from crater_app.domain.job_defaults import default_resources
from crater_app.services.context import ServiceContext
from crater_app.settings import get_settings

__all__ = ["API_PREFIX", "ROUTERS", "build_api", "console_mount"]

#: the routers in the order their paths are matched: the hot paths (jobs) first
ROUTERS: tuple[APIRouter, ...] = (
    jobs.router, replicas.router, auth.router, nodes.router, users.router, projects.router, tokens.router, oplog.router,
    approvals.router, notifications.router, usage.router, billing.router, sessions.router, health.router,
)


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
    app.add_middleware(ApiAnswers, prefix=API_PREFIX)
    provide_context(app, ctx_provider)
    for router in ROUTERS:
        add_routes(app, router)
    error_docs.document_errors(app, IdempotentRoute)
    _show_job_defaults(app, ctx_provider)
    # Last: JSON 404/405 for every other path and method under /api/v1 (and HEAD as GET without a body); the
    # console that Reflex mounts after these routes never answers an API path.
    app.router.routes.append(fallback.ApiFallback(API_PREFIX, app.router.routes))
    return app


def console_mount(api: FastAPI) -> Callable[[ASGIApp], ASGIApp]:
    """The ``api_transformer`` that serves ``api`` with Reflex's console mounted below its routes (at ``""``).

    A function, not the FastAPI app itself: given a Starlette app, Reflex adds its CORS middleware to it *and* to
    its own top-level app, so every answer to a request with an ``Origin`` got ``Vary: Origin, Origin`` (two CORS
    layers, each adding the field). Given a function, Reflex calls it with the console and wraps the result in its
    one top-level CORS middleware (reflex/app.py, ``App.__call__``).
    """

    def mount(console: ASGIApp) -> ASGIApp:
        api.mount("", console)
        return api

    return mount


def add_routes(app: FastAPI, router: APIRouter) -> None:
    """Add ``router``'s routes to ``app`` as they are (each already has its full path, tags and dependencies).

    Not ``app.include_router``: in the FastAPI in use (0.165) an included router stays one lazy route that resolves
    each request's route through a per-inclusion context (measured here: +15-30 µs per request, about a fifth of a
    small request's framework time), and its routes are hidden from ``app.routes``, which the fallback route
    (``Allow``, ``HEAD``) and the authorization matrix test read.
    """
    app.router.routes.extend(router.routes)


def _show_job_defaults(app: FastAPI, ctx_provider: Callable[[], ServiceContext]) -> None:
    """Make the OpenAPI document show the deployment's job defaults on ``POST /jobs`` (read when the document is
    first asked for, from the context's settings)."""
    generate = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            ctx = ctx_provider()
            settings = ctx.settings if ctx is not None else get_settings()
            defaults = default_resources(settings.default_job_cpu, settings.default_job_memory)
            schema = error_docs.with_error_schemas(generate())
            app.openapi_schema = docs.with_job_defaults(schema, f"{API_PREFIX}/jobs", defaults)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
