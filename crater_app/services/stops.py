"""Stops Crater asks the backend for - a cancel, a preemption - sent once the job is recorded ``Stopping``, and
sent again while the backend still runs the job.

A stop is first recorded (the job row goes ``Stopping`` with ``stop_requested_at`` and the stop's reason code,
``job.stopping_cancelled`` or ``preempted``), then sent with ``ClusterBackend.cancel`` after the commit. Sending
can fail (the backend is unreachable for a moment, the process dies between the commit and the call); the record
stays, and the leader's :class:`StopSweep` sends the stop again for as long as the backend reports the job's
current run ``Pending`` or ``Running`` (``cancel`` is idempotent). The record is the desired state and the sweep
acts until the backend's state matches it: the level-triggered reconciliation of Kubernetes controllers (a
failed action is retried on the next pass, not only on the next change).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import select as sa_select

from crater_app.db.models import Job
from crater_app.db.types import utcnow
from crater_app.domain.jobs import JobPhase
from crater_app.services import job_reasons
from crater_app.services.context import ServiceContext
from crater_app.services.job_events import EVENTS, event_row

log = logging.getLogger(__name__)

CANCELLED = "job.stopping_cancelled"
#: the reason codes of the stops Crater asks for (a job's ``reason_code`` while it is ``Stopping`` for them)
CRATER_STOPS = (job_reasons.PREEMPTED, CANCELLED)
#: a stop the backend has not acted on this many seconds after it was asked for is sent again
RESEND_AFTER_S = 5.0
#: the wait before each further send of the same stop doubles, up to this many seconds
RESEND_MAX_S = 300.0
#: the sweep looks for stops to send again at most this often (seconds)
SWEEP_EVERY_S = 1.0
#: backend phases in which a job has not acted on a stop yet
_NOT_STOPPING = (JobPhase.QUEUED, JobPhase.RUNNING)
_JOBS = Job.__table__


def stop_message(reason_code: str, reason_args: dict | None) -> tuple[str, str, dict]:
    """``(message, code, args)`` a stop is sent with (the backend keeps it as the status message while the job
    stops): the victim's ``Preempted`` sentence for a preemption (text: the reconciler writes a preempted job's final
    reason itself), ``job.cancelled_by`` with the user for a cancel."""
    args = reason_args if isinstance(reason_args, dict) else {}
    if reason_code == job_reasons.PREEMPTED:
        return job_reasons.preempted_message(args), "", {}
    who = {"user": args.get("user", "")}
    return job_reasons.english("job.cancelled_by", who), "job.cancelled_by", who


def send(ctx: ServiceContext, uid: str, message: str, code: str = "", args: dict | None = None) -> bool:
    """Ask the backend to stop workload ``uid`` (``ClusterBackend.cancel``; ``code``/``args``: the stop's reason as
    a catalogue code, ``message`` its English text). Returns whether it was sent; never raises: a workload the
    backend does not know (``KeyError``) or an error of the backend (logged) leaves the stop to :class:`StopSweep`
    (and to the reconciler's repair, for a workload the backend lacks)."""
    try:
        ctx.backend.cancel(uid, message, code=code, args=args)
    except KeyError:
        log.info("stop of %s: the backend does not know it (yet)", uid)
        return False
    except Exception as exc:  # noqa: BLE001 - any backend failure: the sweep sends the stop again
        log.warning("stop of %s could not be sent, it will be sent again: %s", uid, exc)
        return False
    return True


class StopSweep:
    """The leader's sweep of stops not acted on: each :meth:`run` sends again the stop of every job that has been
    ``Stopping`` for a Crater stop (:data:`CRATER_STOPS`) for at least :data:`RESEND_AFTER_S` seconds while the
    backend reports its current run ``Pending`` or ``Running``; further sends of one stop wait twice as long each
    time, up to :data:`RESEND_MAX_S`. The first send again of a stop adds the event ``StopResent`` (code
    ``job.stop_resent``, ``phase`` the phase the backend's state stands for) to the job's timeline.

    State (per leader process): when each stop was last sent again and how often. Jobs that the backend does not
    know are left to ``Reconciler.repair``."""

    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx
        self._sent: dict[str, tuple[int, datetime]] = {}  # uid -> (sends again, last at)
        self._swept_at: datetime | None = None

    def due(self) -> bool:
        """Whether :data:`SWEEP_EVERY_S` seconds (of Crater's clock) have passed since the last :meth:`run`."""
        return self._swept_at is None or (utcnow() - self._swept_at).total_seconds() >= SWEEP_EVERY_S

    def run(self, at_once: bool = False) -> int:
        """Send again the stops that are due; ``at_once``: every Crater stop the backend has not acted on, however
        recent (a new leader: the previous one may have died before sending it). Returns how many were sent."""
        now = self._swept_at = utcnow()
        c = _JOBS.c
        where = [c.phase == JobPhase.STOPPING.value, c.reason_code.in_(CRATER_STOPS)]
        if not at_once:
            where.append(c.stop_requested_at <= now - timedelta(seconds=RESEND_AFTER_S))
        with self.ctx.session(read_only=True) as s:
            rows = s.execute(sa_select(c.id, c.uid, c.attempt, c.reason_code, c.reason_args).where(*where)).all()
        self._sent = {uid: sent for uid, sent in self._sent.items() if uid in {row.uid for row in rows}}
        sent, first = 0, []
        for row in rows:
            status = self.ctx.backend.status(row.uid)
            if status is None or status.attempt < row.attempt or status.phase not in _NOT_STOPPING:
                continue  # unknown to the backend (repair's), an earlier run's status, or stopping already
            times, last = self._sent.get(row.uid, (0, None))
            if last is not None and not at_once and (now - last).total_seconds() < min(
                    RESEND_AFTER_S * 2 ** (times - 1), RESEND_MAX_S):
                continue
            self._sent[row.uid] = (times + 1, now)
            if send(self.ctx, row.uid, *stop_message(row.reason_code, row.reason_args)):
                sent += 1
            if times == 0:
                first.append(event_row(row.id, JobPhase.STOPPING.value, "StopResent", "job.stop_resent",
                                       {"phase": status.phase.value}, at=now))
        if first:
            with self.ctx.session() as s:
                s.execute(EVENTS.insert(), first)
        return sent
