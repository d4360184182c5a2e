"""The reconciler's common phase changes written without ORM objects: a job ``Queued`` or ``Running`` that the backend
reports in another phase it may move to (``Queued -> Running``, ``Running -> Succeeded | Failed | Stopping``, ...),
written as the new values of one ``jobs`` row and its ``job_events`` rows, which
:class:`~crater_app.services.reconcile.Reconciler` writes for a whole batch of changes with a few statements
(:mod:`crater_app.db.queries.row_batches`).

:func:`phase_change` gives exactly what ``Reconciler._apply_one`` writes for such a job (the same columns' values and
the same events), or ``None`` for every case that needs the job's other fields or a rule of its own, which stay on
that path: a state Crater does not know, a job ``Stopping`` or in any other phase, a transition the job may not make
(``IgnoredTransition``), a preempted job's end (``Reconciler._preempted``), and the start of a later attempt after a
previous run ended (billing's ``charged_until`` in ``Reconciler._started``).

The UPDATE is a plain update of the rows, so the database's row triggers on ``jobs`` (``active_usage``, migration
0006) move the counts as for any other write.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from crater_app.cluster.base import WorkloadStatus
from crater_app.db.models import Job
from crater_app.domain.jobs import JobPhase, can_transition
from crater_app.services import admission
from crater_app.services.job_events import event_row

_JOBS = Job.__table__
#: the columns one job's phase change writes: every column a transition of ``Reconciler._apply_one`` may write
#: (those it leaves alone get the value the row had); a :class:`PhaseChange` ``update`` has these and ``id``
PHASE_COLUMNS = ("phase", "reason", "reason_code", "reason_args", "devices", "exit_code", "exit_signal",
                 "started_at", "finished_at")
#: the phases a job leaves on this path (a ``Stopping`` job keeps Crater's own reason and has rules of its own)
_FROM = frozenset({JobPhase.QUEUED, JobPhase.RUNNING})


class JobRow(NamedTuple):
    """The columns of a job row :func:`phase_change` reads (``Reconciler._apply`` selects them in this order)."""

    id: int
    uid: str
    phase: str
    reason: str
    reason_code: str
    reason_args: dict | None
    devices: list
    attempt: int
    started_at: datetime | None
    finished_at: datetime | None


#: the ``jobs`` columns of :class:`JobRow`, in its order
ROW_COLUMNS = tuple(_JOBS.c[name] for name in JobRow._fields)


class PhaseChange(NamedTuple):
    """What one job's phase change writes: ``update`` (``id`` and the :data:`PHASE_COLUMNS` of its row) and
    ``events`` (``job_events`` rows, oldest first)."""

    update: dict
    events: list[dict]


def phase_change(row: JobRow, status: WorkloadStatus, reason: tuple[str, str, dict],
                 now: datetime) -> PhaseChange | None:
    """The phase change of job ``row`` to ``status.phase``, or ``None`` when it is not one this path writes (see the
    module's docstring; the caller hands those to ``Reconciler._apply_one``).

    ``reason`` is the job's ``(reason, reason_code, reason_args)`` from the status
    (:func:`crater_app.services.reconcile.status_reason`); ``now`` (UTC) the instant written where the backend gives
    none (``finished_at`` of a job that ended without one, an event's ``at``). A job ``Queued`` that the backend
    reports ended with a start (it started and ended between two syncs) gets its ``Started`` event too, as on the
    ORM path.
    """
    phase = status.phase
    current = JobPhase(row.phase)
    if phase is None or phase == current or current not in _FROM:
        return None
    start = status.started_at
    events: list[dict] = []
    started = phase == JobPhase.RUNNING  # Reconciler._started: the run's start is written
    if current == JobPhase.QUEUED and phase.terminal and start is not None \
            and (row.started_at is None or row.finished_at is not None):
        events.append(event_row(row.id, JobPhase.RUNNING.value, "Started", "job.started", {
            "devices": ",".join(map(str, status.devices))}, at=start))
        current, started = JobPhase.RUNNING, True
    if not can_transition(current, phase) or (phase == JobPhase.CANCELLED and row.reason_code == admission.PREEMPTED):
        return None
    started_at, finished_at = row.started_at, row.finished_at
    if started and start is not None:
        if row.attempt > 1 and row.finished_at is not None:
            return None  # a later attempt starts after an earlier run ended: billing's rule (Reconciler._started)
        started_at = started_at or start
    if phase.terminal:
        started_at = started_at or start
        finished_at = status.finished_at or now
    text, code, args = reason
    at = start if phase == JobPhase.RUNNING else finished_at
    events.append(event_row(row.id, phase.value, status.reason, code, args, at=at or now, message=text))
    return PhaseChange({
        "id": row.id, "phase": phase.value, "reason": text, "reason_code": code, "reason_args": args,
        "devices": list(status.devices), "exit_code": status.exit_code, "exit_signal": status.exit_signal,
        "started_at": started_at, "finished_at": finished_at}, events)
