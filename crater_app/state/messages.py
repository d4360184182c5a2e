"""What the services said, in the console's language (pure: no Reflex, no I/O).

Every service message is a code with arguments (``crater_app.i18n``): the console renders each from the same
catalogue as the API, through the service's own reader. A row written before codes existed has no code and shows
its stored English text as written; so does a backend's own text (an unknown state, an error it reported).

- event reason words (``Completed``, ``CancelRequested``): ``reason.<Word>``, the word itself when unknown;
- event messages: :func:`crater_app.services.job_events.event_text` (``event.<code>``);
- a job's reason (why it waits, why it ended): ``services.admission.reason_text`` (``hold.<code>``).
"""

from __future__ import annotations

from crater_app import i18n
from crater_app.services import admission
from crater_app.services.job_events import event_text
from crater_app.state import views

#: catalogue keys of event reason words are ``reason.<Word>``
REASON_PREFIX = "reason."
#: catalogue keys of job reasons are ``hold.<code>``
HOLD_PREFIX = "hold."


def reason_text(lang: object, reason: str) -> str:
    """The event reason word ``reason`` in ``lang`` (``reason.<Word>``), or ``reason`` itself when unknown."""
    if not reason:
        return reason
    return i18n.lookup(lang, REASON_PREFIX + reason) or reason


def job_reason_text(lang: object, row: dict[str, str]) -> str:
    """A job's status sentence in ``lang`` from a console row (``views.job_row``/``views.job_detail``): its
    ``reason_code``/``reason_args`` rendered by ``services.admission.reason_text`` (the API's reader too), else
    from ``hold.<code>`` for a code that reader does not know yet; the stored ``reason`` when there is no code."""
    reason, code = row.get("reason", ""), row.get("reason_code", "")
    if not code:
        return reason
    args = views.reason_args(row)
    text = admission.reason_text(lang, code, args, reason)
    if text == reason and i18n.normalize(lang) != i18n.DEFAULT_LANGUAGE:
        return i18n.render(lang, HOLD_PREFIX + code, args, fallback=reason)
    return text


def event_rows(lang: object, events: list[dict[str, str]]) -> list[dict[str, str]]:
    """Timeline rows (``views.event_row``) with ``reason_text`` and ``message_text`` in ``lang`` (``reason`` and
    ``message`` stay as the API gives them)."""
    return [{**e, "reason_text": reason_text(lang, e.get("reason", "")),
             "message_text": event_text(lang, e.get("code", ""), views.event_args(e), e.get("message", ""))}
            for e in events]
