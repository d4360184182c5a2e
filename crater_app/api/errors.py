"""HTTP error mapping: every error body is ``{"error": {"code", "kind", "message", "field", "args"}}``.

``code`` is the message's stable code (``job.name_format``), ``kind`` its category (``invalid``, ``not_found``,
...), ``message`` the sentence in the request's language (``Accept-Language``, default English), ``field`` the
full path of the offending input and ``args`` the values the sentence names (see :mod:`crater_app.domain.errors`).
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from crater_app.api.language import preferred_language
from crater_app.domain.errors import CraterError, InvalidInput, NotFound, TooLarge


class _HttpError(CraterError):
    """An HTTP-level refusal that no service raised (a wrong method, Starlette's own 404)."""


#: HTTP status of a Starlette refusal -> (kind, code)
_HTTP_CODES = {
    404: ("not_found", "http.not_found"), 405: ("method_not_allowed", "http.method_not_allowed"),
    413: ("too_large", "http.too_large"),
}


def request_language(request: Request) -> str:
    """The language of the answer to ``request``: its ``Accept-Language`` (``en`` when absent)."""
    return preferred_language(request.headers.get("accept-language"))


def error_body(exc: CraterError, lang: str) -> dict:
    """The JSON error envelope of ``exc`` with its message in ``lang``."""
    return {"error": exc.to_dict(lang)}


def error_response(exc: CraterError, request: Request) -> JSONResponse:
    """``exc`` as its JSON response (status from the error's class, message in the request's language)."""
    headers = {"WWW-Authenticate": "Bearer"} if exc.http_status == 401 else None
    return JSONResponse(error_body(exc, request_language(request)), status_code=exc.http_status, headers=headers)


def _validation_error(exc: RequestValidationError) -> CraterError:
    """FastAPI's first validation problem as Crater's error (query and path parameters; bodies are decoded by
    :mod:`crater_app.api.body`)."""
    err = exc.errors()[0]
    loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path")]
    field = ".".join(loc) or None
    ctx = err.get("ctx") or {}
    kind = str(err.get("type", ""))
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than") and ctx:
        bound = next(iter(ctx.values()))
        limit = {"greater_than_equal": "min", "greater_than": "above", "less_than_equal": "max",
                 "less_than": "below"}[kind]
        return InvalidInput(f"request.number_{limit}", field, field_name=field or "request", limit=bound)
    if kind.startswith("int") or kind.startswith("float"):
        return InvalidInput("request.number", field, field_name=field or "request")
    if kind == "missing":
        return InvalidInput("request.missing", field, field_name=field or "request")
    return InvalidInput("request.invalid", field, field_name=field or "request", detail=str(err.get("msg", "")))


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
        kind, code = _HTTP_CODES.get(exc.status_code, ("error", "http.error"))
        error: CraterError
        if exc.status_code == 404:
            error = NotFound(code, "path", path=request.url.path[:200])
        elif exc.status_code == 413:
            error = TooLarge(code)
        else:
            error = _HttpError(code, None, status=exc.status_code, method=request.method)
            error.kind = kind  # type: ignore[misc]
        response = JSONResponse(error_body(error, request_language(request)), status_code=exc.status_code,
                                headers=exc.headers)  # headers the exception carries stay (the Allow of a 405)
        return response
