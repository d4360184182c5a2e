"""Reading users by name: every lookup compares the NFKC case-folded key (``users.username_key``), so ``Alice``,
``alice`` and a full-width ``ａｌｉｃｅ`` find one account."""

from __future__ import annotations

from sqlmodel import Session, select

from crater_app.db.models import User
from crater_app.domain.naming import username_key


def user_by_name(s: Session, name: str, lock: bool = False) -> User | None:
    """The user whose name has the key of ``name`` (see :func:`crater_app.domain.naming.username_key`), or
    ``None``. ``lock``: ``SELECT ... FOR UPDATE`` (PostgreSQL; SQLite writes one transaction at a time)."""
    stmt = select(User).where(User.username_key == username_key(name))
    if lock:
        stmt = stmt.with_for_update()
    return s.exec(stmt).first()


def name_taken(s: Session, name: str) -> bool:
    """Whether an account already has the key of ``name``."""
    return s.exec(select(User.id).where(User.username_key == username_key(name))).first() is not None
