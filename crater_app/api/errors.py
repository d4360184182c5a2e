"""HTTP error mapping: every error body is ``{"error": {"code", "kind", "message", "field", "args"}}``.

``code`` is the message's stable code (``job.name_format``), ``kind`` its category (``invalid``, ``not_found``,
...), ``message`` the sentence in the request's language (``Accept-Language``, default English), ``field`` the
full path of the offending input (:mod:`crater_app.domain.field_paths`; a path or query parameter by its name) and
``args`` the values the sentence names (see :mod:`crater_app.domain.errors`). An exception that no handler maps
(a bug, a database gone away) is answered the same way - 500, kind ``internal``, code ``http.internal`` - and
logged with a request id that the message names (:func:`internal_error_response`), never as a bare text
"Internal Server Error".
"""

from __future__ import annotations

import logging
import uuid

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from crater_app.api.language import preferred_language
from crater_app.domain import field_paths
from crater_app.domain.errors import CraterError, InvalidInput, NotFound, TooLarge, UnsupportedMediaType, echo

log = logging.getLogger("crater_app.api")
#: the response header that carries the request id of a 500 (the id the log line and the message name)
REQUEST_ID_HEADER = "X-Request-ID"
#: where FastAPI's validation locations start (the request part, not a field)
_LOCATIONS = ("body", "query", "path", "header", "cookie")


class MethodNotAllowed(CraterError):
    """The path exists but not with this method (the path's methods in ``allowed``, also the ``Allow`` header,
    RFC 9110 §15.5.6). HTTP 405."""

    kind = "method_not_allowed"
    http_status = 405


class InternalError(CraterError):
    """An exception no handler maps: the server failed, the request's outcome is unknown. HTTP 500; ``request_id``
    names the log line that holds the exception."""

    kind = "internal"
    http_status = 500


class _HttpError(CraterError):
    """Another HTTP-level refusal that no service raised (its status in the ``status`` argument)."""


def request_language(request: Request) -> str:
    """The language of the answer to ``request``: its ``Accept-Language`` (``en`` when absent)."""
    return preferred_language(request.headers.get("accept-language"))


def error_body(exc: CraterError, lang: str) -> dict:
    """The JSON error envelope of ``exc`` with its message in ``lang``."""
    return {"error": exc.to_dict(lang)}


def error_headers(exc: CraterError) -> dict[str, str] | None:
    """Headers that go with ``exc``'s status: ``WWW-Authenticate`` on 401 (RFC 9110 §11.6.1), ``Accept`` listing the
    media types a body may have on 415 (RFC 9110 §15.5.16), ``Retry-After`` (seconds) where the error names one
    (argument ``retry_after`` or ``retry_after_s``)."""
    if exc.http_status == 401:
        return {"WWW-Authenticate": "Bearer"}
    if isinstance(exc, MethodNotAllowed) and isinstance(exc.params.get("allowed"), list):
        return {"Allow": ", ".join(str(m) for m in exc.params["allowed"])}
    if isinstance(exc, UnsupportedMediaType) and isinstance(exc.params.get("accepted"), list):
        return {"Accept": ", ".join(str(t) for t in exc.params["accepted"])}
    retry_after = exc.params.get("retry_after", exc.params.get("retry_after_s"))
    if isinstance(retry_after, int) and not isinstance(retry_after, bool) and retry_after >= 0:
        return {"Retry-After": str(retry_after)}
    return None


def error_response(exc: CraterError, request: Request) -> JSONResponse:
    """``exc`` as its JSON response (status from the error's class, message in the request's language, headers
    from :func:`error_headers`; a 415 to a ``PATCH`` also has ``Accept-Patch``, RFC 5789 §2.2)."""
    headers = error_headers(exc)
    if headers and "Accept" in headers and request.method == "PATCH":
        headers["Accept-Patch"] = headers["Accept"]
    return JSONResponse(error_body(exc, request_language(request)), status_code=exc.http_status, headers=headers)


