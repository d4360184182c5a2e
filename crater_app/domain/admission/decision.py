"""One admission pass: :func:`decide` orders the projects' queues, checks each held job against the ledger, plans
reclaims and lets later jobs of a project pass a blocked one by EASY backfill (rules: the package docstring)."""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Mapping, Sequence

from crater_app.domain import backfill
from crater_app.domain.admission.demands import Demand, ProjectQuota, Usage, UserLimits, queue_order
from crater_app.domain.admission.ledger import Ledger
from crater_app.domain.admission.reasons import BLOCKING, Hold, Preemption, amount
from crater_app.domain.admission.reclaim import Reclaim
from crater_app.domain.quota import devices, over

#: what the machine's holdings are filed under in a ``holdings`` mapping (a project's under its id)
MACHINE = None


@dataclass(frozen=True)
class Plan:
    """Result of :func:`decide`: ``admit`` keys in admission order, ``hold`` key -> :class:`Hold` for every held
    demand not admitted, ``preempt`` the preemptions to carry out now."""

    admit: list
    hold: dict
    preempt: list[Preemption]

    def admitted_before_preemption(self) -> list:
        """The admitted keys that need no preemption carried out: those admitted before the first beneficiary of
        a preemption (in :attr:`admit` order). A pass admits later keys into the room its victims free, so a
        caller that does not stop the victims itself (the submission path) must not admit those keys either."""
        beneficiaries = {p.beneficiary for p in self.preempt}
        for i, key in enumerate(self.admit):
            if key in beneficiaries:
                return self.admit[:i]
        return list(self.admit)


@dataclass
class _Blocked:
    """A project's blocked head and its reservation: ``scope`` the keys it is reserved on (the capability's for a
    ``quota`` hold, the machine's otherwise), ``lacking`` what it waits for (a resource list)."""

    key: object
    project_id: int
    position: int
    code: str
    lacking: Usage
    reservation: backfill.Reservation
    scope: frozenset[str] = field(default_factory=frozenset)
    lend: bool = True  # False: no reservation was computed; the jobs behind wait in order


def decide(demands: list[Demand], quotas: dict[int, ProjectQuota], shares: dict[tuple[int, int], Usage],
           limits: dict[int, UserLimits], capacity: Usage, now: datetime | None = None,
           holdings: Mapping[object, list[backfill.Holding]] | None = None,
           reserve_for: set[int] | None = None) -> Plan:
    """Decide admissions for every held demand in ``demands`` given the admitted ones, the project quotas,
    member shares ((project_id, user_id) -> usage ceiling), user limits and the machine's total ``capacity``.

    Args:
        now: the decision's instant (UTC): the estimates and which held job ends in time for backfill (a held
            demand admitted now ends by ``now + bound_s``). Without it no estimate is given and only capacity a
            blocked job does not need is lent.
        holdings: what admitted jobs hold and until when, for the reservations: ``holdings[project_id]`` the
            project's admitted jobs, ``holdings[MACHINE]`` all of them (a lazy mapping is fine: only the scopes
            of blocked jobs are read). Default: the admitted demands themselves (their ``usage`` and
            ``ends_at``).
        reserve_for: the projects whose blocked jobs get a reservation (default: all); in the others the jobs
            behind a blocked one wait in order, without an estimate (a caller that writes only some projects'
            outcomes saves reading the rest's holdings).

    The rules, their order and their sources are in the package docstring. A project absent from ``quotas`` has
    no ceiling, no guarantee and deserves nothing; a member absent from ``shares`` (or ``{}``) has no share limit;
    a user absent from ``limits`` has none.

    Returns:
        :class:`Plan`: ``admit`` held keys in the order admitted; ``hold`` a :class:`Hold` for every other held
        key; ``preempt`` victims to stop now (each admitted key appears at most once as a victim).

    Cost: O(A + H log H) for A admitted and H held jobs (plus the projects with a guarantee); the first reclaim
    of a pass sorts the C preemptible jobs (O(C log C)), and each reclaim walks them once (O(C)); a blocked
    project's reservation reads its holdings once (O(A log A)). Only admitted and held jobs should be passed:
    finished ones play no part. Measured by ``bench/admission_pure.py``.
    """
    admitted: list[Demand] = []
    held: defaultdict[int, list[Demand]] = defaultdict(list)
    for d in demands:
        if d.admitted:
            admitted.append(d)
        else:
            held[d.project_id].append(d)
    ledger = Ledger(quotas)
    ledger.load(admitted)
    for queue in held.values():
        queue.sort(key=queue_order)
    if holdings is None:
        holdings = _own_holdings(admitted)

    ctx = Pass(ledger, shares, limits, capacity, now, holdings, reserve_for)
    heap: list[tuple] = []
    nxt: dict[int, int] = {}
    for project_id, queue in held.items():
        nxt[project_id] = 0
        heapq.heappush(heap, (ledger.dominant_share(project_id), *queue_order(queue[0]), project_id, 0))
    version: defaultdict[int, int] = defaultdict(int)
    blocked: dict[int, _Blocked] = {}
    while heap:
        _share_, _p, _c, _k, project_id, ver = heapq.heappop(heap)
        if ver != version[project_id]:
            continue
        queue = held[project_id]
        i = nxt[project_id]
        d = queue[i]
        head = blocked.get(project_id)
        if head is None:
            outcome = ctx.consider(d, i + 1, len(queue))
            if outcome is not None and outcome.code in BLOCKING:
                head = blocked[project_id] = ctx.block(d, outcome, i + 1)
                outcome = replace(outcome, args={**outcome.args, **ctx.estimate(head)})
        else:
            outcome = ctx.behind(d, i + 1, len(queue), head)
        if outcome is not None:
            ctx.hold[d.key] = outcome
        nxt[project_id] = i + 1
        for victim_project in ctx.fair.touched:
            if victim_project != project_id and nxt.get(victim_project, 0) < len(held.get(victim_project, ())):
                version[victim_project] += 1
                first = held[victim_project][nxt[victim_project]]
                heapq.heappush(heap, (ledger.dominant_share(victim_project), *queue_order(first), victim_project,
                                      version[victim_project]))
        ctx.fair.touched.clear()
        if i + 1 < len(queue):
            version[project_id] += 1
            heapq.heappush(heap, (ledger.dominant_share(project_id), *queue_order(queue[i + 1]), project_id,
                                  version[project_id]))
    return Plan(admit=ctx.admit, hold=ctx.hold, preempt=ctx.fair.preempt)


