"""The API's one middleware: what every answer under ``/api/v1`` (and ``/healthz``, ``/metrics``) has in common.

- A localised answer (JSON, CSV: errors, job reasons and events, notifications, operation-log details) says which
  language it is in and that it depends on ``Accept-Language``: ``Content-Language: en`` or ``zh-CN`` (RFC 9110
  §8.5) and ``Vary: Accept-Language`` (§12.5.5), so that a shared cache keeps one copy per language.
- ``Vary`` is one header that lists each field once (merged with what the route set; the CORS middleware that Reflex
  puts around the whole app adds ``Origin`` to it).
- An exception that nothing handled (a bug, a database gone away) is answered with the error envelope - 500, code
  ``http.internal`` (kind ``internal``), in the request's language - and logged once with a request id that the message and the
  ``X-Request-ID`` header name (:func:`crater_app.api.errors.internal_error`), instead of Starlette's text/plain
  "Internal Server Error". Once an answer has started (a streamed body) nothing can replace it: the exception goes
  on to the server, which closes the connection.

Plain ASGI (no ``BaseHTTPMiddleware``): one wrapped ``send`` per request, no task or stream in between. Paths
outside the API (the console that Reflex mounts below the API's routes) pass untouched.
"""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from crater_app.api.errors import REQUEST_ID_HEADER, error_body, internal_error
from crater_app.api.language import preferred_language

#: content types whose answers are localised (their text is in the request's language)
LOCALISED_TYPES = (b"application/json", b"text/csv")


def merged_vary(values: list[bytes], extra: bytes | None = None) -> bytes:
    """One ``Vary`` value from several (each a comma-separated list), every field once in the order first seen,
    compared without case (RFC 9110 §12.5.5); ``extra`` appended when missing; ``*`` alone when any value is ``*``."""
    fields: list[bytes] = []
    seen: set[bytes] = set()
    for value in [*values, *([extra] if extra else [])]:
        for field in value.split(b","):
            field = field.strip()
            if field and field.lower() not in seen:
                seen.add(field.lower())
                fields.append(field)
    return b"*" if b"*" in seen else b", ".join(fields)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


class ApiAnswers:
    """ASGI middleware for the paths below ``prefix`` and the ``exact`` paths (see the module)."""

    def __init__(self, app: ASGIApp, prefix: str = "/api/v1", exact: tuple[str, ...] = ("/healthz", "/metrics")):
        self.app = app
        self.prefix = prefix.rstrip("/") + "/"
        self.exact = frozenset((prefix.rstrip("/"), *exact))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not (scope["path"].startswith(self.prefix) or scope["path"] in self.exact):
            await self.app(scope, receive, send)
            return
        started = False

        async def answer(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": self._headers(scope, message.get("headers") or [])}
            await send(message)

        try:
            await self.app(scope, receive, answer)
        except Exception as exc:  # noqa: BLE001 - every unhandled error gets the envelope (and is logged)
            if started:
                raise
            error = internal_error(exc, scope["method"], scope["path"])
            lang = preferred_language(_header(scope, b"accept-language"))
            response = JSONResponse(error_body(error, lang), status_code=500,
                                    headers={REQUEST_ID_HEADER: str(error.params["request_id"])})
            await response(scope, receive, answer)

    @staticmethod
    def _headers(scope: Scope, headers: list) -> list:
        """``headers`` with one merged ``Vary`` and, on a localised answer, ``Content-Language``."""
        localised = False
        vary: list[bytes] = []
        out = []
        for key, value in headers:
            name = key.lower()
            if name == b"vary":
                vary.append(value)
                continue
            if name == b"content-type" and value.startswith(LOCALISED_TYPES):
                localised = True
            if name != b"content-language":
                out.append((key, value))
        if localised:
            lang = preferred_language(_header(scope, b"accept-language"))
            out.append((b"content-language", lang.encode("ascii")))
        if vary or localised:
            out.append((b"vary", merged_vary(vary, b"Accept-Language" if localised else None)))
        return out
