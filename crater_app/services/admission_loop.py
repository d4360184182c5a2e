"""The admission pass of the leader loop: re-decide every held job, admit what fits now (backfill included),
refresh the holds that changed and mark the preemptions fair share asks for (rules: ``domain.admission``)."""

from __future__ import annotations

import json
import time
from datetime import datetime
from dataclasses import dataclass, field

from crater_app.db.models import Job
from crater_app.db.queries import admission as queries
from crater_app.db.queries.admission import APPROVAL, HELD, PREEMPTED, HeldJob, Snapshot
from crater_app.db.types import utcnow
from crater_app.domain.jobs import JobPhase
from crater_app.services import job_reasons, oplog
from crater_app.services.admission_inputs import (
    Holdings, bound_of, fair_share_configured, machine_capacity, read_limits, read_shares,
)
from crater_app.services.context import ServiceContext
from crater_app.services.job_events import EVENTS, event_row
from sqlalchemy import bindparam
from sqlalchemy import select as sa_select

#: the loop re-decides at least this often even when nothing it watches changed (quota edits by other replicas)
FULL_PASS_EVERY_S = 5.0
#: new held jobs alone (decided at submission) bring a full pass at most this often
NEW_HELD_PASS_EVERY_S = 2.0

_JOBS = Job.__table__


@dataclass
class RoundResult:
    """What one :func:`admission_round` decided: ``admitted`` job ids (now ``Queued``: the caller hands them to the
    backend), ``preempted`` ``(victim uid, reason)`` pairs (now ``Stopping``: the caller stops them in the
    backend), and how many holds it ``updated``; ``skipped`` when the round found nothing to re-decide."""

    admitted: list[int] = field(default_factory=list)
    preempted: list[tuple[str, str]] = field(default_factory=list)
    updated: int = 0
    skipped: bool = False


class AdmissionLoop:
    """The admission pass of the leader loop (state kept between rounds: what the last full pass saw).

    A round is one indexed query when nothing is held. The full pass (:func:`admission_round`) runs at once when
    room may have appeared or rules changed: ``changed`` (the reconciler moved jobs: usage may have dropped), a
    quota, share or held-job change in this process (``admission.invalidate``, ``admission.nudge``), fewer held
    jobs than last time (a cancel elsewhere) or another count of jobs waiting for approval (one was approved). New
    held jobs alone were decided at their submission by the same rules: they bring a pass at most every
    :data:`NEW_HELD_PASS_EVERY_S` (a job held at submission behind a queue that has since moved). And at least every
    :data:`FULL_PASS_EVERY_S` seconds in any case (changes made by other replicas, and backfill's time bounds).
    """

    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx
        self._last: tuple | None = None
        self._last_at = -1e18

    def step(self, changed: bool) -> RoundResult:
        """Run one round; ``changed``: the reconciler applied phase changes since the last round."""
        ctx = self.ctx
        with ctx.session(read_only=True) as s:
            fingerprint = queries.held_fingerprint(s)
        if not fingerprint[0]:
            self._last = fingerprint
            ctx.cache.pop("admission-dirty", None)
            return RoundResult(skipped=True)
        dirty = ctx.cache.pop("admission-dirty", False)
        last = self._last
        urgent = changed or dirty or last is None or fingerprint[2] != last[2] or fingerprint[0] < (last[0] or 0)
        since = time.monotonic() - self._last_at
        due = since >= FULL_PASS_EVERY_S or (fingerprint != last and since >= NEW_HELD_PASS_EVERY_S)
        if not urgent and not due:
            return RoundResult(skipped=True)
        result = admission_round(ctx)
        with ctx.session(read_only=True) as s:
            self._last = queries.held_fingerprint(s)
        self._last_at = time.monotonic()
        return result


#: an estimate that moved by less than this is the same estimate (reasons say it in whole minutes)
ESTIMATE_TOLERANCE_S = 60.0


