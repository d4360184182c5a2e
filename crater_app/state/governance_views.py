"""Pure conversions for the projects, API-token and operation-log pages (no Reflex, no I/O).

Service schemas become plain string dicts (console state is pickled and sent to browsers). Times are shown in
UTC as ``YYYY-MM-DD HH:MM:SS`` (:func:`crater_app.state.views.fmt_time`); ``""`` means "none" and the page shows
an em dash or a translated word for it.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from crater_app.schemas import OperationLogPublic, PersonalTokenPublic, ProjectMemberPublic, ProjectPublic
from crater_app.services import oplog
from crater_app.state.views import fmt_time, json_dict

#: a project whose expiry is this close (seconds) is marked "expires soon"
EXPIRY_SOON_S = 7 * 86400
#: what :func:`expiry_state` returns
EXPIRY_STATES = ("never", "active", "soon", "expired")
#: what :func:`token_status` returns
TOKEN_STATUSES = ("active", "expired", "revoked")


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _now(now: datetime | None) -> datetime:
    return _utc(now) if now is not None else datetime.now(timezone.utc)


def expiry_state(expires_at: datetime | None, now: datetime | None = None) -> str:
    """``never`` (no expiry), ``expired`` (at or before ``now``), ``soon`` (within 7 days) or ``active``.

    ``now`` defaults to the current UTC time; naive datetimes are taken as UTC. The "expired" rule is the
    service's (:func:`crater_app.services.projects.project_expired`: ``expires_at <= now``).
    """
    if expires_at is None:
        return "never"
    left = (_utc(expires_at) - _now(now)).total_seconds()
    if left <= 0:
        return "expired"
    return "soon" if left <= EXPIRY_SOON_S else "active"


def days_left(expires_at: datetime | None, now: datetime | None = None) -> str:
    """Whole days until ``expires_at`` rounded up (``"1"`` for anything under a day), ``""`` when there is no
    expiry or it has passed."""
    if expires_at is None:
        return ""
    left = (_utc(expires_at) - _now(now)).total_seconds()
    return "" if left <= 0 else str(-(-int(left) // 86400))


def project_row(project: ProjectPublic, now: datetime | None = None) -> dict[str, str]:
    """A projects-table row: ``name``, ``display_name``, ``description``, ``created``, ``expires`` (``""`` for
    never), ``expiry`` (see :func:`expiry_state`), ``days_left``, ``role`` (the caller's project role, ``""``
    when not a member) and ``members`` (the count)."""
    return {
        "name": project.name, "display_name": project.display_name, "description": project.description,
        "created": fmt_time(project.created_at), "expires": fmt_time(project.expires_at),
        "expiry": "expired" if project.expired else expiry_state(project.expires_at, now),
        "days_left": days_left(project.expires_at, now), "role": project.role or "",
        "members": str(project.member_count),
    }


def member_row(member: ProjectMemberPublic) -> dict[str, str]:
    """A members-table row: ``username``, ``display_name``, ``role`` and ``default`` (``"1"`` when the project is
    the member's default project, else ``""``)."""
    return {"username": member.username, "display_name": member.display_name, "role": member.role,
            "default": "1" if member.default else ""}


def token_status(token: PersonalTokenPublic, now: datetime | None = None) -> str:
    """``revoked`` (revoked at any time, even after it expired), ``expired`` (``expires_at`` at or before
    ``now``) or ``active`` - the rule :mod:`crater_app.services.tokens` applies when counting active tokens."""
    if token.revoked:
        return "revoked"
    if token.expires_at is not None and _utc(token.expires_at) <= _now(now):
        return "expired"
    return "active"


def token_row(token: PersonalTokenPublic, now: datetime | None = None) -> dict[str, str]:
    """A tokens-table row: ``id``, ``name``, ``created``, ``expires``, ``last_used`` (``""`` for never),
    ``revoked`` (the time) and ``status`` (see :func:`token_status`)."""
    return {
        "id": str(token.id), "name": token.name, "created": fmt_time(token.created_at),
        "expires": fmt_time(token.expires_at), "last_used": fmt_time(token.last_used_at),
        "revoked": fmt_time(token.revoked_at), "status": token_status(token, now),
    }


def oplog_row(entry: OperationLogPublic) -> dict[str, str]:
    """An operation-log row: ``id``, ``at``, ``actor``, ``actor_role``, ``action``, ``target``, ``result``,
    ``details`` (English, as stored), ``code`` and ``args`` (JSON) of the details (all strings; see
    :func:`oplog_texts`)."""
    return {
        "id": str(entry.id), "at": fmt_time(entry.at), "actor": entry.actor, "actor_role": entry.actor_role,
        "action": entry.action, "target": entry.target, "result": entry.result, "details": entry.details,
        "code": entry.code, "args": json.dumps(entry.args, sort_keys=True),
    }


def oplog_texts(lang: object, row: dict[str, str]) -> dict[str, str]:
    """An :func:`oplog_row` with its ``details`` in ``lang`` (``oplog.details_text``: from the code; a row
    without one keeps the text it was written with)."""
    return {**row, "details": oplog.details_text(lang, row.get("code", ""), json_dict(row.get("args")),
                                                 row.get("details", ""))}
