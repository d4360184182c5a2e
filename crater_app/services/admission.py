"""Admission: which jobs may start now, under project quotas, member shares, user limits and fair share.

Two entry points, both one database transaction that cannot over-admit under concurrency:

- :func:`admit_submissions` (this module) - inside the (group-committed) submission transaction of
  ``services.jobs``: each new job is refused (never admissible: :class:`AdmissionRefused` with the numbers; the
  project has expired: :class:`~crater_app.domain.errors.Forbidden` with the date), written ``Queued`` (admitted,
  handed to the backend) or written ``Held`` with a ``reason_code``, its ``reason_args`` and the English
  ``reason``. Jobs above ``settings.approval_gpu_threshold`` accelerators (not submitted by a platform admin) are
  held with ``reason_code`` ``approval`` and an ``approvals`` row in the same transaction.
- :func:`~crater_app.services.admission_loop.admission_round` - the leader loop's pass: re-decide every held job,
  admit those that fit now, refresh the holds that changed and carry out the preemptions fair share asks for.

Concurrency: the transaction first locks the rows of the projects it admits into (``SELECT ... FOR UPDATE``,
ordered by id so that two transactions never wait on each other in a cycle) and only then reads the admitted
usage; a second transaction admitting into the same project waits for the first to commit and then sees its
jobs. Under fair share a decision reads every project's usage against the machine's capacity, so it also takes one
machine-wide lock after the project rows (``queries.lock_machine``: a PostgreSQL advisory lock held until commit),
and two decisions into different projects cannot both take the machine's last device. On SQLite, every write
transaction is ``BEGIN IMMEDIATE`` (one writer at a time; see ``services.context``), so the same read-then-write is
serialised by the database itself. The rule of Kubernetes' ResourceQuota admission (a quota's usage is checked and
charged in one compare-and-swap) and of Kueue's ClusterQueue admission (one admission at a time per cohort - the
machine is the one cohort here), applied to rows.

The rules live in :mod:`crater_app.domain.admission` (``decide``, ``never_admissible``), the SQL in
:mod:`crater_app.db.queries.admission`, the cached inputs in :mod:`crater_app.services.admission_inputs` and the
reasons' words in :mod:`crater_app.services.job_reasons`; this module prepares and writes the submissions'
outcome. Names other services use are re-exported here (``nudge``, ``invalidate``, ``project_usage``,
``reason_text``, ``AdmissionLoop``, ``admission_round``, ...).

Machine capacity takes part in admission once fair share is configured (some project has a ``guarantee`` or a
``deserved`` amount): then a job waits ``Held`` when the machine is full and preemptions give projects below their
deserved share their due. Without any guarantee/deserved, the machine is first come, first served in the
backend's own queue (a job is ``Queued`` and says which devices it waits for), as in a single-team setup; the
backend backfills there (``domain.placement``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from crater_app import i18n
from crater_app.cluster.base import Workload
from crater_app.db.queries import admission as queries
from crater_app.db.queries.admission import (
    ACTIVE_PHASES, APPROVAL, HELD, HELD_WINDOW, PREEMPTED, HeldJob, HeldQueues, Snapshot, job_usage, project_usage,
)
from crater_app.db.types import utcnow
from crater_app.domain import quota as q
from crater_app.domain.admission import Demand, Hold, Plan, UserLimits, never_admissible, queue_order
from crater_app.domain.errors import Forbidden, Unschedulable
from crater_app.domain.jobs import JobPhase
from crater_app.domain.policy import Actor, needs_approval
from crater_app.services import job_reasons
from crater_app.services.admission_inputs import (
    Holdings, bound_of, fair_share_configured, invalidate, machine_capacity, nudge, read_limits, read_shares,
)
from crater_app.services.context import ServiceContext
from crater_app.services.job_reasons import TRANSLATED_CODES, approval_hold, preempted_message, reason_text

__all__ = [
    "ACTIVE_PHASES", "APPROVAL", "HELD", "PREEMPTED", "TRANSLATED_CODES", "AdmissionLoop", "AdmissionRefused",
    "NewJob", "RoundResult", "admission_round", "admit_submissions", "approval_hold", "approval_rows",
    "fair_share_configured", "invalidate", "machine_capacity", "nudge", "preempted_message", "project_usage",
    "reason_text",
]


class AdmissionRefused(Unschedulable):
    """The job could never be admitted (over the project's capability, the member's share, the user's max
    accelerators per job or max runtime): code ``admission.over_*`` with the limit and the request. HTTP 422."""

    kind = "never_admissible"


@dataclass
class NewJob:
    """One submission as admission sees it: the prepared ``values`` of the jobs row (updated in place with the
    outcome: ``phase``, ``reason``, ``reason_code``, ``reason_args``, ``admitted_at``, ``max_runtime_s``), the
    submitter and the ``workload`` for the backend."""

    values: dict
    actor: Actor
    workload: Workload
    target: str = ""
    approval: bool = False
    error: Exception | None = None

    @property
    def admitted(self) -> bool:
        """Whether the job goes to the backend now."""
        return self.error is None and self.values["phase"] == JobPhase.QUEUED.value


def _hold_values(v: dict, hold: Hold) -> None:
    args = job_reasons.stored_args(hold.args)
    v.update(phase=HELD, reason=job_reasons.english(hold.code, args), reason_code=hold.code, reason_args=args,
             admitted_at=None)


def admit_submissions(s, ctx: ServiceContext, batch: list[NewJob]) -> None:
    """Decide every submission of ``batch`` in the caller's write transaction ``s`` (see the module docstring).

    Sets ``item.error`` (nothing is written for it) to :class:`Forbidden` (code ``admission.project_expired``: the
    project has expired, field ``project``) or :class:`AdmissionRefused` (never admissible: the limit and the
    request), or fills ``item.values`` with ``Queued`` + ``admitted_at`` or ``Held`` + the reason. Jobs that need
    an approval are held with ``reason_code`` ``approval`` (the caller inserts the approvals rows once the jobs
    have ids). A job without ``max_runtime`` gets its user's ``max_runtime_s`` limit as its own.
    """
    now = utcnow()
    for item in batch:  # a batch that failed is decided again item by item (GroupCommit)
        item.error, item.approval = None, False
    projects = {item.values["project_id"] for item in batch}
    users = {item.values["user_id"] for item in batch}
    snap = Snapshot(now=now)
    queries.lock_projects(s, projects, snap)
    snap.fair_share = fair_share_configured(ctx, s)
    if snap.fair_share:
        queries.lock_machine(s)  # every project's usage is read against the machine's capacity
    read_limits(s, ctx, users, snap, cached=True)
    read_shares(s, {(item.values["project_id"], item.values["user_id"]) for item in batch}, snap, ctx)
    candidates: list[tuple[NewJob, Demand]] = []
    for i, item in enumerate(batch):
        v = item.values
        pid, uid = v["project_id"], v["user_id"]
        if snap.expired(pid, now):
            item.error = Forbidden("admission.project_expired", "project", project=snap.quotas[pid].name,
                                   at=snap.expires[pid].isoformat())  # type: ignore[union-attr]
            continue
        limits = snap.limits.get(uid, UserLimits())
        if v["max_runtime_s"] is None and limits.max_runtime_s is not None:
            v["max_runtime_s"] = limits.max_runtime_s  # the user's ceiling is also the default
            item.workload = replace(item.workload, max_runtime_s=limits.max_runtime_s)
        usage = job_usage(v["resources"], v["accelerator_model"])
        item.approval = needs_approval(item.actor, q.devices(usage), ctx.settings.approval_gpu_threshold)
        demand = Demand(key=("new", i), project_id=pid, user_id=uid, priority=v["priority"], created_at=v["created_at"],
                        usage=usage, kind=v["kind"], preemptible=v["preemptible"], approval_pending=item.approval,
                        bound_s=bound_of(ctx, limits, v["max_runtime_s"]))
        refusal = never_admissible(demand, snap.quotas[pid], snap.shares.get((pid, uid), {}), limits,
                                   v["max_runtime_s"])
        if refusal is not None:
            item.error = AdmissionRefused(refusal.code, refusal.field, **refusal.args)
            continue
        candidates.append((item, demand))
    if not candidates:
        return
    # The rules see: the admitted usage (of these projects, or of every project under fair share), the head of the
    # held queues (HELD_WINDOW per project; positions are counted over the whole queue), and the new jobs.
    limited: set[int] = set()
    session_users: set[int] = set()
    if snap.fair_share:
        queries.read_admitted(s, snap, None, individual_preemptible=True)
        queues = queries.read_held_window(s, None, mine=projects)
        queries.read_quotas(s, snap.projects() | set(queues.counts), snap)
        snap.capacity = machine_capacity(ctx)
    else:
        # Only limits that exist need the usage they limit: the projects with a capability or member shares, and
        # the sessions of users with a session limit who submit one (an unlimited project costs no usage read).
        limited = {pid for pid in projects if snap.quotas[pid].capability} | {pid for pid, _ in snap.shares}
        session_users = {d.user_id for _, d in candidates
                         if d.kind == "interactive" and snap.limits.get(d.user_id, UserLimits()).max_sessions is not None}
        if limited or session_users:
            queries.read_admitted(s, snap, sorted(limited), individual_preemptible=False, user_ids=session_users)
        queued = sorted(pid for pid in projects if snap.held_counts.get(pid))
        queues = queries.read_held_window(s, queued) if queued else HeldQueues([], {})
    read_limits(s, ctx, {h.user_id for h in queues.window}, snap, cached=True)
    snap.demands.extend(queries.held_demand(h, bound_of(ctx, snap.limits.get(h.user_id), h.max_runtime_s))
                        for h in queues.window)
    read_limits(s, ctx, snap.users(), snap, cached=True)
    read_shares(s, snap.pairs(), snap, ctx)
    snap.demands.extend(d for _, d in candidates)
    if not snap.fair_share and not limited and not session_users and not queues.window:
        # Nothing limits these projects and users and nobody waits ahead: every job is admitted but those that
        # need an approval (what ``decide`` would answer, without building its ledger).
        plan = Plan(admit=[d.key for _, d in candidates if not d.approval_pending], preempt=[], hold={
            d.key: Hold(APPROVAL, {"project": snap.quotas[d.project_id].name})
            for _, d in candidates if d.approval_pending})
    else:
        # Only the submitting projects' outcomes are written here: only their blocked jobs need a reservation.
        snap.holdings, snap.reserve_for = Holdings(s, ctx, snap, now), projects
        plan = snap.plan()
    _apply(ctx, snap, queues, plan, candidates, projects)


def _apply(ctx: ServiceContext, snap: Snapshot, queues: HeldQueues, plan: Plan,
           candidates: list[tuple[NewJob, Demand]], projects: set[int]) -> None:
    """Write the plan's outcome into the submissions' values. A new job admitted only by preempting others is
    held here; the loop's next round stops the victims and admits it (it re-decides with the same rules), so
    that preemptions happen in one place. So are the new jobs the plan admitted after it, into the room of
    victims that keep running until then (:meth:`Plan.admitted_before_preemption`)."""
    reclaiming = {p.beneficiary: p for p in plan.preempt}
    admitted = set(plan.admitted_before_preemption())
    at = utcnow()
    new_keys: dict[int, list] = {pid: [] for pid in projects}
    for item, demand in candidates:
        new_keys[demand.project_id].append(queue_order(demand))
    for item, demand in candidates:
        v = item.values
        truncated = queues.truncated(demand.project_id)
        if demand.key in reclaiming and not item.approval:
            _hold_values(v, Hold("reclaim", reclaiming[demand.key].args))
            continue
        if demand.key in admitted and not item.approval and not truncated:
            code, args = job_reasons.PENDING
            v.update(phase=JobPhase.QUEUED.value, reason=job_reasons.english(code, args), reason_code=code,
                     reason_args=dict(args), admitted_at=at)
            continue
        hold = plan.hold.get(demand.key)
        synthetic = False
        if demand.key in admitted or hold is None:
            # A queue longer than the window (the loop admits in order), or not explained: behind the others.
            hold, synthetic = Hold("queue", {"project": snap.quotas[demand.project_id].name}), True
        if item.approval:
            hold = approval_hold(q.devices(demand.usage), ctx.settings.approval_gpu_threshold, hold.args)
        args = job_reasons.plain(hold.args)
        if truncated or synthetic:
            # The plan saw only the head of the queue: the true position and queue length.
            mine = queue_order(demand)
            batch_keys = new_keys[demand.project_id]
            args["position"] = 1 + queues.ahead(demand.project_id, demand.priority) + sum(
                1 for k in batch_keys if k < mine)
            args["held"] = sum(queues.counts.get(demand.project_id, {}).values()) + len(batch_keys)
        _hold_values(v, replace(hold, args=args))
    if any(key not in {d.key for _, d in candidates} for key in plan.admit) or plan.preempt:
        nudge(ctx)  # held jobs may start, or a preemption is due: the loop carries it out


def approval_rows(batch: list[NewJob], ids: list[int | None]) -> list[dict]:
    """``approvals`` rows (kind ``large_job``, pending) for the held jobs of ``batch`` that need one; their reason is
    Crater's own: ``reason_code`` ``approval.large_job`` (``request.approval.large_job`` in ``i18n/approvals``) with
    the job's name, its accelerators and the threshold, and ``reason`` its English text."""
    now = utcnow()
    rows = []
    for item, job_id in zip(batch, ids):
        if job_id is None or item.error is not None or not item.approval:
            continue
        v = item.values
        devices, threshold = v["gpus"], v["reason_args"].get("threshold")
        reason = {"job": v["name"], "accelerators": devices, "threshold": threshold}
        rows.append({
            "kind": "large_job", "status": "pending", "requester_id": v["user_id"], "project_id": v["project_id"],
            "job_id": job_id, "payload": {"accelerators": devices, "threshold": threshold},
            "reason": i18n.render(i18n.DEFAULT_LANGUAGE, "request.approval.large_job", reason),
            "reason_code": "approval.large_job", "reason_args": reason,
            "auto": False, "decided_by": None, "decision_note": "", "created_at": now, "decided_at": None,
        })
    return rows


# The loop's pass lives in its own module; its names are part of this one's interface.
from crater_app.services.admission_loop import AdmissionLoop, RoundResult, admission_round  # noqa: E402
