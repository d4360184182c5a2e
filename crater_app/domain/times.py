"""Crater's clock (:func:`utcnow`) and instants given by clients: ISO 8601 with an explicit offset (``Z`` or
``+hh:mm``), normalised to UTC."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

from crater_app.domain.errors import InvalidInput

MAX_ISO_CHARS = 64
#: where :func:`utcnow` reads the time; ``None`` is the system clock. Tests that reason about calendar time
#: (months, days) set it through :func:`set_clock` so that they do not depend on today's date.
_clock: Callable[[], datetime] | None = None


def utcnow() -> datetime:
    """The current time, timezone-aware UTC (every timestamp Crater stores comes from here)."""
    return _clock() if _clock is not None else datetime.now(timezone.utc)


def set_clock(clock: Callable[[], datetime] | None) -> None:
    """Read the time from ``clock`` (an aware datetime each call), or the system clock again with ``None``."""
    global _clock
    _clock = clock


def parse_utc(raw: object, field: str) -> datetime:
    """``raw`` (an ISO 8601 string such as ``2026-12-31T23:59:59Z``) as a timezone-aware UTC datetime.

    Raises:
        InvalidInput: naming ``field`` (also as the argument ``field_name``): ``time.required`` (not a string of
            1..64 characters; ``max``), ``time.format`` (not ISO 8601), ``time.no_offset`` (a naive time is
            ambiguous; Crater stores UTC only) or ``time.out_of_range`` (outside years 0001..9999 in UTC); ``value``
            the text given.
    """
    if not isinstance(raw, str) or not raw.strip() or len(raw) > MAX_ISO_CHARS:
        raise InvalidInput("time.required", field, field_name=field, max=MAX_ISO_CHARS)
    text = raw.strip()
    try:
        value = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text)
    except ValueError:
        raise InvalidInput("time.format", field, field_name=field, value=text[:MAX_ISO_CHARS]) from None
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput("time.no_offset", field, field_name=field, value=text)
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:  # e.g. 9999-12-31T23:59:59-12:00 is past year 9999 in UTC
        raise InvalidInput("time.out_of_range", field, field_name=field, value=text) from None
