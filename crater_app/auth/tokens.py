"""Bearer tokens and console session secrets: 256-bit random secrets (``secrets.token_urlsafe``), stored only as
SHA-256 hex digests."""

from __future__ import annotations

import hashlib
import secrets

#: the prefix of bearer tokens (login and personal API tokens): secret scanners and people recognise them
TOKEN_PREFIX = "crt_"
#: the prefix of console session secrets (the session cookie's value); never accepted as a bearer token
SESSION_PREFIX = "crs_"


def new_token(prefix: str = TOKEN_PREFIX) -> tuple[str, str]:
    """Return ``(secret, sha256_hex)``: ``prefix`` + 43 URL-safe characters (32 random bytes); show or send the
    secret once, store only the digest."""
    secret = prefix + secrets.token_urlsafe(32)
    return secret, hash_token(secret)


def hash_token(secret: str) -> str:
    """SHA-256 hex digest (64 chars) of ``secret``."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
