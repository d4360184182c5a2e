"""Operation log: one row per state-changing action (who, role, action, target, result, details)."""

from __future__ import annotations

import csv
import io
import unicodedata

from sqlalchemy import func, or_
from sqlmodel import Session, select

from crater_app import i18n

from crater_app.db.models import OperationLog, User
from crater_app.schemas import OperationLogPage, OperationLogPublic
from crater_app.db.types import utcnow
from crater_app.domain.errors import Forbidden, InvalidInput
from crater_app.domain.naming import MAX_USERNAME_CHARS, is_text, username_key
from crater_app.domain.paging import check_page
from crater_app.domain.policy import Actor, can_read_operation_log
from crater_app.domain.times import parse_utc
from crater_app.services.context import ServiceContext

MAX_PAGE_SIZE = 500
MAX_CSV_ROWS = 100_000
CSV_COLUMNS = ("id", "at", "actor", "actor_role", "action", "target", "result", "details")
#: the longest text each filter takes: a user name, an action name, a target
FILTER_LIMITS = {"actor": MAX_USERNAME_CHARS, "action": 64, "target": 255}


def record(session: Session, actor: Actor | None, action: str, target: str, result: str = "ok", details: str = "",
           code: str = "", args: dict | None = None) -> None:
    """Add an operation-log row to ``session`` (committed with the action's own transaction).

    ``actor`` ``None`` means the system itself (bootstrap, reconciler). ``code``/``args``: the details as a
    catalogue code (``oplog.<code>``) and its arguments (JSON values in Crater's units), read in the viewer's
    language; ``details`` (English, cut to 2,000 chars) is rendered from them. A row without a code has no details
    (``details`` given without a code is kept as written: rows of older versions).
    """
    # A Core INSERT in the session's transaction: the same row as ``session.add(OperationLog(...))`` without
    # building an ORM object (this runs inside write transactions, which should stay short).
    session.execute(OperationLog.__table__.insert(), row(actor, action, target, result, details, code, args))


def value(v: object) -> str:
    """A value as operation-log ``details`` write it (never a Python repr): ``None`` and an empty dict/list ->
    ``none``; a bool -> ``true``/``false``; a dict -> ``key=value`` pairs sorted by key and joined by ``,`` (a
    nested value written the same way); a list/tuple -> its items joined by ``,``; anything else -> ``str()``.
    E.g. ``{"nvidia.com/gpu": "2", "cpu": "4"}`` -> ``cpu=4,nvidia.com/gpu=2``; ``None`` -> ``none``."""
    if v is None or (isinstance(v, (dict, list, tuple)) and not v):
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return ",".join(f"{k}={value(v[k])}" for k in sorted(v, key=str))
    if isinstance(v, (list, tuple)):
        return ",".join(value(item) for item in v)
    return str(v)


def details_text(lang: object, code: str, args: dict | None, details: str = "") -> str:
    """An operation-log row's details in ``lang``: ``oplog.<code>`` filled from ``args``, or ``details`` as written
    (rows without a code: written before codes existed, or free text)."""
    if not code:
        return details
    return i18n.render(lang, f"oplog.{code}", args or {}, fallback=details or code)


def row(actor: Actor | None, action: str, target: str, result: str = "ok", details: str = "", code: str = "",
        args: dict | None = None) -> dict:
    """The ``operation_logs`` row :func:`record` writes (for callers inserting several at once)."""
    args = dict(args or {})
    if code and not details:
        details = details_text(i18n.DEFAULT_LANGUAGE, code, args)
    return {
        "at": utcnow(), "actor": actor.username if actor else "system",
        "actor_role": actor.role if actor else "system", "action": action, "target": target[:255],
        "result": result, "details": details[:2000], "code": code, "args": args,
    }


def _filtered(stmt, actor: str | None, action: str | None, target: str | None, since: object, until: object):
    """``stmt`` with the operation-log filters applied (validated; see :func:`list_logs`)."""
    for field, text, limit in (("actor", actor, FILTER_LIMITS["actor"]), ("action", action, FILTER_LIMITS["action"]),
                               ("target", target, FILTER_LIMITS["target"])):
        if text is None:
            continue
        if not isinstance(text, str) or not is_text(text) or any(unicodedata.category(ch) == "Cc" for ch in text):
            raise InvalidInput("oplog.filter_text", field, field_name=field)
        if len(text) > limit:
            raise InvalidInput("oplog.filter_too_long", field, field_name=field, length=len(text), max=limit)
    start = parse_utc(since, "from") if since is not None else None
    end = parse_utc(until, "to") if until is not None else None
    if start is not None and end is not None and start > end:
        raise InvalidInput("oplog.filter_range", "from", start=start.isoformat(), end=end.isoformat())
    if actor:  # the name as written, or the rows of the account whose name has the same key ('Alice' -> 'alice')
        stmt = stmt.where(or_(OperationLog.actor == actor, OperationLog.actor.in_(  # type: ignore[attr-defined]
            select(User.username).where(User.username_key == username_key(actor)))))
    if action:
        stmt = stmt.where(OperationLog.action == action)
    if target:
        pattern = "%" + target.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        stmt = stmt.where(OperationLog.target.like(pattern, escape="\\"))  # type: ignore[attr-defined]
    if start is not None:
        stmt = stmt.where(OperationLog.at >= start)
    if end is not None:
        stmt = stmt.where(OperationLog.at < end)
    return stmt


