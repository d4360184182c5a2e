"""Pure helpers that turn the projects, token and operation-log forms (and the log's URL query) into service
arguments (no Reflex, no I/O).

They check in the browser's language what a user most often gets wrong, before anything is sent to a service;
the services check everything again. Problems raise :class:`crater_app.state.forms.FormError` with an i18n key,
the form field and format parameters. Dates are calendar days in UTC (``<input type="date">`` gives
``YYYY-MM-DD``).
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone
from urllib.parse import urlencode

from crater_app.domain.errors import InvalidInput
from crater_app.domain.naming import DNS1123_LABEL_MAX, MAX_USERNAME_CHARS, check_dns1123_label, check_username
from crater_app.services import oplog, projects, tokens
from crater_app.state.forms import FormError

#: the operation-log filters, in URL order (``from``/``to`` are days, ``YYYY-MM-DD``)
OPLOG_FILTERS = ("actor", "action", "target", "from", "to")
#: the longest text each operation-log filter takes (the service's limits)
OPLOG_FILTER_LIMITS = {**oplog.FILTER_LIMITS, "from": 10, "to": 10}
#: the most pages a ``?page=`` query may ask for
MAX_PAGE = 1_000_000


def _day(text: str) -> date | None:
    """The day ``text`` (``YYYY-MM-DD``), or ``None`` when it is not one."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def expiry_from_day(text: str, now: datetime | None = None) -> str | None:
    """The project expiry for the day ``text`` (``YYYY-MM-DD``): the end of that day in UTC as ISO 8601
    (``2026-12-31T23:59:59+00:00``), or ``None`` when ``text`` is blank (never expires).

    Raises:
        FormError: ``project.error.expiry_format`` when it is not a date, ``project.error.expiry_past`` when that
        day has already ended (``now`` defaults to the current UTC time); field ``expires_at``.
    """
    text = text.strip()
    if not text:
        return None
    day = _day(text)
    if day is None:
        raise FormError("project.error.expiry_format", "expires_at", value=text[:32])
    end = datetime.combine(day, time(23, 59, 59), tzinfo=timezone.utc)
    if end <= (now or datetime.now(timezone.utc)):
        raise FormError("project.error.expiry_past", "expires_at", day=day.isoformat())
    return end.isoformat()


def project_form(form: dict, now: datetime | None = None) -> dict[str, object]:
    """``{"name", "display_name", "description", "expires_at"}`` for ``services.projects.create_project`` from
    the create-project form's fields (text stripped; ``expires_at`` per :func:`expiry_from_day`).

    Raises:
        FormError: ``project.error.name`` (not a DNS-1123 label of 1..63 characters), ``project.error.too_long``
        (display name over 128 or description over 1,024 characters), or an expiry error.
    """
    name = str(form.get("name", "")).strip()
    try:
        check_dns1123_label(name, "name")
    except InvalidInput:
        raise FormError("project.error.name", "name", limit=DNS1123_LABEL_MAX) from None
    display_name = str(form.get("display_name", "")).strip()
    if len(display_name) > projects.MAX_DISPLAY_NAME_CHARS:
        raise FormError("project.error.too_long", "display_name", limit=projects.MAX_DISPLAY_NAME_CHARS)
    description = str(form.get("description", "")).strip()
    if len(description) > projects.MAX_DESCRIPTION_CHARS:
        raise FormError("project.error.too_long", "description", limit=projects.MAX_DESCRIPTION_CHARS)
    expires_at = expiry_from_day(str(form.get("expires_at", "")), now)
    return {"name": name, "display_name": display_name, "description": description, "expires_at": expires_at}


def member_username(text: str) -> str:
    """The user name typed into the add-member form, stripped.

    Raises:
        FormError: ``member.error.username`` (field ``username``) when it is not a user name
        (:func:`crater_app.domain.naming.check_username`).
    """
    name = text.strip()
    try:
        return check_username(name, "username")
    except InvalidInput:
        raise FormError("member.error.username", "username", limit=MAX_USERNAME_CHARS) from None


