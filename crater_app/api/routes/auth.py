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
from crater_app.api.errors import error_body, request_language
from crater_app.api.responses import json_response
from crater_app.api.routes import API_PREFIX
from crater_app.auth.oidc import PENDING_TTL_S, OidcError
from crater_app.auth.passwords import MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS
from crater_app.domain.errors import NotFound
from crater_app.schemas import TokenPublic, UserPublic
from crater_app.services import oidc_login, users

router = APIRouter(prefix=API_PREFIX, tags=["auth"])

#: the HttpOnly cookie holding the sealed pending login (``auth.oidc``), sent only to the OIDC routes
PENDING_COOKIE = "crater_oidc"


class SignupRequest(BaseModel):
    """``POST /api/v1/auth/signup`` body (when self sign-up is on)."""

    model_config = ConfigDict(extra="forbid")
    username: str = Field(max_length=63, description="DNS-1123 label")
    password: str = Field(min_length=MIN_PASSWORD_CHARS, max_length=MAX_PASSWORD_CHARS)
    email: str = Field(default="", max_length=users.MAX_EMAIL_CHARS)
    display_name: str = Field(default="", max_length=users.MAX_DISPLAY_NAME_CHARS)


@router.post("/auth/token", response_model=TokenPublic, openapi_extra=docs.LOGIN_BODY)
async def token(request: Request, c: CtxDep) -> Response:
    """Exchange ``{"username", "password"}`` for a bearer token."""
    body = await decode_object(request, ("username", "password"))
    return json_response(await run_in_threadpool(users.login, c, body.get("username"), body.get("password")))


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
    return f"{origin}{path}?{urlencode(params)}"


def _failure(request: Request, redirect_url: str, exc: OidcError) -> Response:
    """A failed sign-in: for a browser (``Accept: text/html``) 302 to ``/login?sso_error=<reason>``, where the
    console explains it in the user's language; for other clients the JSON error (401)."""
    if "text/html" in request.headers.get("accept", ""):
        response: Response = RedirectResponse(_console_url(redirect_url, "/login", {"sso_error": exc.reason}),
                                              status_code=302)
    else:
        response = JSONResponse(error_body(exc, request_language(request)), status_code=exc.http_status)
    response.headers["Cache-Control"] = "no-store"
    return response


def _require_oidc(c) -> None:
    if not oidc_login.enabled(c.settings):
        raise NotFound("auth.oidc_not_configured", "path")


@router.get("/auth/oidc/login", status_code=302,
            responses={302: {"description": "to the identity provider"}, 404: {"description": "OIDC is off"}})
async def oidc_start(request: Request, c: CtxDep, next: str = "") -> Response:
    """Start single sign-on: 302 to the provider's authorization endpoint (authorization code + PKCE S256,
    ``state`` and ``nonce``), with the pending login sealed in an HttpOnly cookie for 10 minutes. ``next``: a
    console path to open afterwards. 404 when OIDC is not configured."""
    _require_oidc(c)
    try:
        url, sealed = await run_in_threadpool(oidc_login.start, c, str(request.base_url), next[:512])
    except OidcError as exc:  # the provider cannot be reached or its discovery document is wrong
        return _failure(request, c.settings.oidc_redirect_url, exc)
    response = RedirectResponse(url, status_code=302)
    response.set_cookie(PENDING_COOKIE, sealed, max_age=PENDING_TTL_S, path=f"{API_PREFIX}/auth/oidc",
                        httponly=True, samesite="lax", secure=request.url.scheme == "https")
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/auth/oidc/callback", status_code=302,
            responses={302: {"description": "to the console's /login with a one-time code"},
                       401: {"description": "the sign-in failed (JSON error; browsers go to /login)"}})
async def oidc_callback(request: Request, c: CtxDep) -> Response:
    """The provider's redirect back (``code`` and ``state``, or ``error``). On success: 302 to the console's
    ``/login?sso=<one-time code>`` (single use, 60 s), which the console redeems for its session. On failure:
    a JSON error (401) naming what was wrong, or for a browser (``Accept: text/html``) 302 to
    ``/login?sso_error=<reason>``; only an ``auth:oidc`` error row is written."""
    _require_oidc(c)
    params = {k: v[:2048] for k, v in request.query_params.items() if k in
              ("code", "state", "error", "error_description", "iss", "session_state")}
    try:
        done = await run_in_threadpool(oidc_login.complete, c, request.cookies.get(PENDING_COOKIE), params,
                                       str(request.base_url))
    except OidcError as exc:
        response = _failure(request, c.settings.oidc_redirect_url, exc)
    else:
        query = {"sso": done.code} | ({"next": done.next_path} if done.next_path else {})
        response = RedirectResponse(_console_url(c.settings.oidc_redirect_url, "/login", query), status_code=302)
    response.delete_cookie(PENDING_COOKIE, path=f"{API_PREFIX}/auth/oidc")
    response.headers["Cache-Control"] = "no-store"
    return response


# ---- self sign-up --------------------------------------------------------------------------------------------------
@router.post("/auth/signup", status_code=201, response_model=UserPublic,
             openapi_extra=docs.request_body(SignupRequest, yaml=True))
async def signup(request: Request, c: CtxDep) -> Response:
    """Create one's own local account (when ``CRATER_SIGNUP_ENABLED``; 403 otherwise): ``{"username",
    "password", "email"?, "display_name"?}``. It is ``pending`` until an admin activates it."""
    body = await decode_object(request, ("username", "password", "email", "display_name"))
    user = await run_in_threadpool(users.signup, c, body.get("username"), body.get("password"),
                                   body.get("email", ""), body.get("display_name", ""))
    return json_response(user, 201)
