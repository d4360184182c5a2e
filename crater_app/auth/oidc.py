"""OpenID Connect relying party (authorization code flow with PKCE), built on authlib and joserfc.

The protocol only: discovery, the authorization URL, the pending-login cookie, the code exchange and the ID token
checks. Which Crater account a verified identity becomes is decided in ``services.oidc_login``.

Sources: OpenID Connect Core 1.0 §3.1 (code flow; §3.1.3.7 ID token validation), OpenID Connect Discovery 1.0
(§4 the discovery document, §4.3 issuer must match), RFC 7636 (PKCE, ``S256``), RFC 6749 §4.1 and §10.12
(``state`` against CSRF).

Pending logins are kept in the browser, not on the server: :func:`begin` returns the values to remember (``state``,
``nonce``, PKCE ``code_verifier``, a deadline) sealed in a JWE (``dir`` + ``A256GCM``: encrypted and authenticated)
under a key derived from the deployment secret. Any web worker or replica can finish the login, and nothing is
written before the provider answers. The record is single-use: the callback deletes the cookie, each process refuses
a ``state`` it has already finished, and the authorization code it carries is itself single-use at the provider
(RFC 6749 §4.1.2), so replaying a callback on another worker fails at the token exchange.
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from dataclasses import dataclass
from urllib.parse import quote

import httpx

from authlib.common.security import generate_token
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwe, jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import OctKey
from joserfc.jwt import JWTClaimsRegistry

from crater_app.auth.oidc_provider import (  # noqa: F401 - OidcError, ProviderSettings, discover: this module's API too
    OidcError, ProviderSettings, discover, first_line, forget_cached_documents, http_client, key_set,
)

PENDING_TTL_S = 600  # a login started more than 10 minutes ago is refused at the callback
CLOCK_LEEWAY_S = 60  # tolerated clock difference with the provider for exp/iat
# Asymmetric JWS algorithms accepted for ID tokens; never "none" or HMAC with the client secret.
ID_TOKEN_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


@dataclass(frozen=True)
class PendingLogin:
    """A login between the redirect to the provider and the callback: the values the callback checks."""

    state: str
    nonce: str
    code_verifier: str
    next_path: str
    expires_at: float  # Unix time, seconds


@dataclass(frozen=True)
class Identity:
    """A verified ID token: ``issuer`` and ``subject`` (the stable identity), and all its ``claims``."""

    issuer: str
    subject: str
    claims: dict


_states_lock = threading.Lock()
_finished_states: dict[str, float] = {}  # state -> expiry, in this process


def _seal_key(key: bytes) -> OctKey:
    return OctKey.import_key(key)


def begin(provider: ProviderSettings, key: bytes, next_path: str = "") -> tuple[str, str]:
    """Start a login: the provider's authorization URL and the sealed pending-login record.

    Args:
        key: 32 bytes (``auth.keys.derive_key(..., "oidc-pending-login")``) sealing the record.
        next_path: where the console goes after signing in (kept in the record, checked by the caller).

    Returns:
        ``(authorization_url, sealed)``: send the browser to the URL; keep ``sealed`` in an HttpOnly cookie.

    Raises:
        OidcError(config): discovery failed.
    """
    doc = discover(provider)
    pending = PendingLogin(state=generate_token(43), nonce=generate_token(43), code_verifier=generate_token(64),
                           next_path=next_path, expires_at=time.time() + PENDING_TTL_S)
    url = prepare_grant_uri(
        doc["authorization_endpoint"], client_id=provider.client_id, response_type="code",
        redirect_uri=provider.redirect_url, scope=provider.scopes, state=pending.state, nonce=pending.nonce,
        code_challenge=create_s256_code_challenge(pending.code_verifier), code_challenge_method="S256",
    )
    payload = json.dumps({"s": pending.state, "n": pending.nonce, "v": pending.code_verifier, "p": next_path,
                          "e": pending.expires_at}).encode()
    sealed = jwe.encrypt_compact({"alg": "dir", "enc": "A256GCM"}, payload, _seal_key(key))
    return url, sealed


def open_pending(sealed: str | None, key: bytes) -> PendingLogin:
    """The pending login sealed by :func:`begin`.

    Raises:
        OidcError(state): no record, not sealed with ``key`` (tampered or another deployment's), or expired.
    """
    if not sealed:
        raise OidcError("oidc.no_pending", "state")
    try:
        data = json.loads(jwe.decrypt_compact(sealed, _seal_key(key)).plaintext or b"")
        pending = PendingLogin(state=str(data["s"]), nonce=str(data["n"]), code_verifier=str(data["v"]),
                               next_path=str(data.get("p", "")), expires_at=float(data["e"]))
    except (JoseError, ValueError, TypeError, KeyError):
        raise OidcError("oidc.pending_invalid", "state") from None
    if pending.expires_at < time.time():
        raise OidcError("oidc.pending_expired", "state", limit=PENDING_TTL_S)
    return pending


def _claim_state(pending: PendingLogin) -> None:
    """Mark ``pending.state`` finished in this process; refuse it when it already was (a replayed callback)."""
    now = time.time()
    with _states_lock:
        for state in [s for s, until in _finished_states.items() if until < now]:
            del _finished_states[state]
        if pending.state in _finished_states:
            raise OidcError("oidc.state_replayed", "state")
        _finished_states[pending.state] = pending.expires_at


def finish(provider: ProviderSettings, pending: PendingLogin, params: dict[str, str],
           wanted_claims: tuple[str, ...] = ()) -> Identity:
    """Complete a login from the callback's query ``params`` (``code``, ``state`` or ``error``).

    Steps: the provider's ``error`` (RFC 6749 §4.1.2.1), ``state`` equal to the pending one (constant-time), an
    ``iss`` parameter, when sent, equal to the issuer (RFC 9207, against mix-up attacks), the
    code exchanged at the token endpoint with the PKCE ``code_verifier`` (client_secret_basic, or ``none`` for a
    public client), then the ID token: signature by a key of the provider's JWKS (refetched once for an unknown
    key id), ``iss`` equal to the issuer, ``aud`` containing the client id (and ``azp`` equal to it when there are
    several audiences), ``exp`` in the future and ``iat`` not in the future (60 s leeway), ``nonce`` equal to the
    pending one, ``sub`` present. When the ID token lacks one of ``wanted_claims`` (e.g. ``groups``) and the
    provider has a UserInfo endpoint, the claims are completed from it (OpenID Connect Core §5.3, §5.4: claims
    asked for by scope may be returned there only); its ``sub`` must equal the ID token's (§5.3.2).

    Raises:
        OidcError: with ``reason`` ``idp``, ``state``, ``exchange``, ``id_token``, ``claims`` or ``config``.
    """
    if params.get("error"):
        raise OidcError("oidc.idp_error", "idp", error=params["error"][:100],
                        description=(params.get("error_description") or "")[:300])
    state = params.get("state") or ""
    if not hmac.compare_digest(state.encode(), pending.state.encode()):
        raise OidcError("oidc.state_mismatch", "state")
    if params.get("iss") and params["iss"] != provider.issuer:  # RFC 9207: the answer came from another server
        raise OidcError("oidc.iss_mismatch", "idp", found=params["iss"][:200], configured=provider.issuer)
    code = params.get("code") or ""
    if not code:
        raise OidcError("oidc.no_code", "idp")
    _claim_state(pending)
    doc = discover(provider)
    token = _exchange(provider, doc["token_endpoint"], code, pending.code_verifier)
    id_token = token.get("id_token")
    if not isinstance(id_token, str) or not id_token:
        raise OidcError("oidc.no_id_token", "exchange")
    identity = verify_id_token(provider, doc, id_token, pending.nonce)
    missing = [c for c in wanted_claims if c and c not in identity.claims]
    if missing and doc.get("userinfo_endpoint") and token.get("access_token"):
        extra = userinfo(doc["userinfo_endpoint"], str(token["access_token"]), identity.subject)
        identity = Identity(identity.issuer, identity.subject, {**extra, **identity.claims})
    return identity


def userinfo(endpoint: str, access_token: str, subject: str) -> dict:
    """The UserInfo response (OpenID Connect Core §5.3) for ``access_token``; JSON only (signed UserInfo is not
    asked for).

    Raises:
        OidcError(claims): unreachable, an error status, not a JSON object, or a ``sub`` other than ``subject``
            (the answer must not be used: it may belong to someone else).
    """
    try:
        response = http_client().get(endpoint, headers={"Authorization": f"Bearer {access_token}",
                                                  "Accept": "application/json"})
        response.raise_for_status()
        data = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise OidcError("oidc.userinfo_unreadable", "claims", url=endpoint[:500], detail=first_line(exc)) from None
    if not isinstance(data, dict) or data.get("sub") != subject:
        raise OidcError("oidc.userinfo_subject", "claims")
    return data


def _exchange(provider: ProviderSettings, token_endpoint: str, code: str, code_verifier: str) -> dict:
    """POST the code to the token endpoint (RFC 6749 §4.1.3 with RFC 7636 §4.5); the token response as a dict.

    A confidential client authenticates with HTTP Basic (``client_secret_basic``, id and secret form-encoded first,
    RFC 6749 §2.3.1); a public client sends its ``client_id`` in the form.
    """
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": provider.redirect_url,
            "code_verifier": code_verifier}
    auth = None
    if provider.client_secret:
        auth = httpx.BasicAuth(quote(provider.client_id, safe=""), quote(provider.client_secret, safe=""))
    else:
        form["client_id"] = provider.client_id
    try:
        response = http_client().post(token_endpoint, data=form, auth=auth, headers={"Accept": "application/json"})
        body = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise OidcError("oidc.exchange_failed", "exchange", detail=str(exc)[:200]) from None
    if not isinstance(body, dict):
        raise OidcError("oidc.exchange_not_object", "exchange")
    if "error" in body or response.status_code != 200:
        raise OidcError("oidc.code_refused", "exchange", error=str(body.get("error", response.status_code))[:100],
                        description=str(body.get("error_description") or "")[:300])
    return body


def verify_id_token(provider: ProviderSettings, doc: dict, id_token: str, nonce: str) -> Identity:
    """Check an ID token (OpenID Connect Core §3.1.3.7) and return its identity; see :func:`finish`.

    Raises:
        OidcError(id_token): any check failed; OidcError(config): the JWKS cannot be read.
    """
    algorithms = [a for a in doc.get("id_token_signing_alg_values_supported") or ["RS256"] if a in ID_TOKEN_ALGORITHMS]
    if not algorithms:
        raise OidcError("oidc.no_algorithm", "config", accepted=list(ID_TOKEN_ALGORITHMS))
    try:
        try:
            decoded = jwt.decode(id_token, key_set(doc["jwks_uri"]), algorithms=algorithms)
        except InvalidKeyIdError:  # a key id the cached JWKS lacks: the provider rotated its keys; fetch them again
            decoded = jwt.decode(id_token, key_set(doc["jwks_uri"], refresh=True), algorithms=algorithms)
    except (JoseError, ValueError, TypeError) as exc:
        raise OidcError("oidc.signature_invalid", "id_token", detail=f"{type(exc).__name__}: {str(exc)[:200]}") \
            from None
    claims = decoded.claims
    registry = JWTClaimsRegistry(
        leeway=CLOCK_LEEWAY_S,
        iss={"essential": True, "value": provider.issuer},
        sub={"essential": True},
        aud={"essential": True, "value": provider.client_id},
        exp={"essential": True},
        iat={"essential": True},
        nonce={"essential": True, "value": nonce},
    )
    try:
        registry.validate(claims)
    except JoseError as exc:
        claim = str(getattr(exc, "claim", "") or exc)
        if "exp" in claim:
            raise OidcError("oidc.token_expired", "id_token") from None
        if "aud" in claim:
            raise OidcError("oidc.wrong_audience", "id_token", client_id=provider.client_id) from None
        if "iss" in claim:
            raise OidcError("oidc.wrong_issuer", "id_token", issuer=provider.issuer) from None
        if "nonce" in claim:
            raise OidcError("oidc.nonce_mismatch", "id_token") from None
        raise OidcError("oidc.token_refused", "id_token", detail=str(exc)[:200]) from None
    if isinstance(claims.get("aud"), list) and len(claims["aud"]) > 1 and claims.get("azp") != provider.client_id:
        raise OidcError("oidc.azp_mismatch", "id_token", client_id=provider.client_id)
    if not isinstance(claims.get("iat"), (int, float)) or claims["iat"] > time.time() + CLOCK_LEEWAY_S:
        raise OidcError("oidc.issued_in_future", "id_token")
    return Identity(issuer=provider.issuer, subject=str(claims["sub"]), claims=dict(claims))
