"""The OpenID Connect provider as Crater sees it: its settings, the errors of a login, and its documents (the
discovery document and the JSON Web Key Set), fetched over one shared HTTP client and cached per process.

Sources: OpenID Connect Discovery 1.0 (§4 the discovery document, §4.3 the issuer must match), RFC 7517 (JWK Set).
The login flow itself is in :mod:`crater_app.auth.oidc`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import httpx
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from crater_app.domain.errors import Unauthenticated

DISCOVERY_TTL_S = 3600.0  # discovery documents and JWKS are fetched again after an hour (or on an unknown key id)
JWKS_MIN_REFETCH_S = 30.0  # tokens with unknown key ids refetch the JWKS at most this often (no amplification)
HTTP_TIMEOUT_S = 10.0


class OidcError(Unauthenticated):
    """An OpenID Connect login that cannot complete (HTTP 401): ``code`` (``oidc.state_mismatch``, ...) and its
    arguments say exactly what failed (catalogue ``i18n/identity``).

    ``reason`` is the step, a machine word the console's sign-in page explains: ``disabled`` (OIDC off),
    ``config`` (provider or settings unusable), ``idp`` (the provider answered with an error), ``state`` (missing, wrong, expired or
    replayed state), ``exchange`` (the code exchange failed, e.g. a replayed code), ``id_token`` (signature, issuer,
    audience, times or nonce wrong), ``claims`` (the UserInfo endpoint, asked for claims the ID token lacks,
    failed or answered for another subject), ``account`` (the Crater account is not active or cannot be made).
    """

    def __init__(self, code: str, reason: str, **args: object) -> None:
        super().__init__(code, None, **args)
        self.reason = reason


@dataclass(frozen=True)
class ProviderSettings:
    """What Crater needs to talk to one provider (from ``CRATER_OIDC_*``).

    ``issuer``: the provider's issuer URL (exactly as in its ID tokens); ``discovery_url``: empty for
    ``<issuer>/.well-known/openid-configuration``; ``client_secret``: empty for a public client (PKCE only);
    ``scopes``: space-separated, must include ``openid``; ``redirect_url``: Crater's callback URL as registered.
    """

    issuer: str
    client_id: str
    client_secret: str
    redirect_url: str
    scopes: str = "openid profile email"
    discovery_url: str = ""

    @property
    def resolved_discovery_url(self) -> str:
        """The discovery document's URL (OpenID Connect Discovery 1.0 §4)."""
        return self.discovery_url or self.issuer.rstrip("/") + "/.well-known/openid-configuration"


_cache_lock = threading.Lock()
_http_client: httpx.Client | None = None


def http_client() -> httpx.Client:
    """One HTTP client per process, shared by every sign-in (httpx clients are thread-safe): building a client
    loads the CA bundle into a new TLS context, ~45 ms on this machine kind, more than the rest of a sign-in."""
    global _http_client
    with _cache_lock:
        if _http_client is None:
            _http_client = httpx.Client(timeout=HTTP_TIMEOUT_S, follow_redirects=False)
        return _http_client
_documents: dict[str, tuple[float, dict]] = {}  # discovery URL -> (fetched at, document)
_key_sets: dict[str, tuple[float, KeySet]] = {}  # jwks_uri -> (fetched at, keys)


def forget_cached_documents() -> None:
    """Drop the cached discovery documents and key sets (tests; a provider that rotated keys is refetched anyway)."""
    with _cache_lock:
        _documents.clear()
        _key_sets.clear()


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, at most 200 characters (for an error's ``detail``)."""
    return (str(exc).splitlines() or [""])[0][:200]


class _Unreadable(Exception):
    """A provider document that could not be read (``detail``) or is not a JSON object (``detail`` empty)."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(detail)
        self.detail = detail


def _get_json(url: str) -> dict:
    """The JSON object at ``url``.

    Raises:
        _Unreadable: unreachable, an error status, not JSON (``detail`` says why), or not an object.
    """
    try:
        response = http_client().get(url, headers={"Accept": "application/json"})
        response.raise_for_status()
        data = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise _Unreadable(first_line(exc) or type(exc).__name__) from None
    if not isinstance(data, dict):
        raise _Unreadable()
    return data


def discover(provider: ProviderSettings) -> dict:
    """The provider's discovery document (cached for an hour per process).

    Raises:
        OidcError(config): unreachable, not JSON, an ``issuer`` different from the configured one (Discovery §4.3),
            or a missing ``authorization_endpoint``/``token_endpoint``/``jwks_uri``.
    """
    url = provider.resolved_discovery_url
    with _cache_lock:
        hit = _documents.get(url)
    if hit is not None and time.monotonic() - hit[0] < DISCOVERY_TTL_S:
        return hit[1]
    try:
        doc = _get_json(url)
    except _Unreadable as exc:
        if exc.detail:
            raise OidcError("oidc.discovery_unreadable", "config", url=url[:500], detail=exc.detail) from None
        raise OidcError("oidc.discovery_not_object", "config", url=url[:500]) from None
    if doc.get("issuer") != provider.issuer:
        raise OidcError("oidc.issuer_mismatch", "config", found=str(doc.get("issuer"))[:200],
                        configured=provider.issuer)
    for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise OidcError("oidc.discovery_incomplete", "config", key=key)
    with _cache_lock:
        _documents[url] = (time.monotonic(), doc)
    return doc


def key_set(jwks_uri: str, refresh: bool = False) -> KeySet:
    """The provider's signing keys at ``jwks_uri`` (cached for an hour; ``refresh`` refetches when the cached set is
    older than :data:`JWKS_MIN_REFETCH_S`, for a token signed with a key id not in it).

    Raises:
        OidcError(config): unreachable, not a JSON object, or not a valid JWK Set.
    """
    with _cache_lock:
        hit = _key_sets.get(jwks_uri)
    if hit is not None:
        age = time.monotonic() - hit[0]
        if age < (JWKS_MIN_REFETCH_S if refresh else DISCOVERY_TTL_S):
            return hit[1]
    try:
        data = _get_json(jwks_uri)
    except _Unreadable as exc:
        if exc.detail:
            raise OidcError("oidc.jwks_unreadable", "config", url=jwks_uri[:500], detail=exc.detail) from None
        raise OidcError("oidc.jwks_not_object", "config", url=jwks_uri[:500]) from None
    try:
        keys = KeySet.import_key_set(data)  # type: ignore[arg-type]
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise OidcError("oidc.jwks_invalid", "config", url=jwks_uri[:500], detail=str(exc)[:200]) from None
    with _cache_lock:
        _key_sets[jwks_uri] = (time.monotonic(), keys)
    return keys
