"""Password hashing with argon2id (``argon2-cffi`` defaults, RFC 9106 low-memory profile)."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

_hasher = PasswordHasher()
MIN_PASSWORD_CHARS = 8
MAX_PASSWORD_CHARS = 1024


def hash_password(password: str) -> str:
    """Return an argon2id hash string of ``password``."""
    return _hasher.hash(password)


def verify_password(stored_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches ``stored_hash`` (``False`` for ``None`` or a malformed hash)."""
    if not stored_hash:
        return False
    try:
        return _hasher.verify(stored_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False
