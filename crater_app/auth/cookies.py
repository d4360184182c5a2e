"""Reading the console's session cookie from a ``Cookie`` request header (RFC 6265), and the rule for its name."""

from __future__ import annotations

import re

#: RFC 6265 §4.1.1: a cookie-name is an RFC 2616 token (visible ASCII except separators)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: the longest cookie value read (a session secret is 47 characters); longer values are ignored, not parsed
MAX_VALUE_CHARS = 256


def is_cookie_name(name: object) -> bool:
    """Whether ``name`` can name a cookie (an RFC 6265 token of at most 64 characters)."""
    return isinstance(name, str) and 0 < len(name) <= 64 and _TOKEN.fullmatch(name) is not None


def cookie_value(header: str | None, name: str) -> str | None:
    """The value of cookie ``name`` in the ``Cookie`` header ``header`` (``a=1; b=2``), else ``None``.

    RFC 6265 §5.4: the browser sends ``name=value`` pairs separated by ``; ``; when a name repeats (cookies of
    different paths), the first one, which has the longest path, wins. Double quotes around a value are removed
    (§4.1.1 allows them); an empty value, or one longer than 256 characters, counts as absent.
    """
    if not header or not name:
        return None
    for part in header.split(";"):
        key, sep, value = part.strip().partition("=")
        if not sep or key.strip() != name:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        return value if 0 < len(value) <= MAX_VALUE_CHARS else None
    return None
