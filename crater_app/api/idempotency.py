"""``Idempotency-Key`` on the API's ``POST`` routes (the rules are in :mod:`crater_app.services.idempotency`).

A router whose ``POST`` routes create something (jobs, projects, approvals, tokens, users, grants) is built with
``APIRouter(route_class=IdempotentRoute)``. A ``POST`` without the header runs as it always did (one header
lookup); with it, the route's handler is wrapped:

1. the key is checked, the caller resolved (:func:`crater_app.api.deps.resolve_caller`, as the route's own
   dependency does) and the body read (at most 2 MiB);
2. the key is claimed, or its stored answer is given again with ``Idempotent-Replayed: true``;
3. the handler runs, shielded from cancellation so that its answer is always recorded; its answer is stored, or
   the key released when the handler refused the request (a Crater error, a bad path or query parameter).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Coroutine

import anyio
from fastapi import Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from crater_app.api import deps
from crater_app.api.body import read_body
from crater_app.domain.errors import CraterError
from crater_app.services import idempotency

Handler = Callable[[Request], Coroutine[Any, Any, Response]]
log = logging.getLogger(__name__)

#: the header's OpenAPI description, added to every idempotent operation
HEADER_PARAMETER = {
    "name": idempotency.HEADER, "in": "header", "required": False,
    "description": (
        "Makes a retry safe: the same key with the same request within 24 hours answers as the first request did "
        f"(header `{idempotency.REPLAYED_HEADER}: true`) and creates nothing more; with another body it is a 422, "
        "while the first is still running a 409 (retry). 1 to 255 printable ASCII characters, e.g. a UUID."
    ),
    "schema": {"type": "string", "minLength": 1, "maxLength": idempotency.MAX_KEY_CHARS},
}
_RESPONSES = {
    "409": {"description": "a request with this Idempotency-Key is still running; retry after `Retry-After` s"},
    "422": {"description": "invalid input, or an Idempotency-Key used before for another request"},
}


class IdempotentRoute(APIRoute):
    """An :class:`~fastapi.routing.APIRoute` whose ``POST`` honours ``Idempotency-Key`` (see the module)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if "POST" in self.methods:
            extra = dict(self.openapi_extra or {})
            extra["parameters"] = [*extra.get("parameters", []), HEADER_PARAMETER]
            self.openapi_extra = extra
            self.responses = {**_RESPONSES, **self.responses}

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()
        if "POST" not in self.methods:
            return handler

        async def idempotent_handler(request: Request) -> Response:
            raw = request.headers.get(idempotency.HEADER)
            if raw is None:
                return await handler(request)
            return await run_once(request, raw, handler)

        return idempotent_handler


async def run_once(request: Request, raw_key: str, handler: Handler) -> Response:
    """Answer ``request`` (sent with ``Idempotency-Key: raw_key``) through ``handler`` at most once per key.

    Raises:
        InvalidInput: a malformed key, or one used for another request; Conflict: the key's first request is
            still running; Unauthenticated: no valid caller; and what ``handler`` raises (after releasing the key
            or recording its 500).
    """
    key = idempotency.parse_key(raw_key)
    ctx = deps.context_of(request)
    caller = await deps.resolve_caller(request, ctx)
    body = await read_body(request)
    path = request.url.path
    request_hash = idempotency.fingerprint(request.method, path, body)
    outcome = await run_in_threadpool(idempotency.begin, ctx, caller.user_id, key, request.method, path,
                                      request_hash)
    if isinstance(outcome, idempotency.StoredAnswer):
        return Response(outcome.body, status_code=outcome.status_code, media_type=outcome.content_type or None,
                        headers={idempotency.REPLAYED_HEADER: "true"})
    with anyio.CancelScope(shield=True):
        try:
            response = await handler(request)
        except (CraterError, RequestValidationError, HTTPException):  # refused: nothing changed
            await _quietly(idempotency.release, ctx, outcome)
            raise
        except Exception:  # the outcome is unknown: the object may exist, so a retry must not make another
            await _quietly(idempotency.finish, ctx, outcome, 500, "text/plain; charset=utf-8",
                           b"Internal Server Error")
            raise
        stored_body = getattr(response, "body", None)
        if isinstance(stored_body, bytes):
            content_type = response.headers.get("content-type", "")
            await run_in_threadpool(idempotency.finish, ctx, outcome, response.status_code, content_type,
                                    stored_body)
        else:  # a streamed answer cannot be given twice
            await run_in_threadpool(idempotency.release, ctx, outcome)
    return response


async def _quietly(fn, *args) -> None:
    """Run ``fn(*args)`` in a worker thread while an error is on its way to the client: a failure here (the
    database is gone) is logged and must not replace that error; the claim is then taken over once abandoned."""
    try:
        await run_in_threadpool(fn, *args)
    except Exception:  # noqa: BLE001 - logged; the request's own error goes on
        log.exception("could not record the outcome of an idempotent request")
