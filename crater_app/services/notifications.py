"""Console notifications: messages for one user (an approval decided, a request closed, ...), listed unread
first, marked read one by one or all at once. Other services add them with :func:`add_rows` inside their own
transaction, so a notification exists exactly when the change it reports was committed.
"""

from __future__ import annotations

from sqlalchemy import func, update
from sqlmodel import Session, select

from crater_app import i18n
from crater_app.db.models import Notification
from crater_app.schemas import NotificationList, NotificationPublic
from crater_app.db.types import utcnow
from crater_app.domain.errors import Forbidden, InvalidInput
from crater_app.domain.policy import Actor, can_read_notifications
from crater_app.services import oplog
from crater_app.services.context import ServiceContext

MAX_LIST = 200
MAX_IDS = 500
#: catalogue keys of notifications are ``notify.<kind>``
KEY_PREFIX = "notify."


def row(user_id: int, kind: str, args: dict) -> dict:
    """A ``notifications`` row for ``user_id``, unread, dated now.

    Args:
        kind: the message's code, dotted words (``approval.approved``): its sentence is ``notify.<kind>`` in the
            catalogues, rendered in the reader's language by :func:`text`.
        args: the sentence's arguments (JSON values; a nested message as :func:`crater_app.i18n.part`). The row's
            ``message`` is the English rendering (cut to 2,000 characters).
    """
    message = text(i18n.DEFAULT_LANGUAGE, kind, args)
    return {"user_id": user_id, "at": utcnow(), "kind": kind, "args": args, "message": message[:2000],
            "read_at": None}


def text(lang: object, kind: str, args: dict | None, message: str = "") -> str:
    """A notification in ``lang``: ``notify.<kind>`` filled from ``args``, or ``message`` as stored when the
    arguments do not fit the template (rows of older versions, whose arguments held English sentences)."""
    return i18n.render(lang, f"{KEY_PREFIX}{kind}", args or {}, fallback=message or kind)


def add_rows(session: Session, rows: list[dict]) -> None:
    """Insert notification ``rows`` (see :func:`row`) in ``session``'s transaction (committed with the change
    they report), in one statement."""
    if rows:
        session.connection().execute(Notification.__table__.insert(), rows)


def _public(n: Notification) -> NotificationPublic:
    return NotificationPublic(id=n.id, at=n.at, kind=n.kind, args=n.args, message=n.message, read=n.read_at is not None)


def localized(found: NotificationList, lang: object) -> NotificationList:
    """``found`` with each ``message`` in ``lang`` (:func:`text`; English is as stored)."""
    if i18n.normalize(lang) == i18n.DEFAULT_LANGUAGE:
        return found
    items = [n.model_copy(update={"message": text(lang, n.kind, n.args, n.message)}) for n in found.items]
    return found.model_copy(update={"items": items})


def _allowed(actor: Actor) -> None:
    if not can_read_notifications(actor):
        raise Forbidden("notification.forbidden")


def list_notifications(ctx: ServiceContext, actor: Actor, limit: int = 50, unread_only: bool = False) -> NotificationList:
    """The caller's notifications: unread ones first, newest first within each group, at most ``limit``
    (1..200), and the number of unread ones.

    Raises:
        InvalidInput: ``notification.limit`` (``limit`` out of range). Forbidden: ``notification.forbidden`` (not a
        signed-in user).
    """
    _allowed(actor)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST:
        raise InvalidInput("notification.limit", "limit", min=1, max=MAX_LIST)
    unread_first = (Notification.read_at.is_(None)).desc()  # type: ignore[union-attr]
    stmt = select(Notification).where(Notification.user_id == actor.user_id)
    if unread_only:
        stmt = stmt.where(Notification.read_at.is_(None))  # type: ignore[union-attr]
    with ctx.session(read_only=True) as s:
        rows = s.exec(stmt.order_by(unread_first, Notification.id.desc()).limit(limit)).all()  # type: ignore[union-attr]
        return NotificationList(items=[_public(n) for n in rows], unread=_unread(s, actor.user_id))


def _unread(s: Session, user_id: int) -> int:
    return s.exec(select(func.count()).select_from(Notification).where(
        Notification.user_id == user_id, Notification.read_at.is_(None))).one()  # type: ignore[union-attr]


def unread_count(ctx: ServiceContext, actor: Actor) -> int:
    """How many of the caller's notifications are unread (the bell's badge)."""
    _allowed(actor)
    with ctx.session(read_only=True) as s:
        return _unread(s, actor.user_id)


def mark_read(ctx: ServiceContext, actor: Actor, ids: object = None) -> int:
    """Mark the caller's notifications ``ids`` read (``None``: all of them). Ids of other users' notifications
    or unknown ids are ignored (they are not the caller's to change). Writes an operation-log row when something
    changed.

    Args:
        ids: ``None`` or a list of at most 500 notification ids (integers).

    Returns:
        How many notifications were marked read now.

    Raises:
        InvalidInput: (field ``ids``) ``notification.ids`` (not a list of integers) or ``notification.ids_too_many``.
        Forbidden: ``notification.forbidden`` (not a signed-in user).
    """
    _allowed(actor)
    if ids is not None:
        if not isinstance(ids, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
            raise InvalidInput("notification.ids", "ids")
        if len(ids) > MAX_IDS:
            raise InvalidInput("notification.ids_too_many", "ids", count=len(ids), max=MAX_IDS)
        if not ids:
            return 0
    stmt = update(Notification).where(Notification.user_id == actor.user_id,
                                      Notification.read_at.is_(None))  # type: ignore[union-attr]
    if ids is not None:
        stmt = stmt.where(Notification.id.in_([i for i in ids if 0 < i < 2**63]))  # type: ignore[union-attr]
    with ctx.session() as s:
        changed = s.execute(stmt.values(read_at=utcnow())).rowcount or 0
        if changed and ids is None:
            oplog.record(s, actor, "notification:read", actor.username, code="notification.read_all",
                         args={"count": changed})
        elif changed:
            oplog.record(s, actor, "notification:read", actor.username, code="notification.read",
                         args={"count": changed})
    return changed
