"""The last API route: JSON errors for every path and method under ``/api/v1`` that no route answers, and HEAD.

Reflex mounts its console app at ``""`` *after* the API's routes (``api_transformer``), so a request that no API
route matches fully - an unknown path, ``/api/v1`` itself, or a method such as OPTIONS, TRACE or DELETE that the
path does not have - would otherwise reach the console and get its HTML 404 or a plain-text 405. This route
matches every request whose path is ``/api/v1`` or under ``/api/v1/``, whatever the method, and answers:

- ``HEAD`` on a path that has ``GET``: the ``GET`` answer without its body (status and headers, including
  ``content-length``, as ``GET``) - RFC 9110 §9.3.2, and what Starlette does for its own GET routes;
- another method on a path that exists: ``405`` ``method_not_allowed`` with an ``Allow`` header listing the
  path's methods (RFC 9110 §15.5.6);
- anything else: ``404`` ``not_found`` (field ``path``).

Errors are raised as exceptions, so the API's exception handlers write the usual ``{"error": {"code", "kind",
"message", "field", "args"}}`` body. CORS preflight requests never get here: Reflex's CORS middleware answers them.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Match, Mount, NoMatchFound
from starlette.types import Receive, Scope, Send

from crater_app.api.errors import MethodNotAllowed
from crater_app.domain.errors import NotFound, echo


class ApiFallback(BaseRoute):
    """Matches every HTTP request under ``prefix`` (``/api/v1``); add it after all API routes.

    ``routes`` is the app's live route list (``app.router.routes``), read at request time so that routes added
    later are seen; :class:`~starlette.routing.Mount` routes (the console) and this route itself are skipped.
    """

    def __init__(self, prefix: str, routes: list[BaseRoute]) -> None:
        self.prefix = prefix
        self.routes = routes

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """``FULL`` for an HTTP request whose path is the prefix or below it, else ``NONE``."""
        if scope["type"] == "http":
            path = scope["path"]
            if path == self.prefix or path.startswith(self.prefix + "/"):
                return Match.FULL, {}
        return Match.NONE, {}

    def url_path_for(self, name: str, /, **path_params: object):
        """This route has no name: always :class:`~starlette.routing.NoMatchFound`."""
        raise NoMatchFound(name, path_params)

    def _api_routes(self) -> list[BaseRoute]:
        return [r for r in self.routes if r is not self and not isinstance(r, Mount)]

    def allowed(self, scope: Scope) -> set[str]:
        """The methods the routes of ``scope``'s path answer (``HEAD`` wherever ``GET`` is)."""
        methods: set[str] = set()
        for route in self._api_routes():
            regex = getattr(route, "path_regex", None)
            if regex is not None and regex.match(scope["path"]):
                methods |= set(getattr(route, "methods", None) or ())
        if "GET" in methods:
            methods.add("HEAD")
        return methods

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer as the module docstring says."""
        if scope["method"] == "HEAD":
            as_get = {**scope, "method": "GET"}
            for route in self._api_routes():
                match, child = route.matches(as_get)
                if match == Match.FULL:
                    await route.handle({**as_get, **child}, receive, _without_body(send))
                    return
        allowed = self.allowed(scope)
        if allowed:
            raise MethodNotAllowed("http.method_not_allowed", None, method=scope["method"][:16],
                                   allowed=sorted(allowed))
        raise NotFound("http.no_route", "path", method=scope["method"][:16], path=echo(scope["path"]),
                       openapi=f"{self.prefix}/openapi.json")


def _without_body(send: Send) -> Send:
    """``send`` that passes the response start (status, headers) and drops the body bytes (a HEAD answer)."""

    async def wrapped(message: dict) -> None:
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return wrapped
