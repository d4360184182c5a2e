"""A job's reason and the admission loop's events as codes + arguments, rendered in the reader's language.

A job row says why it is where it is with ``reason_code``/``reason_args`` beside the English ``reason``: a hold of
Crater's admission (``quota``, ``queue``, ``approval``, ``preempted``, ...: ``hold.<code>`` in ``i18n/admission``)
or a status code of the backend or of Crater's own steps (``placement.waiting``, ``placement.queued``,
``job.stopping_cancelled``, ...: ``event.<code>`` in ``i18n/queue`` and the backends' areas). :func:`reason_text`
renders either in any language; an estimate (``expected_at``) is written relative to the time of reading
("expected start within 14m"), so that a stored reason does not go stale.
"""

from __future__ import annotations

from datetime import datetime

from crater_app import i18n
from crater_app.domain import backfill
from crater_app.domain.admission import Hold, render
from crater_app.domain.times import utcnow

APPROVAL = "approval"
PREEMPTED = "preempted"
#: the hold codes of Crater's admission (``hold.<code>``); any other reason code is an ``event.<code>``
HOLD_CODES = ("quota", "share", "sessions", "capacity", "fairshare", "queue", "reclaim", APPROVAL, PREEMPTED,
              "preempted_final", "preempted_exhausted", "requeued")
#: the hold codes with a sentence in both languages (all of them)
TRANSLATED_CODES = HOLD_CODES
#: a job admitted by Crater, not yet placed by the backend
PENDING = ("placement.pending", {})


def fresh(args: dict | None, now: datetime | None = None) -> dict:
    """``args`` with ``wait`` (seconds until ``expected_at``, whole minutes, at least one) computed at ``now``
    (default: the clock), so that "expected start within ..." is true when it is read."""
    values = dict(args or {})
    expected = values.get("expected_at")
    if isinstance(expected, str) and expected:
        try:
            at = datetime.fromisoformat(expected)
        except ValueError:
            return values
        values["wait"] = backfill.wait_s(at, now or utcnow())
    return values


def reason_text(lang: object, reason_code: str, reason_args: dict | None, reason: str,
                now: datetime | None = None, refresh: bool = True) -> str:
    """A job's reason in ``lang`` from its code and arguments: ``hold.<code>`` (admission's holds, with the
    blocking hold's code in words and the estimate sentence) or ``event.<code>`` (backend and Crater statuses);
    ``reason`` as stored when the job has no code, the code has no template or the arguments do not fit it (rows
    written before codes existed, a backend's own text). ``refresh``: the estimate is counted from ``now``
    (default: the clock); ``False`` keeps the arguments' own ``wait`` (an event, as it was written)."""
    if not reason_code:
        return reason
    args = reason_args if isinstance(reason_args, dict) else {}
    args = fresh(args, now) if refresh else dict(args)
    text = render(lang, reason_code, args)
    if text is not None:
        return text
    if i18n.lookup(lang, f"event.{reason_code}") is None:
        return reason
    return i18n.render(lang, f"event.{reason_code}", args, fallback=reason)


def english(reason_code: str, reason_args: dict | None, now: datetime | None = None) -> str:
    """The reason in English (the ``reason`` column), or the code itself when it has no template."""
    return reason_text(i18n.DEFAULT_LANGUAGE, reason_code, reason_args, reason_code, now)


def plain(args: dict) -> dict:
    """Hold arguments as JSON values (str/int/float/bool/None, lists and dicts of them; anything else as text)."""
    out = {}
    for key, value in args.items():
        if isinstance(value, dict):
            value = plain(value)
        elif isinstance(value, (list, tuple)):
            value = [v if isinstance(v, (str, int, float, bool)) or v is None else str(v) for v in value]
        elif not (isinstance(value, (str, int, float, bool)) or value is None):
            value = str(value)
        out[str(key)] = value
    return out


def stored_args(args: dict) -> dict:
    """A hold's arguments as ``reason_args`` keeps them: JSON values, without ``wait`` (derived from
    ``expected_at`` whenever the reason is read, see ``job_reasons.fresh``)."""
    out = plain(args)
    out.pop("wait", None)
    return out


def approval_hold(devices: int, threshold: int, args: dict | None = None) -> Hold:
    """The hold of a job above the approval threshold (``reason_code`` ``approval``; ``args`` from the plan's hold,
    e.g. ``project``/``position``/``held``, plus ``requested`` and ``threshold``)."""
    return Hold(APPROVAL, {**(args or {}), "requested": devices, "threshold": threshold})


def preempted_args(preemption_args: dict, beneficiary_id: int, beneficiary: str, beneficiary_project: str,
                   attempt: int) -> dict:
    """The ``reason_args`` of a job being stopped by a preemption (code :data:`PREEMPTED`): the preemption's
    numbers, the job it makes room for and the attempt it was on."""
    return {**preemption_args, "beneficiary_id": beneficiary_id, "beneficiary": beneficiary,
            "beneficiary_project": beneficiary_project, "attempt": attempt}


def after_preemption(args: dict, attempt: int, requeue: bool, max_attempts: int) -> tuple[str, dict]:
    """``(reason_code, reason_args)`` of a preempted job once its processes have stopped: ``requeued`` (back in
    Crater's queue for ``attempt + 1``) when ``requeue`` and attempts are left, else ``preempted_final``
    (``requeue_on_preemption`` is off) or ``preempted_exhausted`` (``max_attempts`` used)."""
    job_id, name, project = args.get("beneficiary_id"), args.get("beneficiary"), args.get("beneficiary_project")
    if not requeue:
        return "preempted_final", {"beneficiary_id": job_id, "beneficiary": name, "beneficiary_project": project,
                                   "attempt": attempt}
    if attempt >= max_attempts:
        return "preempted_exhausted", {"beneficiary_id": job_id, "beneficiary": name,
                                       "beneficiary_project": project, "attempt": attempt,
                                       "max_attempts": max_attempts}
    return "requeued", {"beneficiary_id": job_id, "beneficiary": name, "beneficiary_project": project,
                        "previous": attempt, "attempt": attempt + 1, "max_attempts": max_attempts}


def preempted_message(args: dict) -> str:
    """The message of a victim's ``Preempted`` event (``event.job.preempted_for``)."""
    return i18n.render(i18n.DEFAULT_LANGUAGE, "event.job.preempted_for", args, fallback="preempted")
