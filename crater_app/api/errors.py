"""HTTP error mapping: every error body is ``{"error": {"code", "message", "field"}}``."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from crater_app.domain.errors import CraterError


def error_body(code: str, message: str, field: str | None = None) -> dict:
    """The JSON error envelope."""
    return {"error": {"code": code, "message": message, "field": field}}


def install(app: FastAPI) -> None:
    """Register handlers mapping domain errors, request validation and HTTP errors to the envelope."""

    @app.exception_handler(CraterError)
    async def _crater(_: Request, exc: CraterError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.http_status == 401 else None
        return JSONResponse(error_body(exc.code, exc.message, exc.field), status_code=exc.http_status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        err = exc.errors()[0]
        loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path")]
        field = ".".join(loc) or None
        return JSONResponse(error_body("invalid", f"{field or 'request'}: {err.get('msg')}", field), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(exc.status_code, "error")
        # Headers the exception carries stay (the ``Allow`` of a 405).
        return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code, headers=exc.headers)
