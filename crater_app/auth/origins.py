"""Where a browser request comes from: the ``Origin`` rule that keeps other sites from acting with the console's
session cookie (cross-site request forgery and cross-site WebSocket hijacking).

Sources: RFC 6454 (the web origin: scheme, host, port; ``null`` for opaque origins), the Fetch standard (browsers
send ``Origin`` on every request whose method is not GET or HEAD, and on every WebSocket handshake, RFC 6455
§4.1), OWASP's CSRF cheat sheet ("verifying origin with standard headers": ``Origin``, else ``Referer``; refuse
when neither is there). Without configured public URLs the rule is gorilla/websocket's default ``CheckOrigin``:
the origin's host (and port) must be the request's own ``Host``.
"""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: object) -> str | None:
    """The serialised origin (RFC 6454 §6.2) of an ``http``/``https`` URL: ``scheme://host[:port]``, lower-case,
    the default port left out (``HTTPS://Crater.Example.com:443/x`` -> ``https://crater.example.com``); ``None``
    for anything else (``null``, another scheme, no host, a bad port)."""
    if not isinstance(url, str) or not url.strip() or len(url) > 2048:
        return None
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc += f":{port}"
    return f"{scheme}://{netloc}"


@lru_cache(maxsize=16)
def parse_public_urls(text: str) -> tuple[str, ...]:
    """The origins of ``CRATER_PUBLIC_URLS`` (URLs separated by commas or spaces), in order, without repeats.

    Cached (the setting is read on every cookie-authenticated request).

    Raises:
        ValueError: an entry that is not an ``http``/``https`` URL with a host (the message names it).
    """
    out: list[str] = []
    for entry in text.replace(",", " ").split():
        origin = origin_of(entry)
        if origin is None:
            raise ValueError(f"{entry!r} is not an http or https URL such as https://crater.example.com")
        if origin not in out:
            out.append(origin)
    return tuple(out)


def request_origin(origin: str | None, referer: str | None) -> str | None:
    """The origin a browser request came from: its ``Origin`` header, else the origin of its ``Referer``; ``None``
    when neither names one (``Origin: null`` counts as none)."""
    return origin_of(origin) or (None if origin else origin_of(referer))


def _host_netloc(host: str, scheme: str) -> str:
    """``host`` (a ``Host`` header) lower-case with the default port of ``scheme`` left out."""
    host = host.strip().lower()
    default = f":{_DEFAULT_PORTS.get(scheme, 0)}"
    return host[: -len(default)] if host.endswith(default) else host


def origin_allowed(origin: str | None, host: str | None, public_origins: tuple[str, ...]) -> bool:
    """Whether a request from ``origin`` (serialised, see :func:`origin_of`) may act with the session cookie.

    With ``public_origins`` (``CRATER_PUBLIC_URLS``): only those origins. Without: the origin's host and port must
    be the request's ``Host`` header (same origin as the browser sees it; the scheme is not compared, so TLS ended
    by a proxy in front of Crater works). ``None`` (no origin at all) is never allowed.
    """
    if origin is None:
        return False
    if public_origins:
        return origin in public_origins
    if not host:
        return False
    scheme, _, netloc = origin.partition("://")
    return netloc == _host_netloc(host, scheme)
