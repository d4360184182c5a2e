"""The operation log as the API shows it."""

from __future__ import annotations

from datetime import datetime

from crater_app.schemas.base import Public


class OperationLogPublic(Public):
    """One operation-log row: ``at`` UTC, ``actor`` (user name or ``system``), ``actor_role``, ``action``
    (``noun:verb``), ``target``, ``result`` (``ok``/``error``), ``details`` (English) and the same as ``code`` +
    ``args`` (``oplog.<code>`` in the catalogues; empty for rows written before codes existed)."""

    id: int
    at: datetime
    actor: str
    actor_role: str
    action: str
    target: str
    result: str
    details: str
    code: str = ""
    args: dict = {}

class OperationLogPage(Public):
    """One page of the operation log, newest first, and the ``total`` matching the filters."""

    items: list[OperationLogPublic]
    total: int
    page: int
    page_size: int
