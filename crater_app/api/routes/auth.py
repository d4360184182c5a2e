"""``/api/v1/auth``: bearer tokens for a user name and password, single sign-on with OpenID Connect, self sign-up;
and ``/api/v1/me``, the caller. The services decide; these routes translate HTTP (cookies, redirects) only."""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, RedirectResponse
from pydantic import BaseModel, ConfigDict, Field

from crater_app.api import docs
from crater_app.api.body import decode_object
from crater_app.api.deps import CtxDep, CurrentActor, run_read
from crater_app.api.error_docs import raises
from crater_app.api.errors import error_body, request_language
from crater_app.api.responses import json_response
from crater_app.api.routes import API_PREFIX
from crater_app.api.routes.sessions import client_ip, set_session_cookie
from crater_app.auth.oidc import PENDING_TTL_S, OidcError
from crater_app.auth.passwords import MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS
from crater_app.domain.errors import CraterError, NotFound
from crater_app.domain.naming import MAX_USERNAME_CHARS
from crater_app.schemas import TokenPublic, UserPublic
from crater_app.services import console_sessions, oidc_login, sign_in, users

router = APIRouter(prefix=API_PREFIX, tags=["auth"])

#: the HttpOnly cookie holding the sealed pending login (``auth.oidc``), sent only to the OIDC routes
PENDING_COOKIE = "crater_oidc"


class SignupRequest(BaseModel):
    """``POST /api/v1/auth/signup`` body (when self sign-up is on)."""

    model_config = ConfigDict(extra="forbid")
    username: str = Field(max_length=MAX_USERNAME_CHARS, description="1..64 Unicode letters, digits, '.', '_', '-', "
                          "'@'; unique without case (NFKC case folding)")
    password: str = Field(min_length=MIN_PASSWORD_CHARS, max_length=MAX_PASSWORD_CHARS)
    email: str = Field(default="", max_length=users.MAX_EMAIL_CHARS)
    display_name: str = Field(default="", max_length=users.MAX_DISPLAY_NAME_CHARS)


@router.post("/auth/token", response_model=TokenPublic, openapi_extra=docs.LOGIN_BODY, responses=raises(401, 429))
async def token(request: Request, c: CtxDep) -> Response:
    """Exchange ``{"username", "password"}`` for a bearer token."""
    body = await decode_object(request, ("username", "password"))
    return json_response(await run_in_threadpool(sign_in.login, c, body.get("username"), body.get("password")))


@router.get("/me", response_model=UserPublic)
async def get_me(c: CtxDep, a: CurrentActor) -> Response:
    """The signed-in user."""
    return json_response(await run_read(users.me, c, a))


# ---- OpenID Connect ------------------------------------------------------------------------------------------------
def _console_url(configured: str, path: str, params: dict[str, str]) -> str:
    """``path`` on the console, at the origin of ``configured`` (``CRATER_OIDC_REDIRECT_URL``, the public URL)
    when set, else relative to where the browser is."""
    origin = ""
    if configured:
        parts = urlsplit(configured)
        origin = f"{parts.scheme}://{parts.netloc}"
    return f"{origin}{path}" + (f"?{urlencode(params)}" if params else "")


def _failure(request: Request, redirect_url: str, exc: CraterError, reason: str) -> Response:
    """A failed sign-in: for a browser (``Accept: text/html``) 302 to ``/login?sso_error=<reason>``, where the
    console explains it in the user's language; for other clients the JSON error (401)."""
    if "text/html" in request.headers.get("accept", ""):
        response: Response = RedirectResponse(_console_url(redirect_url, "/login", {"sso_error": reason}),
                                              status_code=302)
    else:
        response = JSONResponse(error_body(exc, request_language(request)), status_code=exc.http_status)
    response.headers["Cache-Control"] = "no-store"
    return response


def _require_oidc(c) -> None:
    if not oidc_login.enabled(c.settings):
        raise NotFound("oidc.disabled", "path")


@router.get("/auth/oidc/login", status_code=302,
            responses={302: {"description": "to the identity provider"}, **raises(404)})
async def oidc_start(request: Request, c: CtxDep, next: str = "") -> Response:
    """Start single sign-on: 302 to the provider's authorization endpoint (authorization code + PKCE S256,
    ``state`` and ``nonce``), with the pending login sealed in an HttpOnly cookie for 10 minutes. ``next``: a
    console path to open afterwards. 404 when OIDC is not configured."""
    _require_oidc(c)
    try:
        url, sealed = await run_in_threadpool(oidc_login.start, c, str(request.base_url), next[:512])
    except OidcError as exc:  # the provider cannot be reached or its discovery document is wrong
        return _failure(request, c.settings.oidc_redirect_url, exc, exc.reason)
    response = RedirectResponse(url, status_code=302)
    response.set_cookie(PENDING_COOKIE, sealed, max_age=PENDING_TTL_S, path=f"{API_PREFIX}/auth/oidc",
                        httponly=True, samesite="lax", secure=request.url.scheme == "https")
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/auth/oidc/callback", status_code=302,
            responses={302: {"description": "to the console page asked for, with the session cookie set"},
                       **raises(404), 401: {**raises(401)[401],
                                            "description": "the sign-in failed (JSON error; browsers go to /login)"}})
async def oidc_callback(request: Request, c: CtxDep) -> Response:
    """The provider's redirect back (``code`` and ``state``, or ``error``). On success: a console session (its
    ``HttpOnly`` cookie set here) and 302 to the page asked for at the start (default ``/jobs``). On failure: a
    JSON error (401) naming what was wrong, or for a browser (``Accept: text/html``) 302 to
    ``/login?sso_error=<reason>``; only an ``auth:oidc`` error row is written."""
    _require_oidc(c)
    params = {k: v[:2048] for k, v in request.query_params.items() if k in
              ("code", "state", "error", "error_description", "iss", "session_state")}
    try:
        done = await run_in_threadpool(oidc_login.complete, c, request.cookies.get(PENDING_COOKIE), params,
                                       str(request.base_url))
        secret, _, _ = await run_in_threadpool(
            console_sessions.start_from_code, c, done.code, request.headers.get("user-agent", ""),
            client_ip(request), "oidc")
    except OidcError as exc:
        response = _failure(request, c.settings.oidc_redirect_url, exc, exc.reason)
    except sign_in.AccountNotActive as exc:  # disabled in the moment between the two steps
        response = _failure(request, c.settings.oidc_redirect_url, exc, "account")
    else:
        target = _console_url(c.settings.oidc_redirect_url, done.next_path or "/jobs", {})
        response = RedirectResponse(target, status_code=302)
        set_session_cookie(response, request, c.settings, secret)
    response.delete_cookie(PENDING_COOKIE, path=f"{API_PREFIX}/auth/oidc")
    response.headers["Cache-Control"] = "no-store"
    return response


# ---- self sign-up --------------------------------------------------------------------------------------------------
@router.post("/auth/signup", status_code=201, response_model=UserPublic, responses=raises(403, 409),
             openapi_extra=docs.request_body(SignupRequest, yaml=True))
async def signup(request: Request, c: CtxDep) -> Response:
    """Create one's own local account (when ``CRATER_SIGNUP_ENABLED``; 403 otherwise): ``{"username",
    "password", "email"?, "display_name"?}``. It is ``pending`` until an admin activates it."""
    body = await decode_object(request, ("username", "password", "email", "display_name"))
    user = await run_in_threadpool(users.signup, c, body.get("username"), body.get("password"),
                                   body.get("email", ""), body.get("display_name", ""))
    return json_response(user, 201)
