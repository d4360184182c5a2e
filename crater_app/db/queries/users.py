"""Reading users by name: every lookup compares the NFKC case-folded key (``users.username_key``), so ``Alice``,
``alice`` and a full-width ``ａｌｉｃｅ`` find one account."""

from __future__ import annotations

from sqlmodel import Session, select

from crater_app.db.models import User
from crater_app.domain.naming import username_key, username_skeleton


def user_by_name(s: Session, name: str, lock: bool = False) -> User | None:
    """The user whose name has the key of ``name`` (see :func:`crater_app.domain.naming.username_key`), or
    ``None``. ``lock``: ``SELECT ... FOR UPDATE`` (PostgreSQL; SQLite writes one transaction at a time)."""
    stmt = select(User).where(User.username_key == username_key(name))
    if lock:
        stmt = stmt.with_for_update()
    return s.exec(stmt).first()


def name_taken(s: Session, name: str) -> bool:
    """Whether an account already has the key of ``name``, or a name it cannot be told from (see
    :func:`confusable_with`)."""
    if s.exec(select(User.id).where(User.username_key == username_key(name))).first() is not None:
        return True
    return confusable_with(s, name) is not None


def confusable_with(s: Session, name: str) -> str | None:
    """The name of an account that looks like ``name`` without being it: the same skeleton
    (:func:`crater_app.domain.naming.username_skeleton`, ``alice`` and ``аlice`` with a Cyrillic а) but another key;
    ``None`` when there is none."""
    return s.exec(select(User.username).where(User.username_skeleton == username_skeleton(name),
                                              User.username_key != username_key(name))).first()
