"""Reconciler: moves job rows along with what the backend reports (a watch on ``ClusterBackend.changes``, re-listed
with ``ClusterBackend.list_workloads`` when the backend says its cursor is no longer valid), recording every
transition as a :class:`JobEvent`. The backend gives each status in Crater's phases already (``WorkloadStatus.phase``);
a status without one keeps the backend's word (``raw_state``) verbatim in a ``BackendState`` event. The leader loop that drives it is :mod:`crater_app.services.leader`
(its names are offered here too).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Sequence

from sqlalchemy import select as sa_select
from sqlmodel import select

from crater_app.cluster.base import WorkloadStatus
from crater_app.db.models import Job, Project, User
from crater_app.db.queries import row_batches
from crater_app.db.types import utcnow
from crater_app.domain.jobs import JobPhase, can_transition
from crater_app.services import admission, job_reasons, stops
from crater_app.services import reconcile_bulk as bulk
from crater_app.services.context import ServiceContext
from crater_app.services.job_events import EVENTS, event_row
from crater_app.services.jobs import workload_of

log = logging.getLogger(__name__)
_ACTIVE = admission.ACTIVE_PHASES
_JOBS = Job.__table__
#: the columns a change that keeps the phase writes (with ``id``)
_SAME_PHASE_COLUMNS = ("reason", "reason_code", "reason_args", "devices")
_EVENT_COLUMNS = ("job_id", "at", "phase", "reason", "message", "code", "args")  # those of event_row
#: ``jobs.reason_code`` holds codes of at most this many characters (a longer backend code keeps only its text)
MAX_CODE_CHARS = 64
#: backend reasons that keep the phase but belong on the job's timeline as events of their own: a gang starting again
#: after a replica failed (``restart_policy: restart``; Volcano's ``Restarting`` phase)
TIMELINE_REASONS = frozenset({"Restarting", "Restarted"})
#: reason codes a stop asked for by Crater writes (the job's reason while it is ``Stopping``)
_CRATER_STOPS = stops.CRATER_STOPS


def status_reason(status: WorkloadStatus, ids: dict[str, int]) -> tuple[str, str, dict]:
    """``(reason, reason_code, reason_args)`` of a job from its backend status: the status's message, code and
    arguments, with a blocking workload's uid (``blocker``) named by its job (``#<id>``, ``blocker_id``) when
    ``ids`` (uid -> job id) knows it - then the English reason is rendered again from the code."""
    code = status.code if status.code and len(status.code) <= MAX_CODE_CHARS else ""
    args = dict(status.args or {}) if code else {}
    if code and isinstance(args.get("blocker"), str) and args["blocker"] in ids:
        args["blocker_id"] = ids[args["blocker"]]
        args["blocker"] = f"#{args['blocker_id']}"
        return job_reasons.english(code, args) or status.message, code, args
    return status.message, code, args


class Reconciler:
    """Applies backend status changes to job rows. ``cursor`` is the backend's watch cursor after the last change
    applied (opaque; ``""``: from the beginning of what the backend keeps)."""

    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx
        self.cursor = ""
        self.moved = False  # set when a sync changed some job's phase (admission looks again: usage may have dropped)
        self._orphans: set[str] = set()  # workloads without a job row, already reported (_report_orphans)

    def sync(self, batch: int = 1000) -> int:
        """Apply every backend change since ``cursor``; when the backend answers that the cursor is no longer valid
        (``Changes.relist``), apply its whole list (``list_workloads``) and go on from the cursor it gave. Returns
        how many statuses were read."""
        seen, relisted = 0, False
        while True:
            changes = self.ctx.backend.changes(self.cursor, batch)
            if changes.relist and not relisted:  # once per sync: a backend that answers it again is tried next round
                relisted = True
                statuses = self.ctx.backend.list_workloads()
                log.info("reconcile: the backend's watch restarted; re-listed %d workload(s)", len(statuses))
                for i in range(0, len(statuses), batch):
                    self._apply(statuses[i:i + batch])
                self.cursor = changes.cursor
                seen += len(statuses)
                continue
            if changes.relist:
                return seen
            self.cursor = changes.cursor
            if not changes.statuses:
                return seen
            self._apply(changes.statuses)
            seen += len(changes.statuses)
            if len(changes.statuses) < batch:
                return seen

    def _apply(self, changes: Sequence[WorkloadStatus]) -> None:
        latest = {c.uid: c for c in changes}
        blockers = {b for c in latest.values() if isinstance(b := (c.args or {}).get("blocker"), str)}
        with self.ctx.session() as s:
            # Most changes keep the phase and only bring a new message (e.g. a queued job's position): those write
            # the reason and devices; the common phase changes (Queued -> Running -> an end) every column a
            # transition writes (services.reconcile_bulk). Each kind is one statement per chunk of rows, their
            # events one INSERT (db.queries.row_batches). Only the rest go through ORM objects and _apply_one.
            # The outcome is the same as _apply_one's for every job.
            conn = s.connection()
            rows = conn.execute(sa_select(*bulk.ROW_COLUMNS).where(
                _JOBS.c.uid.in_(list(latest | dict.fromkeys(blockers))))).all()
            ids = {row.uid: row.id for row in rows}
            updates, moves, others, events = [], [], [], []
            now = utcnow()
            for row in rows:
                status = latest.get(row.uid)
                if status is None or status.attempt < row.attempt:
                    continue  # only named as a blocker, or a status of an earlier run: history
                phase = row.phase
                if status.phase == JobPhase(phase) and phase != JobPhase.STOPPING.value:
                    new_reason, new_code, new_args = status_reason(status, ids)
                    if ((row.reason, row.reason_code, row.reason_args or {}) != (new_reason, new_code, new_args)
                            or list(status.devices) != row.devices):
                        updates.append({"id": row.id, "reason": new_reason, "reason_code": new_code,
                                        "reason_args": new_args, "devices": list(status.devices)})
                        if status.reason in TIMELINE_REASONS and new_code != row.reason_code:
                            events.append(event_row(row.id, phase, status.reason, new_code, new_args,
                                                    at=now, message=new_reason))
                    continue
                self.moved = True
                change = bulk.phase_change(row, status, status_reason(status, ids), now) \
                    if status.phase is not None else None
                if change is None:
                    others.append(row.uid)
                else:
                    moves.append(change.update)
                    events.extend(change.events)
            row_batches.update_rows(conn, _JOBS, "id", _SAME_PHASE_COLUMNS, updates)
            row_batches.update_rows(conn, _JOBS, "id", bulk.PHASE_COLUMNS, moves)
            row_batches.insert_rows(conn, EVENTS, _EVENT_COLUMNS, events)
            for job in s.exec(select(Job).where(Job.uid.in_(others))).all() if others else ():
                self._apply_one(s, job, latest[job.uid], ids)

    def _apply_one(self, s, job: Job, status: WorkloadStatus, ids: dict[str, int]) -> None:
        phase = status.phase
        current = JobPhase(job.phase)
        if phase is None:  # a state Crater does not know: kept verbatim in the event
            s.execute(EVENTS.insert(), event_row(job.id, job.phase, "BackendState", "job.backend_state", {
                "state": status.raw_state, "reason": status.reason, "message": status.message}))
            return
        reason, code, args = status_reason(status, ids)
        if phase == current:
            if current == JobPhase.STOPPING and job.reason_code in _CRATER_STOPS:
                reason, code, args = job.reason, job.reason_code, job.reason_args  # Crater's own reason stays
            if (job.reason, job.reason_code, job.reason_args) != (reason, code, args) or \
                    list(status.devices) != job.devices:
                job.reason, job.reason_code, job.reason_args = reason, code, args
                job.devices = list(status.devices)
                s.add(job)
            return
        if current.terminal:
            return
        if current == JobPhase.STOPPING and phase in (JobPhase.QUEUED, JobPhase.RUNNING):
            # Crater asked for the stop; the backend has not acted on it yet (it may have started the job meanwhile).
            if phase == JobPhase.RUNNING and status.started_at is not None:
                self._started(job, status)
            job.devices = list(status.devices)
            s.add(job)
            return
        if current in (JobPhase.QUEUED, JobPhase.STOPPING) and phase.terminal and status.started_at is not None \
                and (job.started_at is None or job.finished_at is not None):
            # Started and finished between two syncs: record the Running step too.
            s.execute(EVENTS.insert(), event_row(job.id, JobPhase.RUNNING.value, "Started", "job.started", {
                "devices": ",".join(map(str, status.devices))}, at=status.started_at))
            self._started(job, status)
            current = JobPhase.RUNNING if current == JobPhase.QUEUED else current
        elif current == JobPhase.QUEUED and phase == JobPhase.SUCCEEDED:
            # It ran, but the backend did not see it start (a watch that brought the Job's end before any pod event):
            # the Running step at its end, so that the row does not stay Queued for ever.
            at = status.finished_at or utcnow()
            s.execute(EVENTS.insert(), event_row(job.id, JobPhase.RUNNING.value, "Started", "job.started", {
                "devices": ",".join(map(str, status.devices))}, at=at))
            job.started_at = job.started_at or at
            current = JobPhase.RUNNING
        if not can_transition(current, phase):
            s.execute(EVENTS.insert(), event_row(job.id, job.phase, "IgnoredTransition", "job.ignored_transition", {
                "current": current.value, "target": phase.value}))
            return
        if phase == JobPhase.CANCELLED and job.reason_code == admission.PREEMPTED:
            self._preempted(s, job, status)
            return
        if phase == JobPhase.RUNNING:
            self._started(job, status)
        job.phase = phase.value
        job.reason, job.reason_code, job.reason_args = reason, code, args
        job.devices = list(status.devices)
        job.exit_code = status.exit_code
        job.exit_signal = status.exit_signal
        if phase.terminal:
            job.started_at = job.started_at or status.started_at
            job.finished_at = status.finished_at or utcnow()
        s.add(job)
        at = status.started_at if phase == JobPhase.RUNNING else job.finished_at
        s.execute(EVENTS.insert(), event_row(job.id, phase.value, status.reason, code, args, at=at or utcnow(),
                                             message=reason))

    @staticmethod
    def _started(job: Job, status: WorkloadStatus) -> None:
        """The job's current run started at ``status.started_at``. A later attempt's start moves ``started_at``
        (the run's bound counts from it) and clears the previous run's end; billing keeps what the previous run
        has not been charged for yet (``charged_until`` moves with it, so that the wait in between is free)."""
        start = status.started_at
        if start is None:
            return
        previous_end = job.finished_at if job.attempt > 1 else None
        if previous_end is not None:
            charged = job.charged_until or job.started_at
            unsettled = previous_end - charged if charged is not None and charged < previous_end else None
            job.charged_until = start - unsettled if unsettled is not None else start
            job.finished_at = None
        if job.started_at is None or previous_end is not None:
            job.started_at = start

    def _preempted(self, s, job: Job, status: WorkloadStatus) -> None:
        """A job stopped by a preemption has stopped: back to Crater's queue for its next attempt (``Held``,
        ``attempt`` + 1, event ``Requeued``; Kueue requeues an evicted Workload, Volcano restarts a Job on
        ``PodEvicted``), or ``Failed`` with reason ``Preempted`` when ``requeue_on_preemption`` is off or
        ``settings.max_attempts`` runs are used; ``Cancelled`` when its user cancelled it while it stopped."""
        code, args = job_reasons.after_preemption(job.reason_args or {}, job.attempt, job.requeue_on_preemption,
                                                  self.ctx.settings.max_attempts)
        now = utcnow()
        job.devices = []
        job.exit_code = status.exit_code
        job.exit_signal = status.exit_signal
        job.finished_at = status.finished_at or now
        cancelled_by = (job.reason_args or {}).get("cancelled_by")
        if cancelled_by:  # its user cancelled it while it was being stopped (services.jobs): it ends there
            who = {"user": cancelled_by}
            job.phase = JobPhase.CANCELLED.value
            job.reason, job.reason_code, job.reason_args = job_reasons.english("job.cancelled_by", who), \
                "job.cancelled_by", who
            job.started_at = job.started_at or status.started_at
            s.add(job)
            s.execute(EVENTS.insert(), event_row(job.id, job.phase, "Cancelled", "job.cancelled_by",
                                                 {"user": cancelled_by}, at=job.finished_at))
            admission.nudge(self.ctx)
            return
        job.reason, job.reason_code, job.reason_args = job_reasons.english(code, args), code, args
        if code == "requeued":
            job.phase = JobPhase.HELD.value
            job.attempt = args["attempt"]
            job.admitted_at = None
            job.stop_requested_at = None
            s.add(job)
            s.execute(EVENTS.insert(), event_row(job.id, job.phase, "Requeued", f"hold.{code}", args, at=now,
                                                 message=job.reason))
            admission.nudge(self.ctx)
            return
        job.phase = JobPhase.FAILED.value
        job.started_at = job.started_at or status.started_at
        s.add(job)
        s.execute(EVENTS.insert(), event_row(job.id, job.phase, "Preempted", f"hold.{code}", args,
                                             at=job.finished_at, message=job.reason))

    def repair(self, adopted_by: str | None = None, settled_before: datetime | None = None) -> int:
        """Fix jobs the backend does not know (or knows only from an earlier attempt): a Queued one (crash between
        commit and create, or a create that failed) is created again with the same uid and attempt; a Running one is
        marked Failed, a Stopping one Cancelled, with the reason. Returns how many.

        With ``adopted_by`` (the new leader, after a restart or a change of leader), every job still running
        gets an ``Adopted`` event, so that its timeline shows that Crater restarted under it. With
        ``settled_before`` (UTC), only jobs whose last move - admission, start or stop request - came before it are
        looked at: a younger one may be on its way to the backend right now (its create still in flight from a web
        worker) - except, with ``adopted_by``, Queued ones, handed over at once (``create`` is idempotent).
        """
        c = Job.__table__.c
        with self.ctx.session(read_only=True) as s:
            rows = s.execute(sa_select(c.id, c.uid, c.phase, c.attempt, c.created_at, c.admitted_at, c.started_at,
                                       c.stop_requested_at).where(c.phase.in_(_ACTIVE))).all()
        suspects, adopted = [], []
        known = {status.uid: status for status in self.ctx.backend.list_workloads()}
        self._report_orphans(known)
        for row in rows:
            status = known.get(row.uid)
            if status is not None and status.attempt >= row.attempt:
                if adopted_by and row.phase == JobPhase.RUNNING.value and status.phase == JobPhase.RUNNING:
                    adopted.append(event_row(row.id, row.phase, "Adopted", "job.adopted", {"holder": adopted_by}))
                continue
            young = settled_before is not None and _last_move(row) > settled_before
            if young and not (adopted_by and row.phase == JobPhase.QUEUED.value):
                continue
            suspects.append(row.id)
        fixed = 0
        with self.ctx.session() as s:
            if adopted:
                s.execute(EVENTS.insert(), adopted)
            if not suspects:
                return 0
            found = s.exec(
                select(Job, Project.name, User.username)
                .join(Project, Project.id == Job.project_id).join(User, User.id == Job.user_id)
                .where(Job.id.in_(suspects), Job.phase.in_(_ACTIVE)).with_for_update()
            ).all()
            for job, project, user in found:
                status = self.ctx.backend.status(job.uid)  # again, under the row lock: the backend may have caught up
                if status is not None and status.attempt >= job.attempt:
                    continue
                fixed += 1
                if job.phase == JobPhase.QUEUED.value:
                    self.ctx.backend.create(workload_of(job, project, user))
                    s.execute(EVENTS.insert(), event_row(job.id, job.phase, "Resubmitted", "job.resubmitted"))
                    continue
                running = job.phase == JobPhase.RUNNING.value
                lost = "job.lost" if running else "job.lost_stopping"
                job.phase = JobPhase.FAILED.value if running else JobPhase.CANCELLED.value
                job.reason, job.reason_code, job.reason_args = job_reasons.english(lost, {}), lost, {}
                job.finished_at = utcnow()
                s.add(job)
                s.execute(EVENTS.insert(), event_row(job.id, job.phase, "Lost",
                                                     "job.lost_record" if running else "job.lost_stopping"))
        if fixed:
            log.warning("repair: %d job(s) the backend did not know were handed to it again or ended", fixed)
        return fixed


    def _report_orphans(self, known: dict[str, WorkloadStatus]) -> list[str]:
        """Workloads the backend runs that have no job row (a database restored from a backup, a second Crater
        pointed at the same namespace): logged once each as a warning with their uid, never stopped - they may be
        someone else's. Returns the uids newly reported."""
        active = [uid for uid, status in known.items()
                  if status.phase is not None and not status.phase.terminal and uid not in self._orphans]
        if not active:
            return []
        c = Job.__table__.c
        with self.ctx.session(read_only=True) as s:
            have = {uid for (uid,) in s.execute(sa_select(c.uid).where(c.uid.in_(active))).all()}
        orphans = [uid for uid in active if uid not in have]
        self._orphans.update(orphans)
        if orphans:
            log.warning("repair: %d workload(s) run in the backend without a job row (not stopped: they may belong to "
                        "another Crater): %s", len(orphans), ", ".join(sorted(orphans)[:10]))
        return orphans


def _last_move(row) -> datetime:  # noqa: ANN001 - a row of Reconciler.repair's query
    """The latest of a job row's admission, start and stop request (its creation when it has none), UTC."""
    return max(t for t in (row.created_at, row.admitted_at, row.started_at, row.stop_requested_at) if t is not None)


_LEADER_NAMES = ("LEASE_NAME", "LeaderLoop", "holder_id")


def __getattr__(name: str):  # noqa: ANN202 - the loop that drives the reconciler lives in services.leader
    """``LeaderLoop``, ``LEASE_NAME`` and ``holder_id`` of :mod:`crater_app.services.leader` (part of this module's
    interface; imported on first use, as that module imports this one)."""
    if name in _LEADER_NAMES:
        from crater_app.services import leader

        return getattr(leader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