def token_form(form: dict) -> tuple[str, int]:
    """``(name, expires_in_days)`` for ``services.tokens.create_token`` from the create-token form.

    Raises:
        FormError: ``token.error.name`` (empty or over 64 characters; field ``name``) or ``token.error.days``
        (not a whole number from 1 to 365; field ``expires_in_days``).
    """
    name = str(form.get("name", "")).strip()
    if not name or len(name) > tokens.MAX_NAME_CHARS:
        raise FormError("token.error.name", "name", limit=tokens.MAX_NAME_CHARS)
    raw = str(form.get("expires_in_days", "")).strip()
    days = int(raw) if raw.isdigit() and len(raw) < 6 else 0
    if not tokens.MIN_EXPIRY_DAYS <= days <= tokens.MAX_EXPIRY_DAYS:
        raise FormError("token.error.days", "expires_in_days", low=tokens.MIN_EXPIRY_DAYS, high=tokens.MAX_EXPIRY_DAYS)
    return name, days


def day_bounds(since_day: str, until_day: str) -> tuple[str | None, str | None]:
    """The service's ``since``/``until`` (ISO 8601, UTC) for the operation-log day filters: from the start of
    ``since_day`` to the end of ``until_day`` (both days included; ``until`` is the next midnight, since the
    service keeps ``at < until``). A blank day leaves that side open (``None``).

    Raises:
        FormError: ``oplog.error.date`` (not a ``YYYY-MM-DD`` day; field ``from`` or ``to``) or
        ``oplog.error.range`` (``from`` after ``to``; field ``from``).
    """
    days: list[date | None] = []
    for text, field in ((since_day.strip(), "from"), (until_day.strip(), "to")):
        day = _day(text) if text else None
        if text and day is None:
            raise FormError("oplog.error.date", field, value=text[:32])
        days.append(day)
    start, end = days
    if start is not None and end is not None and start > end:
        raise FormError("oplog.error.range", "from")
    midnight = time(0, 0, tzinfo=timezone.utc)
    return (
        datetime.combine(start, midnight).isoformat() if start else None,
        datetime.combine(end + timedelta(days=1), midnight).isoformat() if end else None,
    )


def oplog_filters(values: dict) -> dict[str, str]:
    """The operation-log filters (:data:`OPLOG_FILTERS`) from a form or URL query: text stripped and cut to the
    service's limits; missing ones are ``""``."""
    return {key: str(values.get(key, "") or "").strip()[:OPLOG_FILTER_LIMITS[key]] for key in OPLOG_FILTERS}


def oplog_query(params: dict) -> tuple[dict[str, str], int]:
    """``(filters, page)`` from the /admin/operation-logs URL query (``?action=token:create&from=2026-11-01&page=2``);
    the page is a whole number from 1 (anything else is 1)."""
    raw = str(params.get("page", "")).strip()
    page = int(raw) if raw.isdigit() and len(raw) < 8 else 1
    return oplog_filters(params), min(max(page, 1), MAX_PAGE)


def oplog_url(filters: dict[str, str], page: int) -> str:
    """The /admin/operation-logs URL showing ``filters`` and ``page`` (empty filters and page 1 left out)."""
    params = {key: filters[key] for key in OPLOG_FILTERS if filters.get(key)}
    if page > 1:
        params["page"] = str(page)
    return "/admin/operation-logs" + ("?" + urlencode(params) if params else "")


def oplog_arguments(filters: dict[str, str]) -> dict[str, str | None]:
    """Keyword arguments for ``services.oplog.list_logs``/``export_csv`` (``actor``, ``action``, ``target``,
    ``since``, ``until``; ``None`` for an empty filter).

    Raises:
        FormError: as :func:`day_bounds`.
    """
    since, until = day_bounds(filters.get("from", ""), filters.get("to", ""))
    return {"actor": filters.get("actor") or None, "action": filters.get("action") or None,
            "target": filters.get("target") or None, "since": since, "until": until}


def csv_filename(now: datetime | None = None) -> str:
    """``operation-log-YYYYMMDD-HHMMSS.csv`` (UTC) for an export made at ``now``."""
    return f"operation-log-{(now or datetime.now(timezone.utc)).astimezone(timezone.utc):%Y%m%d-%H%M%S}.csv"

