"""Approval requests and notifications as the API shows them."""

from __future__ import annotations

from datetime import datetime

from crater_app.schemas.base import Public


class ApprovalPublic(Public):
    """An approval request. ``kind``: ``quota``/``extend_runtime``/``reclaim_lock``/``large_job``; ``status``:
    ``pending``/``approved``/``rejected``/``closed``; ``project`` the project's name; ``job_id``/``job_name``
    the target job (job kinds); ``payload`` what is asked (``{"max_runtime": seconds}``, quota resource lists);
    ``current`` the value in force when the request was read (``{"max_runtime": seconds|None}``, the project's
    quota sections), for comparison; ``auto`` granted by the auto-approval rule; ``decided_by`` a user name
    (``None`` while pending, when automatic or closed by the system); times UTC. ``can_decide``: whether the
    caller may approve or reject it now. ``decision_note`` is the decider's note, or the English text of a note
    Crater wrote itself, which is also given as ``decision_code`` (``decision.<code>`` in the catalogues) and
    ``decision_args`` (``""`` and ``{}`` for a decider's own note). ``reason`` is the requester's own words, or the
    English text of a request Crater wrote itself (a job above the accelerator threshold), which is also given as
    ``reason_code`` (``request.<code>``: ``approval.large_job`` with ``job``, ``accelerators`` and ``threshold``)
    and ``reason_args``."""

    id: int
    kind: str
    status: str
    requester: str
    project: str | None
    job_id: int | None
    job_name: str | None
    payload: dict
    current: dict
    reason: str
    auto: bool
    decided_by: str | None
    decision_note: str
    created_at: datetime
    decided_at: datetime | None
    can_decide: bool = False
    decision_code: str = ""
    decision_args: dict = {}
    reason_code: str = ""
    reason_args: dict = {}


class ApprovalPage(Public):
    """One page of approval requests, newest first, and the ``total`` matching the filters."""

    items: list[ApprovalPublic]
    total: int
    page: int
    page_size: int


class NotificationPublic(Public):
    """A console notification for the caller: ``kind`` (``approval.approved``, ``approval.rejected``,
    ``approval.closed``, ...), ``args`` for the translated text, ``message`` in English, ``read`` once seen;
    ``at`` UTC."""

    id: int
    at: datetime
    kind: str
    args: dict
    message: str
    read: bool


class NotificationList(Public):
    """The caller's notifications, unread first then newest first, and the ``unread`` count."""

    items: list[NotificationPublic]
    unread: int


# --- Usage and billing -----------------------------------------------------------------------------------------
