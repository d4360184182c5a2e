"""The error answers in the OpenAPI document: every 4xx/5xx an operation can give, with Crater's envelope.

FastAPI documents a ``422`` with its own ``HTTPValidationError`` (``{"detail": [...]}``), a body Crater never sends
(``api/errors.py`` answers every error as ``{"error": {...}}``), and nothing else. Here each operation gets the
statuses it can answer, each with the :class:`ErrorBody` schema:

- every operation: ``500`` (``http.internal``: the request id in ``args``);
- an operation that needs a caller (the ``current_actor`` dependency): ``401``; a write among them also ``403``
  (a cookie-authenticated write from another origin, and the policy checks of the services);
- an operation with a path parameter: ``404``; with a request body: ``413`` and ``415``; with any parameter or
  body: ``422``; an idempotent ``POST`` (``Idempotency-Key``): ``409`` and ``422``;
- what the route declares besides (``responses=raises(402, 409)``): the errors its service raises.
"""

from __future__ import annotations

from typing import Any, Iterable

from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field

from crater_app.api.deps import current_actor

SCHEMA_REF = "#/components/schemas/ErrorBody"
#: what each status means in Crater (the descriptions of the documented answers)
MEANINGS: dict[int, str] = {
    400: "the request is malformed",
    401: "no valid credentials (header `WWW-Authenticate: Bearer`): a missing, unknown, expired or revoked token or "
         "session, or a disabled account",
    402: "billing is on and the caller's points are used up",
    403: "the caller may not do this (a role or project rule), or a cookie-authenticated write from another origin",
    404: "the object does not exist or the caller may not see it (`field` names the parameter)",
    405: "the path does not have this method (header `Allow`)",
    409: "the object's state forbids it, it exists already, or a request with this Idempotency-Key is still running "
         "(header `Retry-After`)",
    413: "the body is over 2 MiB",
    415: "the body's Content-Type (or charset) is not one Crater reads (header `Accept`)",
    422: "invalid input: `field` names it by its full path, `args` holds the limit",
    429: "too many costly requests at once (header `Retry-After`)",
    500: "the server failed; `args.request_id` names the log line",
}


class ErrorDetail(BaseModel):
    """One error: a stable ``code``, its ``kind``, the ``message`` in the request's language, the ``field`` at fault
    (full path, or ``null``) and the ``args`` the message names (numbers in Crater's units)."""

    code: str = Field(description="stable code, e.g. job.name_format")
    kind: str = Field(description="category: invalid, unauthenticated, forbidden, not_found, conflict, "
                                  "unschedulable, busy, payment_required, unsupported_media_type, too_large, "
                                  "method_not_allowed, internal, ...")
    message: str = Field(description="the sentence, in the language of Accept-Language (en or zh-CN)")
    field: str | None = Field(description="full path of the input at fault, e.g. tasks[1].resources.nvidia.com/gpu")
    args: dict[str, Any] = Field(description="the values the message names (seconds, bytes, millicores, devices)")


class ErrorBody(BaseModel):
    """Every error answer of the API: ``{"error": {"code", "kind", "message", "field", "args"}}``."""

    error: ErrorDetail


def raises(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses`` for a route decorator: the error statuses its service raises beyond those
    :func:`document_errors` infers (e.g. ``raises(402, 409)``)."""
    return {status: response(status) for status in statuses}


def response(status: int) -> dict[str, Any]:
    """One documented error answer: its meaning and the :class:`ErrorBody` schema as JSON."""
    return {"description": MEANINGS.get(status, "error"),
            "content": {"application/json": {"schema": {"$ref": SCHEMA_REF}}}}


def _calls(dependant) -> Iterable[Any]:
    stack = [dependant]
    while stack:
        node = stack.pop()
        yield node.call
        stack.extend(node.dependencies)


def inferred_statuses(route: APIRoute, idempotent: bool) -> set[int]:
    """The error statuses of ``route`` that follow from its shape (see the module)."""
    statuses = {500}
    dependant = route.dependant
    if current_actor in set(_calls(dependant)):
        statuses.add(401)
        if route.methods - {"GET", "HEAD"}:
            statuses.add(403)
    if dependant.path_params:
        statuses.add(404)
    has_body = bool(route.body_field) or "requestBody" in (route.openapi_extra or {})
    if has_body:
        statuses |= {413, 415}
    if has_body or dependant.path_params or dependant.query_params or dependant.header_params:
        statuses.add(422)
    if idempotent and "POST" in route.methods:
        statuses |= {409, 422}
    return statuses


def document_errors(app: FastAPI, idempotent_routes: type) -> None:
    """Give every API route of ``app`` its error answers (inferred and declared, each with :class:`ErrorBody`);
    call once the routes are added. ``idempotent_routes``: the route class whose ``POST`` takes ``Idempotency-Key``.
    """
    for route in app.router.routes:
        if not isinstance(route, APIRoute):
            continue
        declared = {int(s) for s in route.responses if str(s).isdigit() and int(s) >= 400}
        statuses = inferred_statuses(route, isinstance(route, idempotent_routes)) | declared
        route.responses = {**{k: v for k, v in route.responses.items() if not (str(k).isdigit() and int(k) >= 400)},
                           **{status: {**response(status), **_described(route.responses.get(status))}
                              for status in sorted(statuses)}}


def _described(declared: dict | None) -> dict:
    """A route's own description of an error status (kept over :data:`MEANINGS`)."""
    return {"description": declared["description"]} if declared and declared.get("description") else {}


def with_error_schemas(schema: dict) -> dict:
    """``schema`` (the generated document) with :class:`ErrorBody` and :class:`ErrorDetail` in its components and
    without FastAPI's ``HTTPValidationError``/``ValidationError`` (no operation refers to them)."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    body = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, definition in body.pop("$defs", {}).items():
        components[name] = definition
    components["ErrorBody"] = body
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    return schema
