"""Password hashing with argon2id (``argon2-cffi`` defaults, RFC 9106 low-memory profile) and the password rule."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from crater_app.domain.errors import InvalidInput
from crater_app.domain.naming import is_text

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


def check_password(value: object, field: str = "password") -> str:
    """``value`` when it is an acceptable new password: a string of 8..1,024 characters that UTF-8 can encode,
    without NUL (NIST SP 800-63B §5.1.1.2: at least 8 characters, long passphrases allowed, no composition rules).

    Raises:
        InvalidInput: ``auth.password_rule`` naming ``field`` with ``min`` and ``max``.
    """
    if not isinstance(value, str) or not MIN_PASSWORD_CHARS <= len(value) <= MAX_PASSWORD_CHARS \
            or not is_text(value):
        raise InvalidInput("auth.password_rule", field, field_name=field, min=MIN_PASSWORD_CHARS,
                           max=MAX_PASSWORD_CHARS)
    return value

