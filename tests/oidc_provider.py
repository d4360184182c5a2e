"""A real OpenID Connect provider for the tests, built from authlib's server components and served over HTTP on
127.0.0.1 (``http.server`` in a thread): discovery document, JWKS, authorization endpoint (auto-consents for the
configured test user), token endpoint. Authorization code grant (``authlib.oauth2.rfc6749``) with PKCE required
and S256 only (``rfc7636.CodeChallenge``) and ID tokens (``authlib.oidc.core.OpenIDCode``), signed RS256 with a
2048-bit RSA key generated when the provider starts.

Knobs for the failure tests (attributes of :class:`Provider`, changed between requests): ``expired`` issues ID
tokens that expired an hour ago, ``audience`` puts another audience in them, ``tamper`` flips a byte of their
signature, ``issuer_claim`` puts another ``iss`` in them, ``deny`` answers the authorization request with
``error=access_denied``, ``claims_in_id_token`` False puts only ``sub`` in ID tokens (the other claims come from
the UserInfo endpoint, as OpenID Connect Core §5.4 allows), ``userinfo_sub`` makes UserInfo answer for another
subject. ``authorize_requests``, ``token_requests`` and ``userinfo_requests`` record what Crater sent.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

# authlib refuses plain http outside this switch; the provider only ever listens on 127.0.0.1.
os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")

from authlib.common.security import generate_token  # noqa: E402
from authlib.oauth2.rfc6749 import (  # noqa: E402
    AuthorizationCodeMixin,
    AuthorizationServer,
    ClientMixin,
    OAuth2Request,
)
from authlib.oauth2.rfc6749.errors import InvalidRequestError, OAuth2Error  # noqa: E402
from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant  # noqa: E402
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload  # noqa: E402
from authlib.oauth2.rfc6750 import BearerTokenGenerator  # noqa: E402
from authlib.oauth2.rfc7636 import CodeChallenge  # noqa: E402
from authlib.oidc.core import UserInfo  # noqa: E402
from authlib.oidc.core.grants import OpenIDCode  # noqa: E402
from joserfc.jwk import KeySet, RSAKey  # noqa: E402


@dataclass
class TestUser:
    """The person the provider signs in (it consents to everything)."""

    sub: str = "u-1001"
    preferred_username: str = "Zhang.San"
    email: str = "zhang.san@example.org"
    name: str = "Zhang San"
    groups: list[str] = field(default_factory=lambda: ["ml-team"])


@dataclass
class _Client(ClientMixin):
    client_id: str
    client_secret: str
    redirect_uris: list[str]

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return self.redirect_uris[0]

    def get_allowed_scope(self, scope):
        allowed = {"openid", "profile", "email", "groups"}
        return " ".join(s for s in (scope or "").split() if s in allowed)

    def check_redirect_uri(self, redirect_uri):
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret):
        return bool(self.client_secret) and client_secret == self.client_secret

    def check_endpoint_auth_method(self, method, endpoint):
        return method == ("client_secret_basic" if self.client_secret else "none")

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type == "authorization_code"


@dataclass
class _Code(AuthorizationCodeMixin):
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    nonce: str | None
    code_challenge: str | None
    code_challenge_method: str | None
    user: TestUser
    auth_time: int

    def get_redirect_uri(self):
        return self.redirect_uri

    def get_scope(self):
        return self.scope

    def get_nonce(self):
        return self.nonce

    def get_auth_time(self):
        return self.auth_time

    def get_acr(self):
        return None

    def get_amr(self):
        return None


class _Request(OAuth2Request):
    """An ``OAuth2Request`` from the query string and the url-encoded form of an ``http.server`` request."""

    def __init__(self, method: str, uri: str, headers: dict, query: dict, form: dict):
        super().__init__(method, uri, headers=headers)
        self._args, self._form = query, form
        self.payload = BasicOAuth2Payload({**query, **form})

    @property
    def args(self):
        return self._args

    @property
    def form(self):
        return self._form


class _S256Only(CodeChallenge):
    """PKCE required on every authorization request, and only with S256 (RFC 7636 §4.2; OAuth 2.1)."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant, redirect_uri):
        data = grant.request.payload.data
        if not data.get("code_challenge") or data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("PKCE is required: send code_challenge with code_challenge_method=S256")
        super().validate_code_challenge(grant, redirect_uri)