def _same_but_length(stored: str, args: dict) -> bool:
    """Whether the stored ``reason_args`` (JSON text) equal ``args`` but for ``held`` (the queue's length) and an
    ``expected_at`` that moved by less than :data:`ESTIMATE_TOLERANCE_S`."""
    try:
        old = json.loads(stored or "{}")
    except ValueError:
        return False
    if not isinstance(old, dict):
        return False
    before, after = old.get("expected_at"), args.get("expected_at")
    if before and after and before != after:
        try:
            moved = abs((datetime.fromisoformat(before) - datetime.fromisoformat(after)).total_seconds())
        except (TypeError, ValueError):
            return False
        if moved >= ESTIMATE_TOLERANCE_S:
            return False
        before = after
    return {**old, "held": None, "expected_at": before} == {**args, "held": None, "expected_at": after}


def _snapshot(s, ctx: ServiceContext, held_projects: list[int]) -> tuple[Snapshot, dict[int, HeldJob]]:
    """Everything the round decides on, read after locking the projects that hold jobs."""
    now = utcnow()
    snap = Snapshot(now=now)
    queries.lock_projects(s, held_projects, snap)  # after the lock: nobody admits into these projects until commit
    snap.fair_share = fair_share_configured(ctx, s)
    if snap.fair_share:
        queries.lock_machine(s)  # after the project rows, as submissions take it: every project's usage is read
        queries.read_admitted(s, snap, None, individual_preemptible=True)
        snap.capacity = machine_capacity(ctx)
    else:
        queries.read_admitted(s, snap, sorted(held_projects), individual_preemptible=False,
                              user_ids=queries.held_users(s))
    # A held job of a project that has expired since its submission stays held (as a new job would be refused):
    # it starts once a platform admin extends the project.
    held = [h for h in queries.read_held(s, None) if not snap.expired(h.project_id, now)]
    read_limits(s, ctx, {h.user_id for h in held}, snap)
    snap.demands.extend(queries.held_demand(h, bound_of(ctx, snap.limits.get(h.user_id), h.max_runtime_s))
                        for h in held)
    queries.read_quotas(s, snap.projects(), snap)
    read_limits(s, ctx, snap.users(), snap)
    read_shares(s, snap.pairs(), snap)
    snap.holdings = Holdings(s, ctx, snap, now)
    return snap, {h.id: h for h in held}


def admission_round(ctx: ServiceContext) -> RoundResult:
    """Re-decide every held job in one transaction: admit (``Held`` -> ``Queued``, ``admitted_at``, event
    ``Admitted``), refresh changed holds, and mark preemption victims ``Stopping`` (``reason_code`` ``preempted``,
    the beneficiary and the attempt in ``reason_args``, ``stop_requested_at``) with ``Preempted``/``Reclaiming``
    events and operation-log rows. The caller (``services.reconcile.LeaderLoop``) hands the admitted jobs to the
    backend and stops the victims after the commit.

    A job held for an approval (``reason_code`` ``approval``) is never admitted here, whatever the plan says; nor
    is a held job of a project that has expired (it waits until the project is extended).
    """
    result = RoundResult()
    with ctx.session() as s:
        held_projects = queries.held_projects(s)
        if not held_projects:
            return result
        snap, by_id = _snapshot(s, ctx, held_projects)
        now = snap.now
        plan = snap.plan()
        c = _JOBS.c
        code, args = job_reasons.PENDING
        pending = {"reason": job_reasons.english(code, args), "reason_code": code, "reason_args": dict(args)}
        # Admissions: conditional on the row still being Held (a cancel may have won) and not waiting for approval.
        admitted: list[HeldJob] = []
        for key in plan.admit:
            job = by_id.get(key)
            if job is None or job.reason_code == APPROVAL:
                continue
            done = s.execute(
                _JOBS.update().where(c.id == job.id, c.phase == HELD, c.reason_code != APPROVAL).values(
                    phase=JobPhase.QUEUED.value, admitted_at=now, **pending)
            ).rowcount
            if done:
                admitted.append(job)
        if admitted:
            s.execute(EVENTS.insert(), [event_row(j.id, JobPhase.QUEUED.value, "Admitted", "job.admitted", at=now)
                                        for j in admitted])
        result.updated = _refresh_holds(s, plan.hold, by_id)
        result.preempted = _preempt(s, ctx, snap, plan.preempt, {j.id: j for j in admitted}, now)
    result.admitted = [j.id for j in admitted]
    return result


