"""The leader loop: the one process that holds the database lease runs placement, reconciliation, repair, stops,
approvals upkeep, billing and admission; the others follow and ring its doorbell (``services.doorbell``)."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from datetime import datetime, timedelta

from sqlmodel import select

from crater_app.db.engine import refresh_statistics
from crater_app.db.models import Job, Project, User
from crater_app.db.types import utcnow
from crater_app.services import admission, approvals, billing, doorbell, leases, queues, stops
from crater_app.services.admission_loop import AdmissionLoop, RoundResult
from crater_app.services.context import ServiceContext
from crater_app.services.jobs import workload_of
from crater_app.services.reconcile import Reconciler

log = logging.getLogger(__name__)
LEASE_NAME = "crater-loops"


def holder_id() -> str:
    """A name for this process in leases: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class LeaderLoop:
    """Runs backend placement and reconciliation in the one process that holds the lease.

    Call :meth:`run` in a thread; :meth:`stop` ends it. Each round: renew the lease (a read while it runs for more
    than ``RENEW_WITHIN`` of its ``lease_ttl_s``; see ``leases.try_acquire``); when newly leader, answer the doorbell
    (``services.doorbell``: other workers ring it after a submission, so that the leader places the job at once); when
    not (any more) the leader, stop answering it and ring it on every ``ctx.kick`` instead, and wait out the rounds
    without kicks (a follower's round only looks at the lease); when newly leader,
    re-adopt running workloads, repair, and send again every stop Crater asked for that the backend has not acted
    on (``services.stops``); then ``backend.tick()``, ``Reconciler.sync()``, every ``REPAIR_EVERY_S`` a repair of
    the jobs settled for ``REPAIR_GRACE_S`` (a create that failed is retried, a lost job ended) and of every project's
    backend queue (``services.queues``), (at most once a second) the stops
    still not acted on after ``stops.RESEND_AFTER_S`` sent again and ``approvals.close_orphans()``, the billing
    charge when due, and the admission pass (held jobs that fit now are admitted, preemptions carried out, see
    :meth:`admit`); then sleep ``loop_interval_s`` or until ``ctx.kick`` is set.
    """

    MIN_GAP_S = 0.002  # between two rounds, always (a loop kicked without pause never spins)
    RENEW_WITHIN = 2 / 3  # the leader renews its lease once less than this fraction of lease_ttl_s is left
    REST_FACTOR = 3.0  # under a stream of kicks, rounds take at most 1/(1+REST_FACTOR) of the time...
    BURST_S = 0.1  # ...but this much owed rest is forgiven, so that an occasional kick is served at once
    ORPHANS_EVERY_S = 1.0  # approval requests whose target is gone are closed this often (approvals.close_orphans)
    STATS_EVERY_S = 3600.0  # query-planner statistics are refreshed by the leader this often (and on taking over)
    REPAIR_EVERY_S = 30.0  # jobs the backend lost or never got are repaired this often (and on taking over)...
    REPAIR_GRACE_S = 30.0  # ...ended once their last move is this old (a younger one may be on its way to the backend)

    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx
        self.holder = holder_id()
        self.reconciler = Reconciler(ctx)
        self.admission = AdmissionLoop(ctx)
        self.stops = stops.StopSweep(ctx)
        self.leader = False
        self._stop = threading.Event()
        self._stats_at = -1e18
        self._orphans_at = -1e18
        self._repair_at = time.monotonic()
        self._owed = 0.0  # seconds of rest owed by past rounds (REST_FACTOR x their duration), paid by idle time

    def step(self) -> None:
        """One round (see class docstring)."""
        ttl = self.ctx.settings.lease_ttl_s
        if not leases.try_acquire(self.ctx, LEASE_NAME, self.holder, ttl, renew_within_s=ttl * self.RENEW_WITHIN):
            if self.leader:
                log.info("crater loops: %s is no longer the leader", self.holder)
            self.leader = False
            self._follow()
            return
        if not self.ctx.doorbell.listening:
            self._answer_doorbell()
        if not self.leader:
            self.leader = True
            log.info("crater loops: %s is the leader", self.holder)
            self.ctx.backend.adopt()
            self.reconciler.cursor = ""  # from the beginning of what the backend keeps: nothing missed meanwhile
            self.reconciler.sync()
            self.reconciler.repair(adopted_by=self.holder, settled_before=self._settled_before())
            queues.sync(self.ctx)
            self.stops.run(at_once=True)  # the previous leader may have died before sending a stop
        if time.monotonic() - self._stats_at > self.STATS_EVERY_S:
            self._stats_at = time.monotonic()
            with self.ctx.session() as s:
                refresh_statistics(s.connection())
        self.ctx.backend.tick()
        self.reconciler.sync()
        if time.monotonic() - self._repair_at >= self.REPAIR_EVERY_S:
            self._repair_at = time.monotonic()
            self.reconciler.repair(settled_before=self._settled_before())
            queues.sync(self.ctx)  # drift (a Queue edited or deleted by hand) and syncs that failed
        if self.stops.due():
            self.stops.run()
        # Requests whose job ended (or project expired) are closed: one indexed query, usually empty; once per
        # ORPHANS_EVERY_S rather than every round (it costs ~5 ms with 2,000 pending requests on SQLite).
        if time.monotonic() - self._orphans_at >= self.ORPHANS_EVERY_S:
            self._orphans_at = time.monotonic()
            approvals.close_orphans(self.ctx)
        billing.charge_if_due(self.ctx)  # at most every settings.billing_charge_interval_s; nothing when billing is off
        self.admit()

    def _follow(self) -> None:
        """Not the leader: stop answering the doorbell, and ring it on every kick of this process."""
        bell = self.ctx.doorbell
        bell.close()
        self.ctx.kick.ring = bell.ring

    def _answer_doorbell(self) -> None:
        """The leader: kicks of this process stay here; rings from the others wake this loop (a taken name - the
        previous leader has not closed it yet - is tried again next round)."""
        self.ctx.kick.ring = None
        self.ctx.doorbell.listen(self._rung)

    def _rung(self, what: bytes) -> None:
        if what.startswith(doorbell.INVALIDATE):
            admission.invalidate(self.ctx)
        elif what.startswith(doorbell.NUDGE):
            admission.nudge(self.ctx)
        else:
            self.ctx.kick.set()

    def _settled_before(self) -> datetime:
        """The instant (UTC) before which a job's last move must lie for a repair to end it."""
        return utcnow() - timedelta(seconds=self.REPAIR_GRACE_S)

    def admit(self) -> RoundResult:
        """The admission pass (``services.admission_loop.AdmissionLoop``): cheap when nothing is held. Admitted jobs
        go to the backend; preemption victims (``Stopping`` already) are stopped with the reason, each on its own
        (a stop that fails is logged and sent again by ``services.stops.StopSweep``; the reconciler then requeues
        the victim, or marks it ``Failed``, reason ``Preempted``)."""
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
            stops.send(self.ctx, uid, reason)
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
            # A follower's kicks ring the leader; its own round would only look at the lease again.
            (self.ctx.kick if self.leader else self._stop).wait(self.ctx.settings.loop_interval_s)
            since = time.monotonic() - ended
            rest = max(self.MIN_GAP_S - since, self._owed - since - self.BURST_S)
            if rest > 0:
                self._stop.wait(rest)
        self.ctx.doorbell.close()
        self.ctx.kick.ring = None
        if self.leader:
            leases.release(self.ctx, LEASE_NAME, self.holder)

    def stop(self) -> None:
        """Ask :meth:`run` to return after the current round."""
        self._stop.set()
        self.ctx.kick.set()