def new_request_id() -> str:
    """A fresh request id: 32 hexadecimal digits (a random UUID), for the log and the answer."""
    return uuid.uuid4().hex


def internal_error(exc: BaseException, method: str, path: str) -> InternalError:
    """Log ``exc`` (with its traceback) under a fresh request id and return the error that answers it."""
    request_id = new_request_id()
    log.error("request %s: %s %s failed", request_id, method[:16], path[:200], exc_info=exc)
    return InternalError("http.internal", None, request_id=request_id)


def internal_error_response(exc: BaseException, request: Request) -> JSONResponse:
    """The 500 answer to ``request`` that raised ``exc`` (logged, see :func:`internal_error`), in the request's
    language, with the request id in ``args`` and in the ``X-Request-ID`` header."""
    error = internal_error(exc, request.method, request.url.path)
    return JSONResponse(error_body(error, request_language(request)), status_code=500,
                        headers={REQUEST_ID_HEADER: str(error.params["request_id"])})


def _validation_error(exc: RequestValidationError) -> CraterError:
    """FastAPI's first validation problem as Crater's error (query and path parameters by their names; bodies are
    decoded by :mod:`crater_app.api.body`)."""
    err = exc.errors()[0]
    loc = list(err.get("loc", ()))
    if loc and loc[0] in _LOCATIONS:
        loc = loc[1:]
    field = field_paths.join(loc)
    ctx = err.get("ctx") or {}
    kind = str(err.get("type", ""))
    name = field or "request"
    bound = next(iter(ctx.values()), None)
    if kind == "greater_than_equal" and bound is not None:
        return InvalidInput("request.number_min", field, field_name=name, limit=bound)
    if kind == "greater_than" and bound is not None:
        return InvalidInput("request.number_above", field, field_name=name, limit=bound)
    if kind == "less_than_equal" and bound is not None:
        return InvalidInput("request.number_max", field, field_name=name, limit=bound)
    if kind == "less_than" and bound is not None:
        return InvalidInput("request.number_below", field, field_name=name, limit=bound)
    if kind == "integer_digits":
        return InvalidInput("request.integer_digits", field, field_name=name, max=ctx.get("max"))
    if kind.startswith("int") or kind.startswith("float"):
        return InvalidInput("request.number", field, field_name=name)
    if kind == "missing":
        return InvalidInput("request.missing", field, field_name=name)
    if kind == "string_too_long" and isinstance(ctx.get("max_length"), int):
        return InvalidInput("request.text_max", field, field_name=name, limit=ctx["max_length"])
    if kind == "bool_parsing":
        return InvalidInput("request.boolean", field, field_name=name)
    if kind == "literal_error" and ctx.get("expected"):
        return InvalidInput("request.choice", field, field_name=name, expected=str(ctx["expected"]))
    return InvalidInput("request.invalid", field, field_name=name, detail=str(err.get("msg", "")))


def install(app: FastAPI) -> None:
    """Register handlers mapping domain errors, request validation and HTTP errors to the envelope."""

    @app.exception_handler(CraterError)
    async def _crater(request: Request, exc: CraterError) -> JSONResponse:
        return error_response(exc, request)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(_validation_error(exc), request)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        error: CraterError
        if exc.status_code == 404:
            error = NotFound("http.not_found", "path", path=echo(request.url.path))
        elif exc.status_code == 405:
            allowed = sorted(m.strip() for m in (exc.headers or {}).get("Allow", "").split(",") if m.strip())
            error = MethodNotAllowed("http.method_not_allowed", None, method=request.method[:16], allowed=allowed)
        elif exc.status_code == 413:
            error = TooLarge("http.too_large")
        else:
            error = _HttpError("http.error", None, status=exc.status_code, method=request.method[:16])
        headers = {**(exc.headers or {}), **(error_headers(error) or {})}
        return JSONResponse(error_body(error, request_language(request)), status_code=exc.status_code,
                            headers=headers or None)
