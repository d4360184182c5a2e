"""Reconciler: moves job rows along with what the backend reports (a watch on ``ClusterBackend.changes``),
recording every transition as a :class:`JobEvent`; and the leader loop that drives it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import replace

from sqlalchemy import bindparam
from sqlalchemy import select as sa_select
from sqlmodel import select

from crater_app.cluster.base import WorkloadStatus
from crater_app.db.engine import refresh_statistics
from crater_app.db.models import Job, JobEvent, Project, User
from crater_app.db.types import utcnow
from crater_app.domain.jobs import JobPhase, can_transition
from crater_app.services import admission, approvals, billing, leases
from crater_app.services.context import ServiceContext
from crater_app.services.jobs import workload_of

log = logging.getLogger(__name__)
LEASE_NAME = "crater-loops"
_STATE_TO_PHASE = {
    "Pending": JobPhase.QUEUED, "Running": JobPhase.RUNNING, "Succeeded": JobPhase.SUCCEEDED,
    "Failed": JobPhase.FAILED, "Cancelled": JobPhase.CANCELLED,
}
_ACTIVE = (JobPhase.QUEUED.value, JobPhase.RUNNING.value)
_JOBS = Job.__table__
_SAME_PHASE_UPDATE = (
    _JOBS.update().where(_JOBS.c.id == bindparam("b_id")).values(reason=bindparam("b_reason"), devices=bindparam("b_devices"))
)


class Reconciler:
    """Applies backend status changes to job rows. ``rev`` is the last backend revision applied."""

    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx
        self.rev = 0
        self.moved = False  # set when a sync changed some job's phase (admission looks again: usage may have dropped)

    def sync(self, batch: int = 1000) -> int:
        """Apply every backend change since ``rev``; return how many statuses were read."""
        seen = 0
        while True:
            changes = self.ctx.backend.changes(self.rev, batch)
            if not changes:
                return seen
            self._apply(changes)
            self.rev = changes[-1].rev
            seen += len(changes)
            if len(changes) < batch:
                return seen

    def _apply(self, changes: list[WorkloadStatus]) -> None:
        latest = {c.uid: c for c in changes}
        with self.ctx.session() as s:
            # Most changes keep the phase and only bring a new message (e.g. a queued job's position): those are
            # one UPDATE of reason/devices each, sent together; only the rest go through ORM objects and
            # _apply_one. The outcome is the same as _apply_one for every job (it does exactly this when the
            # phase is unchanged).
            conn = s.connection()
            rows = conn.execute(
                sa_select(_JOBS.c.id, _JOBS.c.uid, _JOBS.c.phase, _JOBS.c.reason, _JOBS.c.devices)
                .where(_JOBS.c.uid.in_(list(latest)))
            ).all()
            updates, others = [], []
            for job_id, uid, phase, reason, devices in rows:
                status = latest[uid]
                if _STATE_TO_PHASE.get(status.state) == JobPhase(phase):
                    if reason != status.message or list(status.devices) != devices:
                        updates.append({"b_id": job_id, "b_reason": status.message, "b_devices": list(status.devices)})
                else:
                    others.append(uid)
            if updates:
                conn.execute(_SAME_PHASE_UPDATE, updates)
            if others:
                self.moved = True
                for job in s.exec(select(Job).where(Job.uid.in_(others))).all():
                    self._apply_one(s, job, latest[job.uid])

    @staticmethod
    def _apply_one(s, job: Job, status: WorkloadStatus) -> None:
        phase = _STATE_TO_PHASE.get(status.state)
        current = JobPhase(job.phase)
        if phase is None:
            s.add(JobEvent(job_id=job.id, phase=job.phase, reason="BackendState",
                           message=f"backend reports state '{status.state}' ({status.reason}): {status.message}"))
            return
        if phase == current:
            if job.reason != status.message or list(status.devices) != job.devices:
                job.reason = status.message
                job.devices = list(status.devices)
                s.add(job)
            return
        if current.terminal:
            return
        if current == JobPhase.QUEUED and phase.terminal and status.started_at is not None:
            # Started and finished between two syncs: record the Running step too.
            s.add(JobEvent(job_id=job.id, at=status.started_at, phase=JobPhase.RUNNING.value, reason="Started",
                           message=f"started with devices {list(status.devices)}"))
            current = JobPhase.RUNNING
        if not can_transition(current, phase):
            s.add(JobEvent(job_id=job.id, phase=job.phase, reason="IgnoredTransition",
                           message=f"backend moved {current.value} -> {phase.value}, which Crater does not allow"))
            return
        if phase == JobPhase.CANCELLED and job.reason_code == admission.PREEMPTED:
            # Stopped by a preemption (services.admission): it failed for a reason that is not its owner's doing.
            message = admission.preempted_final_message(job.reason_args or {})
            status = replace(status, state="Failed", reason="Preempted", message=message)
            phase = JobPhase.FAILED
        job.phase = phase.value
        job.reason = status.message
        job.devices = list(status.devices)
        job.exit_code = status.exit_code
        job.started_at = job.started_at or status.started_at
        if phase.terminal:
            job.finished_at = status.finished_at or utcnow()
        s.add(job)
        at = status.started_at if phase == JobPhase.RUNNING else job.finished_at
        s.add(JobEvent(job_id=job.id, at=at or utcnow(), phase=phase.value, reason=status.reason, message=status.message))

    def repair(self, adopted_by: str | None = None) -> int:
        """Fix jobs the backend does not know: a Queued one (crash between commit and create) is created
        again with the same uid; a Running one is marked Failed with the reason. Returns how many.

        With ``adopted_by`` (the new leader, after a restart or a change of leader), every job still running
        gets an ``Adopted`` event, so that its timeline shows that Crater restarted under it.
        """
        fixed = 0
        with self.ctx.session() as s:
            rows = s.exec(
                select(Job, Project.name, User.username)
                .join(Project, Project.id == Job.project_id).join(User, User.id == Job.user_id)
                .where(Job.phase.in_(_ACTIVE))
            ).all()
            for job, project, user in rows:
                status = self.ctx.backend.status(job.uid)
                if status is not None:
                    if adopted_by and job.phase == JobPhase.RUNNING.value and status.state == "Running":
                        s.add(JobEvent(job_id=job.id, phase=job.phase, reason="Adopted", message=(
                            f"still running after Crater restarted; re-adopted by {adopted_by}")))
                    continue
                fixed += 1
                if job.phase == JobPhase.QUEUED.value:
                    self.ctx.backend.create(workload_of(job, project, user))
                    s.add(JobEvent(job_id=job.id, phase=job.phase, reason="Resubmitted",
                                   message="the backend did not know this job; it was handed to it again"))
                else:
                    job.phase, job.reason, job.finished_at = JobPhase.FAILED.value, "the backend lost this job", utcnow()
                    s.add(job)
                    s.add(JobEvent(job_id=job.id, phase=job.phase, reason="Lost",
                                   message="the backend has no record of this running job"))
        return fixed


def holder_id() -> str:
    """A name for this process in leases: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class LeaderLoop:
    """Runs backend placement and reconciliation in the one process that holds the lease.

    Call :meth:`run` in a thread; :meth:`stop` ends it. Each round: renew the lease; when newly leader,
    re-adopt running workloads and repair; then ``backend.tick()``, ``Reconciler.sync()``, (at most once a
    second) ``approvals.close_orphans()``, the billing charge when due, and the admission pass (held jobs that
    fit now are admitted, preemptions carried out, see :meth:`admit`); then sleep
    ``loop_interval_s`` or until ``ctx.kick`` is set.
    """

    MIN_GAP_S = 0.002  # between two rounds, always (a loop kicked without pause never spins)
    REST_FACTOR = 3.0  # under a stream of kicks, rounds take at most 1/(1+REST_FACTOR) of the time...
    BURST_S = 0.1  # ...but this much owed rest is forgiven, so that an occasional kick is served at once
    ORPHANS_EVERY_S = 1.0  # approval requests whose target is gone are closed this often (approvals.close_orphans)
    STATS_EVERY_S = 3600.0  # query-planner statistics are refreshed by the leader this often (and on taking over)

    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx
        self.holder = holder_id()
        self.reconciler = Reconciler(ctx)
        self.admission = admission.AdmissionLoop(ctx)
        self.leader = False
        self._stop = threading.Event()
        self._stats_at = -1e18
        self._orphans_at = -1e18
        self._owed = 0.0  # seconds of rest owed by past rounds (REST_FACTOR x their duration), paid by idle time

    def step(self) -> None:
        """One round (see class docstring)."""
        if not leases.try_acquire(self.ctx, LEASE_NAME, self.holder, self.ctx.settings.lease_ttl_s):
            self.leader = False
            return
        if not self.leader:
            self.leader = True
            log.info("crater loops: %s is the leader", self.holder)
            self.ctx.backend.adopt()
            self.reconciler.rev = 0
            self.reconciler.sync()
            self.reconciler.repair(adopted_by=self.holder)
        if time.monotonic() - self._stats_at > self.STATS_EVERY_S:
            self._stats_at = time.monotonic()
            with self.ctx.session() as s:
                refresh_statistics(s.connection())
        self.ctx.backend.tick()
        self.reconciler.sync()
        # Requests whose job ended (or project expired) are closed: one indexed query, usually empty; once per
        # ORPHANS_EVERY_S rather than every round (it costs ~5 ms with 2,000 pending requests on SQLite).
        if time.monotonic() - self._orphans_at >= self.ORPHANS_EVERY_S:
            self._orphans_at = time.monotonic()
            approvals.close_orphans(self.ctx)
        billing.charge_if_due(self.ctx)  # at most every settings.billing_charge_interval_s; nothing when billing is off
        self.admit()

    def admit(self) -> admission.RoundResult:
        """The admission pass (``services.admission.AdmissionLoop``): cheap when nothing is held. Admitted jobs go
        to the backend; preemption victims are cancelled with the reason (the reconciler then marks them
        ``Failed``, reason ``Preempted``)."""
        moved, self.reconciler.moved = self.reconciler.moved, False
        result = self.admission.step(moved)
        if result.admitted:
            with self.ctx.session(read_only=True) as s:
                rows = s.exec(
                    select(Job, Project.name, User.username)
                    .join(Project, Project.id == Job.project_id).join(User, User.id == Job.user_id)
                    .where(Job.id.in_(result.admitted))
                ).all()
            workloads = [workload_of(job, project, user) for job, project, user in rows]
            try:
                if len(workloads) > 1:
                    self.ctx.backend.create_many(workloads)
                else:
                    self.ctx.backend.create(workloads[0])
            except Exception:  # noqa: BLE001 - repair() hands Queued jobs the backend lacks to it again
                log.exception("admission: handing %d admitted job(s) to the backend failed", len(workloads))
        for uid, reason in result.preempted:
            try:
                self.ctx.backend.cancel(uid, reason)
            except KeyError:
                log.warning("admission: preemption victim %s is unknown to the backend", uid)
        return result

    def run(self) -> None:
        """Loop until :meth:`stop`; errors are logged and the loop goes on.

        A kick starts the next round at once, unless rounds have recently been running back to back: each
        round owes ``REST_FACTOR`` times its duration in rest, idle time pays it off, and a kick waits only for
        what is owed beyond ``BURST_S``. Under a stream of submissions (each of which kicks) the rounds so take
        at most a quarter of the time instead of taking the interpreter from the requests themselves, while a
        lone submission still starts at once.
        """
        ended = time.monotonic()
        while not self._stop.is_set():
            self.ctx.kick.clear()
            started = time.monotonic()
            self._owed = max(0.0, self._owed - (started - ended))
            try:
                self.step()
            except Exception:  # noqa: BLE001 - a loop must survive one bad round
                log.exception("crater loop round failed")
            ended = time.monotonic()
            self._owed += self.REST_FACTOR * (ended - started)
            self.ctx.kick.wait(self.ctx.settings.loop_interval_s)
            since = time.monotonic() - ended
            rest = max(self.MIN_GAP_S - since, self._owed - since - self.BURST_S)
            if rest > 0:
                self._stop.wait(rest)
        if self.leader:
            leases.release(self.ctx, LEASE_NAME, self.holder)

    def stop(self) -> None:
        """Ask :meth:`run` to return after the current round."""
        self._stop.set()
        self.ctx.kick.set()
