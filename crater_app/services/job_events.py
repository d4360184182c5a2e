"""Job events as rows: a phase, a CamelCase ``reason`` and the message as a catalogue code with its arguments.

Every writer of ``job_events`` builds its row here, so that each event reads in the viewer's language
(``event.<code>`` in ``i18n/``) and keeps its English sentence in ``message`` (CSV, logs, rows of old versions).
"""

from __future__ import annotations

from datetime import datetime

from crater_app import i18n
from crater_app.db.models import JobEvent
from crater_app.domain.times import utcnow
from crater_app.services.job_reasons import reason_text

#: an event code with this prefix is a job's reason (``Held``: ``hold.<reason code>``), rendered as the job's
#: reason is (``services.job_reasons``)
REASON_PREFIX = "hold."

EVENTS = JobEvent.__table__


def event_text(lang: object, code: str, args: dict | None, message: str = "") -> str:
    """An event's message in ``lang``: ``event.<code>`` filled from ``args`` (a ``hold.<code>`` code: the job's
    reason of that code, see :data:`REASON_PREFIX`); ``message`` as stored when the event has no code (a backend's
    own text, kept verbatim) or the arguments do not fit."""
    if not code:
        return message
    if code.startswith(REASON_PREFIX):
        return reason_text(lang, code[len(REASON_PREFIX):], args or {}, message or code, refresh=False)
    return i18n.render(lang, f"event.{code}", args or {}, fallback=message or code)


def event_row(job_id: int, phase: str, reason: str, code: str = "", args: dict | None = None,
              at: datetime | None = None, message: str = "") -> dict:
    """The ``job_events`` row for one event (for ``session.execute(EVENTS.insert(), rows)``).

    Args:
        phase: the job's phase after the event. reason: CamelCase word (``Started``, ``OOMKilled``).
        code, args: the message (``event.<code>``); ``message`` defaults to its English rendering.
        at: UTC instant (default: now).
    """
    args = dict(args or {})
    if code and not message:
        message = event_text(i18n.DEFAULT_LANGUAGE, code, args)
    return {"job_id": job_id, "at": at or utcnow(), "phase": phase, "reason": reason, "message": message,
            "code": code, "args": args}