def _refresh_holds(s, holds: dict, by_id: dict[int, HeldJob]) -> int:
    """Rewrite the holds that changed - other than in the queue's length alone, which grows with every submission
    (rewriting every held row for it would cost a write per held job per pass). Returns how many."""
    changes = []
    for key, hold in holds.items():
        job = by_id.get(key)
        if job is None or job.reason_code == APPROVAL:
            continue  # its reason names the approval threshold; the approvals service moves it on
        args = job_reasons.stored_args(hold.args)
        if job.reason_code == hold.code and _same_but_length(job.reason_args, args):
            continue
        changes.append({"b_id": job.id, "b_reason": job_reasons.english(hold.code, args), "b_code": hold.code,
                        "b_args": args})
    if changes:
        c = _JOBS.c
        s.execute(_JOBS.update().where(c.id == bindparam("b_id"), c.phase == HELD).values(
            reason=bindparam("b_reason"), reason_code=bindparam("b_code"), reason_args=bindparam("b_args")),
            changes)
    return len(changes)


def _preempt(s, ctx: ServiceContext, snap: Snapshot, preemptions: list, started: dict[int, HeldJob],
             now) -> list[tuple[str, str]]:
    """Carry out the plan's preemptions whose beneficiary was really admitted: each victim goes ``Stopping``
    (it still holds its devices until its processes have exited; the reconciler then requeues it or ends it)."""
    c = _JOBS.c
    out: list[tuple[str, str]] = []
    victims_done: set = set()
    for p in preemptions:
        beneficiary = started.get(p.beneficiary)
        if beneficiary is None or p.victim in victims_done:
            continue
        row = s.execute(sa_select(c.id, c.uid, c.name, c.project_id, c.phase, c.reason_code, c.attempt)
                        .where(c.id == p.victim).with_for_update()).first()
        if row is None or row.phase != JobPhase.RUNNING.value:
            continue  # ended, being stopped already, or not running (a victim must be running: queries.read_admitted)
        victims_done.add(p.victim)
        victim_project = snap.quotas[row.project_id].name if row.project_id in snap.quotas else str(row.project_id)
        ben_project = snap.quotas[beneficiary.project_id].name
        numbers = job_reasons.plain(p.args)  # the projects' usage and deserved shares (resource lists)
        args = job_reasons.preempted_args(numbers, beneficiary.id, beneficiary.name, ben_project, row.attempt)
        s.execute(_JOBS.update().where(c.id == row.id).values(
            phase=JobPhase.STOPPING.value, stop_requested_at=now, reason_code=PREEMPTED, reason_args=args,
            reason=job_reasons.english(PREEMPTED, args)))
        s.execute(EVENTS.insert(), [
            event_row(row.id, JobPhase.STOPPING.value, "Preempted", "job.preempted_for", {
                "beneficiary_id": beneficiary.id, "beneficiary": beneficiary.name, "beneficiary_project": ben_project,
                "beneficiary_used": numbers["beneficiary_used"],
                "beneficiary_deserved": numbers["beneficiary_deserved"], "project": numbers["project"],
                "used": numbers["used"], "deserved": numbers["deserved"]}, at=now),
            event_row(beneficiary.id, JobPhase.QUEUED.value, "Reclaiming", "job.reclaiming", {
                "project": ben_project, "victim_id": row.id, "victim": row.name, "victim_project": victim_project},
                at=now),
        ])
        oplog.record(s, None, "job:preempt", f"{victim_project}/{row.name}#{row.id}", code="job.preempted_for", args={
            "beneficiary_id": beneficiary.id, "beneficiary": beneficiary.name, "beneficiary_project": ben_project,
            "project": numbers["project"], "used": numbers["used"], "deserved": numbers["deserved"]})
        out.append((row.uid, job_reasons.preempted_message(args)))
    return out
