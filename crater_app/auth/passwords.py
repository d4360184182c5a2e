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
    without NUL, and not only whitespace (NIST SP 800-63B §5.1.1.2: at least 8 characters, long passphrases and
    spaces allowed, no composition rules; eight spaces are no secret). The rule is the same for sign-up, accounts an
    admin creates, a password change and an admin's reset.

    Raises:
        InvalidInput: naming ``field`` with ``min`` and ``max``: ``auth.password_rule`` (not a string of 8..1,024
            characters of text) or ``auth.password_blank`` (only spaces, tabs or line breaks).
    """
    if not isinstance(value, str) or not MIN_PASSWORD_CHARS <= len(value) <= MAX_PASSWORD_CHARS \
            or not is_text(value):
        raise InvalidInput("auth.password_rule", field, field_name=field, min=MIN_PASSWORD_CHARS,
                           max=MAX_PASSWORD_CHARS)
    if not value.strip():
        raise InvalidInput("auth.password_blank", field, field_name=field, min=MIN_PASSWORD_CHARS,
                           max=MAX_PASSWORD_CHARS)
    return value
