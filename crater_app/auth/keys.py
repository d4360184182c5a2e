"""The deployment's secret key and keys derived from it (HKDF-SHA256, RFC 5869, via ``cryptography``).

The secret is ``CRATER_SECRET_KEY`` when set; otherwise 32 random bytes kept in ``<data_dir>/secret_key`` (mode
0600), created by the first process that needs it (``O_EXCL``: concurrent workers of one machine agree on one
file). Several replicas on several machines must share ``CRATER_SECRET_KEY``.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

SECRET_FILE = "secret_key"
_SECRET_BYTES = 32


def _file_secret(data_dir: Path) -> bytes:
    """The secret kept in ``data_dir/secret_key`` (hex text), created with 32 random bytes when missing."""
    path = Path(data_dir) / SECRET_FILE
    for _ in range(50):
        try:
            text = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            text = ""
        if len(text) >= 2 * _SECRET_BYTES:
            return bytes.fromhex(text)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another worker is writing it: read it again
            time.sleep(0.02)
            continue
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(_SECRET_BYTES) + "\n")
    raise RuntimeError(f"{path} exists but holds no key of {2 * _SECRET_BYTES} hex digits; delete it or set "
                       "CRATER_SECRET_KEY")


def derive_key(secret_key: str, data_dir: Path, purpose: str, length: int = 32) -> bytes:
    """A ``length``-byte key for ``purpose`` (e.g. ``"oidc-pending-login"``), derived from the deployment secret.

    Args:
        secret_key: ``settings.secret_key``; empty means the file secret in ``data_dir``.
        purpose: HKDF ``info``; different purposes give independent keys.

    Raises:
        RuntimeError: the key file exists but is malformed.
    """
    raw = secret_key.encode("utf-8") if secret_key else _file_secret(data_dir)
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=b"crater", info=purpose.encode()).derive(raw)
