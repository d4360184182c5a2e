"""Operation log: one row per state-changing action (who, role, action, target, result, details)."""

from __future__ import annotations

from sqlmodel import Session

from crater_app.db.models import OperationLog
from crater_app.db.types import utcnow
from crater_app.domain.policy import Actor


def record(session: Session, actor: Actor | None, action: str, target: str, result: str = "ok", details: str = "") -> None:
    """Add an operation-log row to ``session`` (committed with the action's own transaction).

    ``actor`` ``None`` means the system itself (bootstrap, reconciler). ``details`` is cut to 2,000 chars.
    """
    # A Core INSERT in the session's transaction: the same row as ``session.add(OperationLog(...))`` without
    # building an ORM object (this runs inside write transactions, which should stay short).
    session.execute(OperationLog.__table__.insert(), row(actor, action, target, result, details))


def row(actor: Actor | None, action: str, target: str, result: str = "ok", details: str = "") -> dict:
    """The ``operation_logs`` row :func:`record` writes (for callers inserting several at once)."""
    return {
        "at": utcnow(), "actor": actor.username if actor else "system",
        "actor_role": actor.role if actor else "system", "action": action, "target": target[:255],
        "result": result, "details": details[:2000],
    }
