"""``/api/v1/auth/session(s)``, ``/api/v1/me/password`` and ``/api/v1/users/{name}/password``: console sessions and
passwords: the HTTP round trips that set and clear
the ``HttpOnly`` session cookie (a websocket cannot), the caller's signed-in browsers, "sign out everywhere",
changing one's password and an admin's password reset. The services decide; these routes translate HTTP only.

The cookie (``CRATER_SESSION_COOKIE_NAME``) is ``HttpOnly``, ``SameSite=Lax``, ``Path=/`` (the console's websocket
and, later, the session proxy share it), ``Secure`` when the first public URL is ``https`` (or, without public
URLs, when the request came over https), and lives ``CRATER_SESSION_LIFETIME_S`` seconds; the server ends it
sooner when it is idle or signed out.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from crater_app.api import docs
from crater_app.api.body import decode_object
from crater_app.api.deps import CtxDep, CurrentActor, credentials_of, run_read
from crater_app.api.error_docs import raises
from crater_app.api.params import ObjectId
from crater_app.api.routes import API_PREFIX
from crater_app.auth.origins import parse_public_urls
from crater_app.auth.passwords import MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS
from crater_app.schemas import ConsoleSessionPublic, ConsoleSessionStarted, SessionsEnded
from crater_app.services import console_sessions, identity, passwords
from crater_app.settings import Settings


class SessionCreate(BaseModel):
    """``POST /api/v1/auth/session`` body: the one-time sign-in code of a sign-in the console just checked."""

    model_config = ConfigDict(extra="forbid")
    code: str = Field(max_length=128)


class PasswordChange(BaseModel):
    """``POST /api/v1/me/password`` body."""

    model_config = ConfigDict(extra="forbid")
    current_password: str = Field(max_length=MAX_PASSWORD_CHARS)
    new_password: str = Field(min_length=MIN_PASSWORD_CHARS, max_length=MAX_PASSWORD_CHARS)


class PasswordReset(BaseModel):
    """``PUT /api/v1/users/{username}/password`` body (platform admins)."""

    model_config = ConfigDict(extra="forbid")
    new_password: str = Field(min_length=MIN_PASSWORD_CHARS, max_length=MAX_PASSWORD_CHARS)


def client_ip(request: Request) -> str:
    """The peer's IP address as the server sees it (a proxy's, behind one)."""
    return request.client.host if request.client else ""


def _secure(request: Request, settings: Settings) -> bool:
    """Whether the cookie gets ``Secure``: the first public URL is https; without public URLs, the request came
    over https (directly, or as a proxy's ``X-Forwarded-Proto`` says: trusting it can only make the cookie
    stricter)."""
    origins = parse_public_urls(settings.public_urls)
    if origins:
        return origins[0].startswith("https://")
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return request.url.scheme == "https" or forwarded == "https"


def set_session_cookie(response: Response, request: Request, settings: Settings, secret: str) -> None:
    """Put the console session cookie carrying ``secret`` on ``response`` (attributes: see the module docstring)."""
    response.set_cookie(settings.session_cookie_name, secret, max_age=settings.session_lifetime_s, path="/",
                        httponly=True, samesite="lax", secure=_secure(request, settings))
    response.headers["Cache-Control"] = "no-store"


def clear_session_cookie(response: Response, request: Request, settings: Settings) -> None:
    """Tell the browser to drop the console session cookie."""
    response.delete_cookie(settings.session_cookie_name, path="/", httponly=True, samesite="lax",
                           secure=_secure(request, settings))
    response.headers["Cache-Control"] = "no-store"


router = APIRouter(prefix=API_PREFIX, tags=["auth"])


def _dump(model) -> dict:
    return model.model_dump(mode="json")


@router.post("/auth/session", status_code=201, response_model=ConsoleSessionStarted, responses=raises(401, 403),
          openapi_extra=docs.request_body(SessionCreate))
async def start_session(request: Request, c: CtxDep) -> JSONResponse:
    """Exchange a one-time sign-in code (60 s, single use; the console's sign-in creates it) for a console
    session: 201 with the session, and its secret in an ``HttpOnly`` cookie. Only from an allowed origin
    (``CRATER_PUBLIC_URLS`` or this host), so that no other site can sign a browser into an account."""
    credentials = credentials_of(request)
    identity.check_origin(c, credentials)
    body = await decode_object(request, ("code",))
    secret, username, session = await run_in_threadpool(
        console_sessions.start_from_code, c, body.get("code"), request.headers.get("user-agent", ""),
        client_ip(request))
    response = JSONResponse(_dump(ConsoleSessionStarted(session=session, username=username)), status_code=201)
    set_session_cookie(response, request, c.settings, secret)
    return response

@router.delete("/auth/session", status_code=204, responses=raises(403))
async def end_session(request: Request, c: CtxDep) -> Response:
    """Sign this browser out: end the session of its cookie (if any) and clear the cookie; 204 either way.
    Only from an allowed origin."""
    credentials = credentials_of(request)
    identity.check_origin(c, credentials)
    secret = credentials.session_secret(c.settings.session_cookie_name)
    await run_in_threadpool(console_sessions.end, c, secret)
    response = Response(status_code=204)
    clear_session_cookie(response, request, c.settings)
    return response

@router.get("/auth/sessions", response_model=list[ConsoleSessionPublic])
async def list_sessions(request: Request, c: CtxDep, a: CurrentActor) -> JSONResponse:
    """The caller's signed-in browsers (console sessions), most recently seen first; ``current`` marks the
    one of this request's cookie."""
    secret = credentials_of(request).session_secret(c.settings.session_cookie_name)
    return JSONResponse([_dump(x) for x in await run_read(console_sessions.list_sessions, c, a, secret)])

@router.delete("/auth/sessions", response_model=SessionsEnded)
async def end_everywhere(request: Request, c: CtxDep, a: CurrentActor) -> JSONResponse:
    """Sign out everywhere: end every console session of the caller and revoke their ``/auth/token`` login
    tokens (personal API tokens stay); clears this browser's cookie. Answers how many ended."""
    ended = await run_in_threadpool(console_sessions.end_everywhere, c, a)
    response = JSONResponse(_dump(SessionsEnded(ended=ended)))
    clear_session_cookie(response, request, c.settings)
    return response

@router.delete("/auth/sessions/{id}", response_model=ConsoleSessionPublic)
async def end_one(id: ObjectId, c: CtxDep, a: CurrentActor) -> JSONResponse:
    """End one of the caller's console sessions (another browser) by its id."""
    return JSONResponse(_dump(await run_in_threadpool(console_sessions.end_one, c, a, id)))

@router.post("/me/password", response_model=SessionsEnded, responses=raises(409),
          openapi_extra=docs.request_body(PasswordChange))
async def change_password(request: Request, c: CtxDep, a: CurrentActor) -> JSONResponse:
    """Change one's own password: ``{"current_password", "new_password"}`` (8..1,024 characters). Every other
    console session and login token of the caller ends; this browser's session stays."""
    body = await decode_object(request, ("current_password", "new_password"))
    secret = credentials_of(request).session_secret(c.settings.session_cookie_name)
    ended = await run_in_threadpool(passwords.change_password, c, a, body.get("current_password"),
                                    body.get("new_password"), secret)
    return JSONResponse(_dump(SessionsEnded(ended=ended)))

@router.put("/users/{username}/password", tags=["users"], response_model=SessionsEnded, responses=raises(409),
         openapi_extra=docs.request_body(PasswordReset))
async def reset_password(username: str, request: Request, c: CtxDep, a: CurrentActor) -> JSONResponse:
    """Set another account's password (platform admins; not one's own, not a single sign-on account):
    ``{"new_password"}``. Every console session and login token of the account ends."""
    body = await decode_object(request, ("new_password",))
    ended = await run_in_threadpool(passwords.reset_password, c, a, username, body.get("new_password"))
    return JSONResponse(_dump(SessionsEnded(ended=ended)))
