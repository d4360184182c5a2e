"""Bearer tokens: 256-bit random secrets (``secrets.token_urlsafe``), stored only as SHA-256 hex digests."""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "crt_"


def new_token() -> tuple[str, str]:
    """Return ``(secret, sha256_hex)``; show the secret once, store only the digest."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    return secret, hash_token(secret)


def hash_token(secret: str) -> str:
    """SHA-256 hex digest (64 chars) of ``secret``."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
