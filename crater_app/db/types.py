"""Column types shared by the tables."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy.types import DateTime, TypeDecorator

from crater_app.domain.times import utcnow  # noqa: F401 - the tables' default timestamps


class UTCDateTime(TypeDecorator):
    """A timezone-aware UTC timestamp on every database.

    SQLite stores naive values; this type converts to UTC on the way in and attaches UTC on the way out,
    so Python code only ever sees aware datetimes. Raises ``ValueError`` for a naive input.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect):
        """Aware datetime -> UTC (naive UTC on SQLite). Raises ``ValueError`` for a naive value."""
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given; Crater stores UTC-aware timestamps only")
        value = value.astimezone(timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect):
        """Stored value -> aware UTC datetime."""
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)