class Provider:
    """The provider; :meth:`start` serves it on a free port of 127.0.0.1 and sets :attr:`issuer`."""

    def __init__(self, client_id: str = "crater", client_secret: str = "crater-secret",
                 redirect_uris: list[str] | None = None, user: TestUser | None = None):
        self.user = user or TestUser()
        self.client = _Client(client_id, client_secret, list(redirect_uris or []))
        self.key = RSAKey.generate_key(2048, parameters={"kid": "test-key-1", "use": "sig", "alg": "RS256"})
        self.codes: dict[str, _Code] = {}
        self.expired = False
        self.audience: str | None = None
        self.tamper = False
        self.issuer_claim: str | None = None
        self.deny = False
        self.claims_in_id_token = True
        self.userinfo_sub: str | None = None
        self.access_tokens: dict[str, TestUser] = {}
        self.userinfo_requests = 0
        self.authorize_requests: list[dict] = []
        self.token_requests: list[dict] = []
        self.issuer = ""
        self._httpd: ThreadingHTTPServer | None = None
        self.server = self._build_server()

    # ---- authlib server ------------------------------------------------------------------------------------
    def _build_server(self) -> AuthorizationServer:
        provider = self

        class Server(AuthorizationServer):
            def query_client(self, client_id):
                return provider.client if client_id == provider.client.client_id else None

            def save_token(self, token, request):
                provider.access_tokens[token["access_token"]] = request.user

            def create_oauth2_request(self, request):
                return request

            def create_json_request(self, request):
                return request

            def handle_response(self, status, body, headers):
                return status, body, headers

            def send_signal(self, name, *args, **kwargs):
                return None

        class CodeGrant(AuthorizationCodeGrant):
            TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "none"]

            def save_authorization_code(self, code, request):
                data = request.payload.data
                provider.codes[code] = _Code(
                    code=code, client_id=request.client.client_id, redirect_uri=data.get("redirect_uri", ""),
                    scope=request.payload.scope or "", nonce=data.get("nonce"),
                    code_challenge=data.get("code_challenge"), code_challenge_method=data.get("code_challenge_method"),
                    user=request.user, auth_time=int(time.time()),
                )

            def query_authorization_code(self, code, client):
                item = provider.codes.get(code)
                return item if item is not None and item.client_id == client.client_id else None

            def delete_authorization_code(self, authorization_code):
                provider.codes.pop(authorization_code.code, None)  # single use: a replay gets invalid_grant

            def authenticate_user(self, authorization_code):
                return authorization_code.user

        class IdToken(OpenIDCode):
            def exists_nonce(self, nonce, request):
                return False

            def resolve_client_private_key(self, client):
                return provider.key

            def get_client_algorithm(self, client):
                return "RS256"

            def get_encode_header(self, client):
                return {"alg": "RS256", "kid": provider.key.kid}

            def get_client_claims(self, client):
                now = int(time.time())
                claims = {"iss": provider.issuer_claim or provider.issuer,
                          "aud": [provider.audience or client.client_id]}
                if provider.expired:
                    claims.update(iat=now - 7200, exp=now - 3600, auth_time=now - 7200)
                return claims

            def generate_user_info(self, user, scope):
                if not provider.claims_in_id_token:
                    return UserInfo(sub=user.sub)
                return provider.user_info(user)

            def encode_id_token(self, token, request):
                value = super().encode_id_token(token, request)
                if provider.tamper:
                    head, body, sig = value.split(".")
                    raw = bytearray(base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4)))
                    raw[10] ^= 0xFF
                    value = ".".join((head, body, base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()))
                return value

        server = Server(scopes_supported=["openid", "profile", "email", "groups"])
        server.register_token_generator("default", BearerTokenGenerator(lambda **kw: generate_token(42)))
        server.register_grant(CodeGrant, [_S256Only(required=True), IdToken(require_nonce=True)])
        return server

    def user_info(self, user: TestUser) -> dict:
        """The user's claims (ID token and UserInfo)."""
        return dict(UserInfo(sub=user.sub, preferred_username=user.preferred_username, email=user.email,
                             name=user.name, groups=list(user.groups)))

    # ---- HTTP ----------------------------------------------------------------------------------------------
    def discovery(self) -> dict:
        """The OpenID Provider Metadata (OpenID Connect Discovery 1.0 §3)."""
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
            "scopes_supported": ["openid", "profile", "email", "groups"],
        }

    def handle(self, method: str, path: str, query: dict, form: dict, headers: dict) -> tuple[int, object, list]:
        """One request -> ``(status, body (dict or str), headers)``."""
        if path == "/.well-known/openid-configuration":
            return 200, self.discovery(), []
        if path == "/jwks":
            return 200, KeySet([self.key]).as_dict(private=False), []
        uri = f"{self.issuer}{path}"
        if path == "/authorize":
            self.authorize_requests.append(dict(query))
            request = _Request(method, uri, headers, query, {})
            if self.deny:
                redirect = query.get("redirect_uri", "")
                from authlib.common.urls import add_params_to_uri

                return 302, "", [("Location", add_params_to_uri(redirect, [
                    ("error", "access_denied"), ("error_description", "the user declined"),
                    ("state", query.get("state", ""))]))]
            try:
                grant = self.server.get_consent_grant(request, end_user=self.user)
            except OAuth2Error as error:
                return self.server.handle_error_response(request, error)
            return self.server.create_authorization_response(request, grant_user=self.user, grant=grant)
        if path == "/userinfo":
            self.userinfo_requests += 1
            scheme, _, token = headers.get("Authorization", "").partition(" ")
            user = self.access_tokens.get(token) if scheme.lower() == "bearer" else None
            if user is None:
                return 401, {"error": "invalid_token"}, [("WWW-Authenticate", 'Bearer error="invalid_token"')]
            info = self.user_info(user)
            if self.userinfo_sub:
                info["sub"] = self.userinfo_sub
            return 200, info, []
        if path == "/token" and method == "POST":
            self.token_requests.append(dict(form))
            return self.server.create_token_response(_Request(method, uri, headers, query, form))
        return 404, {"error": "not_found"}, []

    def start(self) -> "Provider":
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                return None

            def _serve(self, method: str):
                parts = urlsplit(self.path)
                query = dict(parse_qsl(parts.query, keep_blank_values=True))
                form = {}
                if method == "POST":
                    length = int(self.headers.get("Content-Length") or 0)
                    form = dict(parse_qsl(self.rfile.read(length).decode(), keep_blank_values=True))
                status, body, headers = provider.handle(method, parts.path, query, form, dict(self.headers.items()))
                data = json.dumps(body).encode() if isinstance(body, (dict, list)) else str(body or "").encode()
                self.send_response(status)
                names = {k.lower() for k, _ in headers}
                for k, v in headers:
                    self.send_header(k, v)
                if "content-type" not in names:
                    self.send_header("Content-Type", "application/json" if isinstance(body, (dict, list))
                                     else "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.issuer = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        # serve_forever checks for shutdown() every poll_interval (0.5 s by default), which every stop() waited for.
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, name="oidc-provider",
                         daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()


# ---- pytest fixtures (imported by the OIDC tests) ----------------------------------------------------------------
import pytest  # noqa: E402

from crater_app.auth import oidc as _oidc  # noqa: E402

CALLBACK = "http://testserver/api/v1/auth/oidc/callback"
MAPPING = {"ml-team": {"project": "ml", "role": "member"}, "ml-leads": {"project": "ml", "role": "admin"},
           "vision": {"project": "vision", "role": "viewer"}, "ghost": {"project": "no-such-project"}}


@pytest.fixture
def provider():
    """A running provider whose client ``crater`` may redirect to Crater's callback on the TestClient host."""
    p = Provider(redirect_uris=[CALLBACK]).start()
    _oidc.forget_cached_documents()
    try:
        yield p
    finally:
        p.stop()
        _oidc.forget_cached_documents()


def oidc_settings(settings, provider: Provider, **extra):
    """``settings`` with OIDC pointed at ``provider`` (and the group mapping above)."""
    values = dict(oidc_issuer=provider.issuer, oidc_client_id=provider.client.client_id,
                  oidc_client_secret=provider.client.client_secret, oidc_redirect_url=CALLBACK,
                  oidc_scopes="openid profile email groups", oidc_group_mapping=json.dumps(MAPPING))
    values.update(extra)
    return settings.model_copy(update=values)