def _own_holdings(admitted: list[Demand]) -> dict[object, list[backfill.Holding]]:
    out: dict[object, list[backfill.Holding]] = {MACHINE: []}
    for d in admitted:
        holding = backfill.Holding(d.usage, d.ends_at, d.key)
        out[MACHINE].append(holding)
        out.setdefault(d.project_id, []).append(holding)
    return out


class Pass:
    """The mutable part of one :func:`decide` call: checks one held job at a time against the ledger."""

    def __init__(self, ledger: Ledger, shares, limits, capacity: Usage, now: datetime | None,
                 holdings: Mapping[object, list[backfill.Holding]], reserve_for: set[int] | None = None) -> None:
        self.ledger = ledger
        self.shares = shares
        self.limits = limits
        self.capacity = capacity
        self.now = now
        self.holdings = holdings
        self.reserve_for = reserve_for
        self.admit: list = []
        self.hold: dict = {}
        self.fair = Reclaim(ledger, capacity, self.admit)
        self._admitted: list[Demand] = []  # the demands admitted in this pass (they hold capacity too)
        #: the pass's first job blocked on the machine (``capacity``/``fairshare``) that the machine could hold, with
        #: an expected start: later admissions in other projects must not delay it (see :meth:`_guards`)
        self.machine_head: _Blocked | None = None

    # -- one job -----------------------------------------------------------------------------------------------
    def consider(self, d: Demand, position: int, held: int) -> Hold | None:
        """Admit ``d`` (returns ``None``) or say why it waits. Once a job of another project is blocked on the
        machine, ``d`` is admitted (directly or by a reclaim) only when it cannot delay that job (:meth:`_guards`);
        else it waits with a ``queue`` hold naming it when it fits now or its project may reclaim, or with its own
        capacity hold (it becomes its project's head) when it could not start now anyway."""
        hold = self.hard_limits(d, position, held)
        if hold is not None:
            return hold
        lack = self.ledger.shortfall(d, self.capacity)
        guards = self._guards(d, None)
        delayed = self._delayed(d, guards)
        if delayed is not None:
            if not lack or self.fair.below_deserved(d, lack):
                return self._queue_hold(d, position, held, delayed)  # it could start now (by a reclaim): not before
            return self.capacity_hold(d, lack, position, held)
        if not lack or self.fair.plan(d, lack):
            self._take(d, guards)
            return None
        return self.capacity_hold(d, lack, position, held)

    def _guards(self, d: Demand, head: _Blocked | None) -> list[_Blocked]:
        """The reservations ``d`` must not delay: its project's blocked ``head``, and the pass's machine head when
        that is another project's - unless the machine head borrows (``capacity``: its project would go above
        its deserved share) while ``d`` keeps its own project within its deserved share: a borrower's
        reservation never holds back a project's deserved share (which that project could even reclaim)."""
        guards = [head] if head is not None else []
        machine = self.machine_head
        if machine is not None and machine is not head and not (machine.code == "capacity" and self._entitled(d)):
            guards.append(machine)
        return guards

    def _entitled(self, d: Demand) -> bool:
        """Whether ``d``'s project has a deserved share covering some key of ``d`` and stays within it, with ``d``
        added, on every key of ``d`` it covers (Volcano compares only the dimensions ``deserved`` names)."""
        ledger, pid = self.ledger, d.project_id
        covered = [key for key, value in d.usage.items() if value > 0 and ledger.covers(pid, key)]
        return bool(covered) and all(ledger.excess(pid, key, d.usage[key]) <= 0 for key in covered)

    def _in_scope(self, d: Demand, guard: _Blocked) -> Usage:
        """What ``d`` takes from the capacity ``guard`` counts on: its usage on the guard's keys, less, for a
        machine guard of another project, what ``d``'s own project's unused guarantee covers (reserved for it,
        never part of the guard's pool). Read before ``d`` is added to the ledger."""
        usage = {key: value for key, value in d.usage.items() if key in guard.scope}
        guarantee = self.ledger.quota(d.project_id).guarantee
        if guarantee and guard.code != "quota" and guard.project_id != d.project_id:
            used = self.ledger.project.get(d.project_id, {})
            for key in usage:
                own = guarantee.get(key, 0) - used.get(key, 0)
                if own > 0:
                    usage[key] = max(0, usage[key] - own)
        return usage

    def _delayed(self, d: Demand, guards: Sequence[_Blocked]) -> _Blocked | None:
        """The first of ``guards`` whose start ``d`` would delay if it started now (EASY's test: it ends by the
        shadow time, or takes only extra capacity), else ``None``."""
        ends = self._holding(d).ends_at
        for guard in guards:
            if not backfill.may_start(guard.reservation, self._in_scope(d, guard), ends):
                return guard
        return None

    def _take(self, d: Demand, guards: Sequence[_Blocked] = ()) -> None:
        """Admit ``d``; a job that runs past a guard's shadow time takes its usage out of that guard's extra."""
        ends = self._holding(d).ends_at
        for guard in guards:
            guard.reservation = backfill.admit(guard.reservation, self._in_scope(d, guard), ends)
        self.ledger.add(d)
        self.admit.append(d.key)
        self._admitted.append(d)

    def _base(self, d: Demand, position: int, held: int) -> dict:
        return {"project": self.ledger.quota(d.project_id).name, "position": position, "held": held}

    def hard_limits(self, d: Demand, position: int, held: int) -> Hold | None:
        """The first hard limit ``d`` breaks now (capability, member share, sessions, approval), else ``None``."""
        ledger = self.ledger
        quota = ledger.quota(d.project_id)
        if quota.capability:
            used = ledger.project.get(d.project_id, {})
            key = over(used, d.usage, quota.capability)
            if key is not None:
                jobs, users = ledger.counts(key, d.project_id)
                return Hold("quota", self._base(d, position, held) | {
                    "resource": key, "limit": amount(key, quota.capability[key]),
                    "used": amount(key, used.get(key, 0)), "request": amount(key, d.usage[key]),
                    "jobs": jobs, "users": users})
        share = self.shares.get((d.project_id, d.user_id))
        if share:
            used = ledger.member(d.project_id, d.user_id)
            key = over(used, d.usage, share)
            if key is not None:
                jobs, _users = ledger.counts(key, d.project_id, d.user_id)
                return Hold("share", self._base(d, position, held) | {
                    "resource": key, "limit": amount(key, share[key]), "used": amount(key, used.get(key, 0)),
                    "request": amount(key, d.usage[key]), "jobs": jobs, "users": 1})
        limits = self.limits.get(d.user_id)
        if d.kind == "interactive" and limits is not None and limits.max_sessions is not None:
            used_sessions = ledger.sessions.get(d.user_id, 0)
            if used_sessions + 1 > limits.max_sessions:
                return Hold("sessions", self._base(d, position, held) | {
                    "limit": limits.max_sessions, "used": used_sessions})
        if d.approval_pending:
            return Hold("approval", self._base(d, position, held) | {"requested": devices(d.usage)})
        return None

    # -- a blocked head and the jobs behind it (EASY backfill) -------------------------------------------------
    def block(self, d: Demand, hold: Hold, position: int) -> _Blocked:
        """The reservation of ``d``, blocked by ``hold`` (``quota``: on its project's capability, from its
        project's admitted jobs; ``capacity``/``fairshare``: on the machine, from every admitted job)."""
        ledger = self.ledger
        lacking = dict(hold.args.get("request") or {})
        lend = self.reserve_for is None or d.project_id in self.reserve_for
        # The pass's first job blocked on the machine with an expected start guards every project - not one that even
        # the empty machine could not hold (capacity lost since it was submitted), nor one without an estimate (it
        # waits for jobs without a bound): either would hold everyone back for an unknown time.
        guard = (hold.code != "quota" and self.machine_head is None
                 and all(self.capacity.get(key, 0) >= value for key, value in d.usage.items()))
        if not lend and not guard:
            return _Blocked(d.key, d.project_id, position, hold.code, lacking, backfill.Reservation(None), lend=False)
        if hold.code == "quota":
            cap = ledger.quota(d.project_id).capability
            used = ledger.project.get(d.project_id, {})
            scope = frozenset(cap)
            free = {key: cap[key] - used.get(key, 0) for key in cap}
            mine = [h for h in self.holdings.get(d.project_id, ()) if h.key not in self.fair.taken]
            mine += [self._holding(a) for a in self._admitted if a.project_id == d.project_id]
        else:
            scope = frozenset(self.capacity)
            free = {key: self.capacity[key] - ledger.total.get(key, 0) - ledger.others_reserved(d, key)
                    for key in scope}
            mine = [h for h in self.holdings.get(MACHINE, ()) if h.key not in self.fair.taken]
            mine += [self._holding(a) for a in self._admitted]
        need = {key: value for key, value in d.usage.items() if value > 0 and key in scope}
        reservation = backfill.reserve(need, free, mine, self.now or datetime.min.replace(tzinfo=timezone.utc))
        if self.now is None:
            reservation = backfill.Reservation(None, reservation.extra, reservation.released)
        blocked = _Blocked(d.key, d.project_id, position, hold.code, lacking, reservation, scope, lend=lend)
        if guard and reservation.start_at is not None:
            self.machine_head = blocked  # computed even for a project outside reserve_for: it guards every project
        return blocked

    def _holding(self, d: Demand) -> backfill.Holding:
        ends = self.now + timedelta(seconds=d.bound_s) if self.now is not None and d.bound_s is not None else None
        return backfill.Holding(d.usage, ends, d.key)

    def estimate(self, head: _Blocked) -> dict:
        """The estimate arguments of a hold behind (or of) ``head``."""
        return backfill.estimate_args(head.reservation, self.now)

    def behind(self, d: Demand, position: int, held: int, head: _Blocked) -> Hold | None:
        """``d`` queued behind its project's blocked ``head``: its own hard limit first; else admitted when it fits
        now and cannot delay the head nor the pass's machine head (it ends by their shadow times, or takes only
        extra capacity in their scopes); else a ``queue`` hold naming the one it would delay (the head when it
        does not fit now)."""
        hold = self.hard_limits(d, position, held)
        if hold is not None:
            return hold
        blocker = head
        if head.lend and not self.ledger.shortfall(d, self.capacity):
            guards = self._guards(d, head)
            delayed = self._delayed(d, guards)
            if delayed is None:
                self._take(d, guards)
                return None
            blocker = delayed
        return self._queue_hold(d, position, held, blocker)

    def _queue_hold(self, d: Demand, position: int, held: int, blocker: _Blocked) -> Hold:
        """``d`` waits behind ``blocker`` (of its project, or of another: then ``blocker_project`` names it)."""
        args = self._base(d, position, held) | {
            "ahead": blocker.position, "blocker": blocker.code, "blocker_id": blocker.key,
            "blocker_request": blocker.lacking, **self.estimate(blocker)}
        if blocker.project_id != d.project_id:
            args["blocker_project"] = self.ledger.quota(blocker.project_id).name
        return Hold("queue", args)

    # -- capacity and fair share -----------------------------------------------------------------------------
    def capacity_hold(self, d: Demand, lack: dict[str, int], position: int, held: int) -> Hold:
        """The hold of ``d`` when the machine lacks ``lack`` (resource -> amount: millicores, bytes, devices) for it,
        at ``position`` of ``held`` in its queue: ``fairshare`` (with deserved, used and reclaimable numbers) when its
        project is below its deserved share on a lacking key, else ``capacity``."""
        ledger = self.ledger
        fair = self.fair.below_deserved(d, lack)
        covered = [key for key in sorted(lack) if ledger.covers(d.project_id, key)] if fair else []
        key = covered[0] if covered else sorted(lack)[0]
        jobs, users = ledger.counts(key)
        args = self._base(d, position, held) | {
            "resource": key, "limit": amount(key, self.capacity.get(key, 0)),
            "used": amount(key, ledger.total.get(key, 0)), "reserved": amount(key, ledger.others_reserved(d, key)),
            "request": amount(key, d.usage[key]), "jobs": jobs, "users": users,
        }
        if fair and self.capacity.get(key, 0) >= d.usage[key]:
            args |= {"deserved": amount(key, ledger.deserved(d.project_id, key)),
                     "project_used": amount(key, ledger.project.get(d.project_id, {}).get(key, 0)),
                     "reclaimable": amount(key, self.fair.reclaimable(d, key))}
            return Hold("fairshare", args)
        return Hold("capacity", args)