def _public(r: OperationLog) -> OperationLogPublic:
    return OperationLogPublic(id=r.id, at=r.at, actor=r.actor, actor_role=r.actor_role, action=r.action,
                              target=r.target, result=r.result, details=r.details, code=r.code, args=r.args)


def list_logs(
    ctx: ServiceContext, who: Actor, actor: str | None = None, action: str | None = None, target: str | None = None,
    since: object = None, until: object = None, page: int = 1, page_size: int = 50,
) -> OperationLogPage:
    """Operation-log rows, newest first (platform admins only; rows are never edited or deleted).

    Args:
        who: the caller. actor: exact user name (``system`` for the platform itself). action: exact action such
            as ``project:create``. target: substring of the target. since/until: ISO 8601 times with an offset;
            ``at >= since`` and ``at < until``. page: 1..1,000,000. page_size: 1..500.

    Raises:
        Forbidden: ``oplog.read_forbidden`` (not a platform admin). InvalidInput: ``oplog.filter_text`` (a filter
        that is not text or holds a control character such as NUL), ``oplog.filter_too_long`` (``length``, ``max``), a time without offset or not ISO 8601 (``time.*``), ``oplog.filter_range``
        (``from`` after ``to``), page or page_size out of range (``page.*``); the field named.
    """
    if not can_read_operation_log(who):
        raise Forbidden("oplog.read_forbidden")
    check_page(page, page_size, MAX_PAGE_SIZE)
    rows_stmt = _filtered(select(OperationLog), actor, action, target, since, until)
    count_stmt = _filtered(select(func.count()).select_from(OperationLog), actor, action, target, since, until)
    with ctx.session(read_only=True) as s:
        total = s.exec(count_stmt).one()
        rows = s.exec(rows_stmt.order_by(OperationLog.at.desc(), OperationLog.id.desc())  # type: ignore[attr-defined]
                      .offset((page - 1) * page_size).limit(page_size)).all()
        return OperationLogPage(items=[_public(r) for r in rows], total=total, page=page, page_size=page_size)


def list_actions(ctx: ServiceContext, who: Actor) -> list[str]:
    """The distinct ``action`` names present in the log, sorted (for the console's action filter; platform
    admins only). Reads the ``(action, at)`` index.

    Raises:
        Forbidden: not a platform admin.
    """
    if not can_read_operation_log(who):
        raise Forbidden("oplog.read_forbidden")
    with ctx.session(read_only=True) as s:
        return list(s.exec(select(OperationLog.action).distinct().order_by(OperationLog.action)).all())


def _cell(value: object) -> str:
    """A CSV cell; text that a spreadsheet would run as a formula (``= + - @``, tab, CR) gets a leading ``'``."""
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def export_csv(
    ctx: ServiceContext, who: Actor, actor: str | None = None, action: str | None = None, target: str | None = None,
    since: object = None, until: object = None, lang: object = i18n.DEFAULT_LANGUAGE,
) -> tuple[str, bool]:
    """The matching rows (filters as :func:`list_logs`) as CSV text, newest first, at most 100,000 rows; ``details``
    in ``lang`` (:func:`details_text`).

    Returns:
        ``(csv_text, truncated)``: a header line ``id,at,actor,actor_role,action,target,result,details`` and one
        line per row (times ISO 8601 UTC); ``truncated`` is true when more rows matched than were written.

    Raises:
        Forbidden, InvalidInput: as :func:`list_logs`.
    """
    if not can_read_operation_log(who):
        raise Forbidden("oplog.read_forbidden")
    stmt = _filtered(select(OperationLog), actor, action, target, since, until)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    with ctx.session(read_only=True) as s:
        rows = s.exec(stmt.order_by(OperationLog.at.desc(), OperationLog.id.desc())  # type: ignore[attr-defined]
                      .limit(MAX_CSV_ROWS + 1)).all()
    for r in rows[:MAX_CSV_ROWS]:
        details = details_text(lang, r.code, r.args, r.details)
        writer.writerow([r.id if c == "id" else _cell(details if c == "details" else getattr(r, c))
                         for c in CSV_COLUMNS])
    return out.getvalue(), len(rows) > MAX_CSV_ROWS
