"""``Idempotency-Key`` on the API's ``POST`` routes (the rules are in :mod:`crater_app.services.idempotency`).

A router whose ``POST`` routes create something (jobs, projects, approvals, tokens, users, grants) is built with
``APIRouter(route_class=IdempotentRoute)``. A ``POST`` without the header runs as it always did (one header
lookup); with it, the route's handler is wrapped:

1. the key is checked, the caller resolved (:func:`crater_app.api.deps.resolve_caller`, as the route's own
   dependency does) and the body read (at most 2 MiB);
2. the key is claimed, or its stored answer is given again with ``Idempotent-Replayed: true``;
3. the handler runs, shielded from cancellation so that its answer is always recorded, while a task renews the
   claim's lease every 15 s (so that no other worker takes a slow request's key over); its answer is stored, or the
   key released when the handler refused the request before writing anything (a Crater error without
   :func:`crater_app.services.idempotency.mark_written`, a bad path or query parameter). An unhandled exception is
   answered - and stored - as the 500 envelope of :func:`crater_app.api.errors.internal_error_response`.

Header values the HTTP server refuses never reach the app: granian answers a request whose header holds a
control character (``Idempotency-Key: a\x7fb``) or whose ``Content-Length`` is not a number (``-1``) with its own
``400 Bad Request`` and an empty body, as the HTTP parser (RFC 9110 §5.5, §8.6) requires; such a request cannot be
answered with Crater's envelope.
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
from crater_app.api.errors import error_response, internal_error_response
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
        """The route's handler; for ``POST``, wrapped so that a request with ``Idempotency-Key`` runs once per key
        (:func:`run_once`)."""
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
            still running; Unauthenticated: no valid caller; and the refusals ``handler`` raises before writing
            anything (after releasing the key). Its other errors become answers (stored).
    """
    key = idempotency.parse_key(raw_key)
    ctx = deps.context_of(request)
    caller = await deps.resolve_caller(request, ctx)
    body = await read_body(request)
    path = request.url.path
    # The query string is part of the request: the same key with other query parameters is another request.
    target = f"{path}?{request.url.query}" if request.url.query else path
    request_hash = idempotency.fingerprint(request.method, target, body)
    outcome = await run_in_threadpool(idempotency.begin, ctx, caller.user_id, key, request.method, path,
                                      request_hash)
    if isinstance(outcome, idempotency.StoredAnswer):
        return Response(outcome.body, status_code=outcome.status_code, media_type=outcome.content_type or None,
                        headers={idempotency.REPLAYED_HEADER: "true"})
    with anyio.CancelScope(shield=True):
        writes = idempotency.watch_writes()
        refusal: Exception | None = None
        async with anyio.create_task_group() as tasks:  # raises nothing itself: errors are taken out of it first
            tasks.start_soon(_keep_claimed, ctx, outcome)
            try:
                response = await handler(request)
            except (RequestValidationError, HTTPException) as exc:  # refused before the handler ran
                refusal = exc
            except CraterError as exc:
                if writes.written:  # refused after a write: a retry gets this same answer
                    response = error_response(exc, request)
                else:  # refused before anything was written: the same request may run again
                    refusal = exc
            except Exception as exc:  # noqa: BLE001 - the outcome is unknown: a retry must not make another object
                response = internal_error_response(exc, request)
            tasks.cancel_scope.cancel()
        if refusal is not None:
            await _quietly(idempotency.release, ctx, outcome)
            raise refusal
        stored_body = getattr(response, "body", None)
        if isinstance(stored_body, bytes):
            content_type = response.headers.get("content-type", "")
            await _quietly(idempotency.finish, ctx, outcome, response.status_code, content_type, stored_body,
                           writes.written)
        else:  # a streamed answer cannot be given twice
            await _quietly(idempotency.release, ctx, outcome)
    return response


async def _keep_claimed(ctx, claim: idempotency.Claim) -> None:
    """Renew ``claim``'s lease every :data:`~crater_app.services.idempotency.RENEW_EVERY_S` seconds until cancelled
    (the request finished) or the claim is gone."""
    while True:
        await anyio.sleep(idempotency.RENEW_EVERY_S)
        try:
            if not await run_in_threadpool(idempotency.renew, ctx, claim):
                return
        except Exception:  # noqa: BLE001 - logged; the next renewal tries again
            log.exception("could not renew the claim of an idempotent request")


async def _quietly(fn, *args) -> None:
    """Run ``fn(*args)`` in a worker thread while an answer is on its way to the client: a failure here (the
    database is gone) is logged and must not replace that answer; the claim's lease then lapses (nobody renews it)
    and another request may take the key over."""
    try:
        await run_in_threadpool(fn, *args)
    except Exception:  # noqa: BLE001 - logged; the request's own error goes on
        log.exception("could not record the outcome of an idempotent request")
