"""Admission: which held jobs may start, given project quotas, member shares, user limits, the machine's capacity
and fair share across projects.

Pure: no I/O, no clock. Units: ``cpu`` millicores, ``memory`` bytes, accelerators in devices. A *usage* is a dict
resource key -> integer amount, where a key is a resource name (``cpu``, ``memory``, ``nvidia.com/gpu``) or an
accelerator resource with a model after a colon (``nvidia.com/gpu:NVIDIA-A100-SXM4-80GB``). A job that asks for
``n`` devices of model ``M`` counts ``n`` towards ``nvidia.com/gpu`` AND ``nvidia.com/gpu:M``; a job without a model
counts only towards ``nvidia.com/gpu`` (see :func:`crater_app.domain.quota.usage_of`).

Semantics of :func:`decide` (one pass over the held jobs; admissions made during the pass count at once, so one
call never over-admits however many jobs are held):

1. **Hard limits** (checked first, per held job): the project's ``capability`` (admitted usage of the project plus
   the job <= capability, for every key the capability gives; Volcano ``capacity`` plugin, Kueue ClusterQueue
   ``borrowingLimit``), the member's ``share`` inside the project (same rule on the user's admitted usage in that
   project), the user's ``max_sessions`` (admitted ``interactive`` jobs of the user, all projects), and a pending
   approval. Hold codes ``quota``, ``share``, ``sessions``, ``approval``.
2. **Machine capacity**: the total admitted usage plus the job must fit ``capacity`` for every key the job asks
   for (a key absent from ``capacity`` is zero: the machine has none of it, e.g. no device of that model).
   The unused part of every *other* project's ``guarantee`` is reserved and never lent (Volcano ``capacity``
   plugin: a queue's guarantee is kept back from other queues). Hold code ``capacity``.
3. **Fair share when contended**: a project at or above its ``deserved`` may still use idle capacity (lending,
   Kueue cohort borrowing). When a held job does not fit the machine, its project may reclaim (Volcano
   ``capacity`` plugin ``reclaim`` action; Kueue ``preemption.reclaimWithinCohort: Any``) if its ``deserved``
   covers a key the machine lacks and, with the job added, the project stays within its ``deserved`` on every
   key of the job that ``deserved`` covers (Volcano compares only the dimensions ``deserved`` names:
   ``LessEqualWithDimension``). Victims are admitted, ``preemptible``, not ``reclaim_lock`` jobs of other
   projects that free a lacking key the beneficiary's ``deserved`` covers, taken lowest priority first, then most
   recent (``created_at`` latest) first (Kueue's candidate order), never bringing a victim's project below its
   ``deserved`` on a lacking key (a key absent from the victim's ``deserved`` counts as deserved 0); the set is
   then trimmed to the victims still needed, latest chosen first (Kueue's minimal preemption set). If the
   candidates cannot free enough, nothing is preempted and the job waits: code ``fairshare`` with the deserved,
   used and reclaimable numbers, or ``capacity`` when its project may not reclaim or the machine could not hold
   the job even empty. Non-preemptible jobs are never stopped. A job is never preempted for a job of its own
   project (Kueue ``withinClusterQueue: Never``; priority inside a project only orders its queue). The
   beneficiary is admitted in the same plan: the caller stops the victims in the same transaction, after which
   they no longer count. Jobs admitted in the same pass are not victims.
4. **Order**: projects furthest below their deserved share first, by dominant resource share (DRF): the largest
   ``admitted / deserved`` over the keys ``deserved`` gives (Volcano ``proportion`` plugin's queue order; 0/0 = 0
   as Volcano's ``api.Share``, but x/0 = infinity where Volcano says 1, so that a project deserving nothing and
   using something sorts after every project within its share), recomputed after every admission and
   preemption; ties by the head job's priority (higher first), ``created_at`` (older first), key. Inside a
   project the queue is strict (Kueue ``StrictFIFO``): a job held by ``quota``, ``capacity`` or ``fairshare``
   blocks the project's later jobs, which report their own hard limit if they break one, else code ``queue``;
   other projects go on (they may use what the blocked job could not). Per-user holds (``share``, ``sessions``,
   ``approval``) block nobody: the project's next job is considered.

A ``guarantee`` counts as deserved at least (Volcano requires ``guarantee <= deserved``; a project given only a
guarantee may reclaim up to it). ``deserved`` on a model key: when ``deserved`` gives ``nvidia.com/gpu`` but not
``nvidia.com/gpu:M``, the model's share is bounded by the generic key (a project deserving 4 GPUs deserves 4 of
any model).

Every :class:`Hold` carries its project queue ``position`` and ``held`` (jobs held in that project), and counts of
jobs and distinct users behind a usage (aggregates only, never names).
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from crater_app.domain.quota import devices, format_amount, is_accelerator, over, split_key

Usage = dict[str, int]


@dataclass(frozen=True)
class Demand:
    """One job as admission sees it. ``key``: the job id (or any hashable) ; ``usage``: what it holds/asks for;
    ``admitted``: already Queued/Running (holds its usage) vs Held (asks)."""

    key: object
    project_id: int
    user_id: int
    priority: int
    created_at: datetime
    usage: Usage
    kind: str = "batch"  # "interactive" jobs count towards the user's max_sessions
    preemptible: bool = False
    reclaim_lock: bool = False
    admitted: bool = False
    approval_pending: bool = False  # a large job waiting for approval: never admitted, explained as such
    # An *admitted* demand may stand for ``count`` jobs of the same project, user and kind, ``usage`` being their
    # total (the caller groups identical admitted jobs to pass fewer demands). Such a group is never a preemption
    # victim: pass preemptible jobs one by one. Held demands are one job each.
    count: int = 1


@dataclass(frozen=True)
class ProjectQuota:
    """A project's quota (Volcano Queue spec): ``guarantee`` reserved for it, ``deserved`` its fair share when the
    machine is contended, ``capability`` the hard ceiling (a key absent from ``capability`` = no ceiling)."""

    project_id: int
    name: str
    guarantee: Usage = field(default_factory=dict)
    deserved: Usage = field(default_factory=dict)
    capability: Usage = field(default_factory=dict)


@dataclass(frozen=True)
class UserLimits:
    """Per-user limits (``None`` = none): concurrent interactive sessions, devices per job, max_runtime seconds."""

    max_sessions: int | None = None
    max_accelerators_per_job: int | None = None
    max_runtime_s: int | None = None


@dataclass(frozen=True)
class Hold:
    """Why a job waits: ``code`` (``quota`` | ``share`` | ``sessions`` | ``capacity`` | ``fairshare`` |
    ``approval`` | ``queue``), ``args`` (str/int values for the translated sentence, e.g. resource, limit, used,
    jobs, users, position, held) and ``sentence`` (English, with the numbers).

    ``args`` always has ``project`` (name), ``position`` and ``held`` (ints: place in the project's queue, 1-based,
    and jobs held there). Per code, amounts are preformatted strings (``"4 × nvidia.com/gpu"``, ``"16.0 GiB"``):

    - ``quota``: ``resource``, ``limit`` (capability), ``used`` (project), ``request``, ``jobs``, ``users``.
    - ``share``: ``resource``, ``limit`` (the member's share), ``used`` (the user's), ``request``, ``jobs``.
    - ``sessions``: ``limit``, ``used`` (ints).
    - ``approval``: nothing more.
    - ``capacity``: ``resource``, ``limit`` (the machine's), ``used`` (all projects), ``reserved`` (other
      projects' unused guarantees), ``request``, ``jobs``, ``users``.
    - ``fairshare``: the ``capacity`` args plus ``deserved`` and ``project_used`` (the project's) and
      ``reclaimable`` (what preemptible jobs of projects above their deserved share could give back).
    - ``queue``: ``ahead`` (position of the held job that blocks it) and ``blocker`` (that job's code).
    """

    code: str
    args: dict
    sentence: str


@dataclass(frozen=True)
class Preemption:
    """Stop ``victim`` (a preemptible admitted job of a project above its deserved share) so that ``beneficiary``
    (a held job of a project below its deserved share) can start. ``sentence`` names both projects and numbers;
    ``code`` (``reclaim``) and ``args`` (``project`` the victim's, ``beneficiary_project``, ``resource``,
    ``used`` and ``deserved`` of the victim's project, ``beneficiary_used``, ``beneficiary_deserved``; amounts
    preformatted) are for the translated sentence."""

    victim: object
    beneficiary: object
    sentence: str
    code: str = "reclaim"
    args: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """Result of :func:`decide`: ``admit`` keys in admission order, ``hold`` key -> :class:`Hold` for every held
    demand not admitted, ``preempt`` the preemptions to carry out now."""

    admit: list
    hold: dict
    preempt: list


@dataclass(frozen=True)
class Refusal:
    """A job that can never be admitted: ``field`` (e.g. ``resources.nvidia.com/gpu``, ``max_runtime``) and the
    sentence with the numbers (limit and request)."""

    field: str
    sentence: str


def _resource_field(key: str) -> str:
    """The JobSpec field a usage key comes from (``nvidia.com/gpu:M`` -> ``resources.nvidia.com/gpu``)."""
    return f"resources.{split_key(key)[0]}"


def never_admissible(demand: Demand, quota: ProjectQuota, share: Usage, limits: UserLimits,
                     max_runtime_s: int | None) -> Refusal | None:
    """Whether ``demand`` exceeds a ceiling it could never get under: the project's capability, the member's
    ``share``, the user's max accelerators per job or max runtime. ``None`` when it could fit some day.

    Args:
        demand: the job (its ``usage``).
        quota: its project's quota; only ``capability`` matters here (an absent key has no ceiling).
        share: the member's share in the project (``{}`` = no limit; an absent key has no limit).
        limits: the user's limits; ``max_accelerators_per_job`` counts devices over all accelerator names (a
            model key repeats its name's devices and is not counted twice); ``max_runtime_s`` is the largest
            ``max_runtime`` the user may ask for.
        max_runtime_s: the job's ``max_runtime`` in seconds, ``None`` when it sets none (not refused here: the
            caller applies the user's limit as the default).

    Returns:
        :class:`Refusal` with ``field`` ``resources.<name>`` or ``max_runtime`` and a sentence giving limit and
        request, for the first ceiling broken in the order above; else ``None``.
    """
    for key in sorted(demand.usage):
        amount = demand.usage[key]
        if amount > 0 and key in quota.capability and amount > quota.capability[key]:
            return Refusal(
                _resource_field(key),
                f"This job asks for {format_amount(key, amount)} but project {quota.name} may use at most "
                f"{format_amount(key, quota.capability[key])} (its capability); it could never start.",
            )
    for key in sorted(demand.usage):
        amount = demand.usage[key]
        if amount > 0 and key in share and amount > share[key]:
            return Refusal(
                _resource_field(key),
                f"This job asks for {format_amount(key, amount)} but your share in project {quota.name} is "
                f"{format_amount(key, share[key])}; it could never start.",
            )
    count = devices(demand.usage)
    if limits.max_accelerators_per_job is not None and count > limits.max_accelerators_per_job:
        names = sorted(key for key in demand.usage if split_key(key)[1] is None and is_accelerator(key))
        return Refusal(
            _resource_field(names[0]) if names else "resources",
            f"This job asks for {count} accelerators; your limit is {limits.max_accelerators_per_job} per job.",
        )
    if limits.max_runtime_s is not None and max_runtime_s is not None and max_runtime_s > limits.max_runtime_s:
        return Refusal(
            "max_runtime",
            f"max_runtime is {_duration(max_runtime_s)} ({max_runtime_s} s); your limit is "
            f"{_duration(limits.max_runtime_s)} ({limits.max_runtime_s} s). Ask for an extension through an approval.",
        )
    return None


def _duration(seconds: int) -> str:
    """``90061`` -> ``1d1h1m1s`` (the JobSpec ``max_runtime`` notation)."""
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size or (unit == "s" and not parts):
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts)


def _key_order(key: object) -> tuple:
    """A total order over job keys of mixed types (ints by value, anything else by its text)."""
    return (0, key, "") if isinstance(key, int) else (1, 0, str(key))


def _share(used: int, deserved: int) -> float:
    """Volcano ``api.Share``-like ratio: 0/0 = 0, x/0 = infinity, else used/deserved."""
    if deserved <= 0:
        return 0.0 if used <= 0 else math.inf
    return used / deserved


class _Ledger:
    """Admitted usage during one :func:`decide` pass: per machine, project, member and user sessions, the reserved
    (unused) part of guarantees, and the jobs/users behind a usage for the hold sentences.

    Loading is one pass over the admitted jobs with plain dict updates (machine and project totals only); member
    usage and the per-key job/user counts are built on first use, for the keys and members asked about, and kept
    current from then on."""

    def __init__(self, quotas: dict[int, ProjectQuota]) -> None:
        self.quotas = quotas
        self.total: dict[str, int] = {}
        self.project: dict[int, dict[str, int]] = {}
        self.jobs: dict[int, dict[object, Demand]] = {}  # project -> admitted jobs by key
        self.sessions: dict[int, int] = {}
        self.reserved: dict[str, int] = {}
        # Filled by the first reclaim of the pass (see _Pass.candidates): preemptible usage per project, what of
        # it each project could give back (above its deserved share) and the sums of that per key.
        self.preemptible: dict[int, dict[str, int]] = {}
        self.reclaimable_by: dict[int, dict[str, int]] = {}
        self.reclaimable: dict[str, int] = {}
        self.reclaim_ready = False
        self._member: dict[tuple[int, int], dict[str, int]] = {}
        self._deserved: dict[int, Usage] = {}
        self._member_projects: set[int] = set()
        self._tally: dict[str, list] = {}  # key -> [jobs, {user: jobs}, distinct users] on the machine

    def quota(self, project_id: int) -> ProjectQuota:
        quota = self.quotas.get(project_id)
        return quota if quota is not None else ProjectQuota(project_id, str(project_id))

    def load(self, admitted: list[Demand]) -> None:
        """Count the already admitted jobs (per project; the machine totals are the projects' sums)."""
        project, jobs, sessions = self.project, self.jobs, self.sessions
        for d in admitted:
            pid = d.project_id
            used = project.get(pid)
            if used is None:
                used = project[pid] = {}
                jobs[pid] = {}
            jobs[pid][d.key] = d
            for key, amount in d.usage.items():
                used[key] = used.get(key, 0) + amount
            if d.kind == "interactive":
                sessions[d.user_id] = sessions.get(d.user_id, 0) + d.count
        total = self.total
        for used in project.values():
            for key, amount in used.items():
                total[key] = total.get(key, 0) + amount
        reserved = self.reserved
        for project_id, quota in self.quotas.items():
            if quota.guarantee:
                used = project.get(project_id, {})
                for key, amount in quota.guarantee.items():
                    free = amount - used.get(key, 0)
                    if free > 0:
                        reserved[key] = reserved.get(key, 0) + free

    def admitted(self):
        """Every admitted job (an iterator)."""
        for jobs in self.jobs.values():
            yield from jobs.values()

    def _guarantee_term(self, project_id: int, sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) the project's unused guarantee from the reserved totals."""
        used = self.project.get(project_id, {})
        for key, amount in self.quota(project_id).guarantee.items():
            free = amount - used.get(key, 0)
            if free > 0:
                self.reserved[key] = self.reserved.get(key, 0) + sign * free

    def add(self, d: Demand) -> None:
        """Admit ``d`` (it is no reclaim candidate in this pass)."""
        self._change(d, 1)

    def remove(self, d: Demand, candidate: bool) -> None:
        """Take ``d``'s usage back (a victim); ``candidate``: it was counted as reclaimable."""
        self._change(d, -1)
        if candidate:
            self._preemptible(d, -1)

    def restore(self, d: Demand) -> None:
        """Undo :meth:`remove` of a reclaim candidate (a reclaim plan that did not free enough)."""
        self._change(d, 1)
        self._preemptible(d, 1)

    def _preemptible(self, d: Demand, sign: int) -> None:
        p = self.preemptible.setdefault(d.project_id, {})
        for key, amount in d.usage.items():
            p[key] = p.get(key, 0) + sign * amount
        self._refresh(d.project_id)

    def start_reclaim(self, candidates: list[Demand]) -> None:
        """Count the preemptible usage of ``candidates`` per project and what each project could give back; kept
        current from then on by every change."""
        for d in candidates:
            p = self.preemptible.setdefault(d.project_id, {})
            for key, amount in d.usage.items():
                p[key] = p.get(key, 0) + amount
        self.reclaim_ready = True
        for project_id in self.preemptible:
            self._refresh(project_id)

    def _refresh(self, project_id: int) -> None:
        """Recompute what the project could give back per key: min(preemptible usage, usage above deserved)."""
        if not self.reclaim_ready:
            return
        new: dict[str, int] = {}
        for key, amount in self.preemptible.get(project_id, {}).items():
            if amount > 0:
                excess = self.excess(project_id, key)
                if excess > 0:
                    new[key] = min(amount, excess)
        total = self.reclaimable
        for key, amount in self.reclaimable_by.get(project_id, {}).items():
            total[key] -= amount
        for key, amount in new.items():
            total[key] = total.get(key, 0) + amount
        self.reclaimable_by[project_id] = new

    def _change(self, d: Demand, sign: int) -> None:
        pid = d.project_id
        has_guarantee = bool(self.quota(pid).guarantee)
        if has_guarantee:
            self._guarantee_term(pid, -1)
        used = self.project.setdefault(pid, {})
        jobs = self.jobs.setdefault(pid, {})
        if sign > 0:
            jobs[d.key] = d
        else:
            jobs.pop(d.key, None)
        mine = self._member.setdefault((pid, d.user_id), {}) if pid in self._member_projects else None
        for key, amount in d.usage.items():
            self.total[key] = self.total.get(key, 0) + sign * amount
            used[key] = used.get(key, 0) + sign * amount
            if mine is not None:
                mine[key] = mine.get(key, 0) + sign * amount
            tally = self._tally.get(key)
            if tally is not None and amount > 0:
                self._count(tally, d.user_id, sign * d.count)
        if has_guarantee:
            self._guarantee_term(pid, 1)
        if d.kind == "interactive":
            self.sessions[d.user_id] = self.sessions.get(d.user_id, 0) + sign * d.count
        self._refresh(pid)

    @staticmethod
    def _count(tally: list, user_id: int, jobs: int) -> None:
        """Add ``jobs`` (negative: take away) jobs of ``user_id`` to a ``[jobs, {user: jobs}, users]`` tally."""
        tally[0] += jobs
        per_user = tally[1]
        before = per_user.get(user_id, 0)
        per_user[user_id] = before + jobs
        if before <= 0 < before + jobs:
            tally[2] += 1
        elif before > 0 >= before + jobs:
            tally[2] -= 1

    def member(self, project_id: int, user_id: int) -> dict[str, int]:
        """The admitted usage of ``user_id`` in ``project_id``."""
        if project_id not in self._member_projects:  # every member of the project at once: O(its jobs)
            self._member_projects.add(project_id)
            for d in self.jobs.get(project_id, {}).values():
                mine = self._member.setdefault((project_id, d.user_id), {})
                for key, amount in d.usage.items():
                    mine[key] = mine.get(key, 0) + amount
        return self._member.setdefault((project_id, user_id), {})

    def counts(self, key: str, project_id: int | None = None, user_id: int | None = None) -> tuple[int, int]:
        """(jobs, distinct users) holding some ``key``: on the machine, in a project, or of one user there."""
        if project_id is None:
            tally = self._tally.get(key)
            if tally is None:
                tally = self._tally[key] = [0, {}, 0]
                for d in self.admitted():
                    if d.usage.get(key, 0) > 0:
                        self._count(tally, d.user_id, d.count)
            return tally[0], tally[2]
        holders = [d for d in self.jobs.get(project_id, {}).values()
                   if d.usage.get(key, 0) > 0 and (user_id is None or d.user_id == user_id)]
        return sum(d.count for d in holders), len({d.user_id for d in holders})

    def deserved_list(self, project_id: int) -> Usage:
        """The project's deserved share with its guarantee filled in (a guarantee is deserved at least)."""
        merged = self._deserved.get(project_id)
        if merged is None:
            quota = self.quota(project_id)
            merged = quota.deserved
            if quota.guarantee:
                merged = dict(merged)
                for key, amount in quota.guarantee.items():
                    if merged.get(key, -1) < amount:
                        merged[key] = amount
            self._deserved[project_id] = merged
        return merged

    def deserved(self, project_id: int, key: str) -> int:
        """The project's deserved amount of ``key`` (a model key absent falls back to its generic key; else 0)."""
        deserved = self.deserved_list(project_id)
        if key in deserved:
            return deserved[key]
        base, model = split_key(key)
        return deserved.get(base, 0) if model is not None else 0

    def covers(self, project_id: int, key: str) -> bool:
        """True when the project's ``deserved`` speaks about ``key`` (itself, or its generic key for a model key)."""
        deserved = self.deserved_list(project_id)
        if key in deserved:
            return True
        base, model = split_key(key)
        return model is not None and base in deserved

    def excess(self, project_id: int, key: str, extra: int = 0) -> int:
        """How much of ``key`` the project holds (plus ``extra``) above its deserved share; <= 0 when within it.
        A model key absent from ``deserved`` is bounded through its generic key (see the module docstring)."""
        deserved = self.deserved_list(project_id)
        used = self.project.get(project_id, {})
        if key in deserved:
            return used.get(key, 0) + extra - deserved[key]
        base, model = split_key(key)
        if model is not None and base in deserved:
            return min(used.get(key, 0) + extra, used.get(base, 0) + extra - deserved[base])
        return used.get(key, 0) + extra

    def dominant_share(self, project_id: int) -> float:
        """DRF share of the project: max over its deserved keys of admitted/deserved (Volcano ``proportion``)."""
        deserved = self.deserved_list(project_id)
        used = self.project.get(project_id)
        if not deserved:
            return math.inf if used and any(v > 0 for v in used.values()) else 0.0
        if not used:
            return 0.0
        return max(_share(used.get(key, 0), amount) for key, amount in deserved.items())

    def shortfall(self, d: Demand, capacity: Usage) -> dict[str, int]:
        """Per key, how much the machine lacks for ``d``: total + others' reserved guarantee + demand - capacity."""
        out: dict[str, int] = {}
        guarantee = self.quota(d.project_id).guarantee
        used = self.project.get(d.project_id, {})
        for key, amount in d.usage.items():
            if amount <= 0:
                continue
            reserved = self.reserved.get(key, 0)
            if reserved and key in guarantee:
                own = guarantee[key] - used.get(key, 0)
                if own > 0:
                    reserved -= own
            lack = self.total.get(key, 0) + reserved + amount - capacity.get(key, 0)
            if lack > 0:
                out[key] = lack
        return out

    def others_reserved(self, d: Demand, key: str) -> int:
        reserved = self.reserved.get(key, 0)
        guarantee = self.quota(d.project_id).guarantee
        if key in guarantee:
            own = guarantee[key] - self.project.get(d.project_id, {}).get(key, 0)
            if own > 0:
                reserved -= own
        return max(reserved, 0)


def _order(d: Demand) -> tuple:
    return (-d.priority, d.created_at, _key_order(d.key))


def decide(demands: list[Demand], quotas: dict[int, ProjectQuota], shares: dict[tuple[int, int], Usage],
           limits: dict[int, UserLimits], capacity: Usage) -> Plan:
    """Decide admissions for every held demand in ``demands`` given the admitted ones, the project quotas,
    member shares ((project_id, user_id) -> usage ceiling), user limits and the machine's total ``capacity``.

    The rules, their order and their sources are in the module docstring. A project absent from ``quotas`` has no
    ceiling, no guarantee and deserves nothing; a member absent from ``shares`` (or ``{}``) has no share limit; a
    user absent from ``limits`` has none.

    Returns:
        :class:`Plan`: ``admit`` held keys in the order admitted; ``hold`` a :class:`Hold` for every other held
        key; ``preempt`` victims to stop now (each admitted key appears at most once as a victim).

    Cost: O(A + H log H) for A admitted and H held jobs (plus the projects with a guarantee); the first reclaim
    of a pass sorts the C preemptible jobs (O(C log C)), and each reclaim walks them once (O(C)). Hold sentences
    count the jobs and users behind a usage once per resource key (O(A)), then incrementally. Only admitted and
    held jobs should be passed: finished ones play no part. Measured by ``bench/admission_pure.py``.
    """
    admitted: list[Demand] = []
    held: defaultdict[int, list[Demand]] = defaultdict(list)
    for d in demands:
        if d.admitted:
            admitted.append(d)
        else:
            held[d.project_id].append(d)
    ledger = _Ledger(quotas)
    ledger.load(admitted)
    for queue in held.values():
        queue.sort(key=_order)

    ctx = _Pass(ledger, shares, limits, capacity)
    heap: list[tuple] = []
    nxt: dict[int, int] = {}
    for project_id, queue in held.items():
        nxt[project_id] = 0
        heapq.heappush(heap, (ledger.dominant_share(project_id), *_order(queue[0]), project_id, 0))
    version: defaultdict[int, int] = defaultdict(int)
    while heap:
        _share_, _p, _c, _k, project_id, ver = heapq.heappop(heap)
        if ver != version[project_id]:
            continue
        queue = held[project_id]
        i = nxt[project_id]
        d = queue[i]
        outcome = ctx.consider(d, i + 1, len(queue))
        if outcome is not None and outcome.code in _BLOCKING:
            ctx.hold[d.key] = outcome
            for j in range(i + 1, len(queue)):
                ctx.hold[queue[j].key] = ctx.behind(queue[j], j + 1, len(queue), i + 1, outcome.code)
            nxt[project_id] = len(queue)
            continue
        if outcome is not None:
            ctx.hold[d.key] = outcome
        nxt[project_id] = i + 1
        for victim_project in ctx.touched:
            if victim_project != project_id and nxt.get(victim_project, 0) < len(held.get(victim_project, ())):
                version[victim_project] += 1
                head = held[victim_project][nxt[victim_project]]
                heapq.heappush(heap, (ledger.dominant_share(victim_project), *_order(head), victim_project,
                                      version[victim_project]))
        ctx.touched.clear()
        if i + 1 < len(queue):
            version[project_id] += 1
            heapq.heappush(heap, (ledger.dominant_share(project_id), *_order(queue[i + 1]), project_id,
                                  version[project_id]))
    return Plan(admit=ctx.admit, hold=ctx.hold, preempt=ctx.preempt)


_BLOCKING = frozenset({"quota", "capacity", "fairshare"})


class _Pass:
    """The mutable part of one :func:`decide` call: checks one held job at a time against the ledger."""

    def __init__(self, ledger: _Ledger, shares, limits, capacity: Usage) -> None:
        self.ledger = ledger
        self.shares = shares
        self.limits = limits
        self.capacity = capacity
        self._candidates: list[Demand] | None = None
        self.taken: set = set()
        self.admit: list = []
        self.hold: dict = {}
        self.preempt: list[Preemption] = []
        self.touched: set[int] = set()

    # -- one job -----------------------------------------------------------------------------------------------
    def consider(self, d: Demand, position: int, held: int) -> Hold | None:
        """Admit ``d`` (returns ``None``) or say why it waits."""
        hold = self.hard_limits(d, position, held)
        if hold is not None:
            return hold
        lack = self.ledger.shortfall(d, self.capacity)
        if not lack:
            self.ledger.add(d)
            self.admit.append(d.key)
            return None
        if self.reclaim(d, lack):
            self.ledger.add(d)
            self.admit.append(d.key)
            return None
        return self.capacity_hold(d, lack, position, held)

    def _base(self, d: Demand, position: int, held: int) -> dict:
        return {"project": self.ledger.quota(d.project_id).name, "position": position, "held": held}

    @staticmethod
    def _where(args: dict) -> str:
        return f"Position {args['position']} of {args['held']} held in project {args['project']}."

    def hard_limits(self, d: Demand, position: int, held: int) -> Hold | None:
        """The first hard limit ``d`` breaks now (capability, member share, sessions, approval), else ``None``."""
        ledger = self.ledger
        quota = ledger.quota(d.project_id)
        if quota.capability:
            used = ledger.project.get(d.project_id, {})
            key = over(used, d.usage, quota.capability)
            if key is not None:
                jobs, users = ledger.counts(key, d.project_id)
                args = self._base(d, position, held) | {
                    "resource": key, "limit": format_amount(key, quota.capability[key]),
                    "used": format_amount(key, used.get(key, 0)), "request": format_amount(key, d.usage[key]),
                    "jobs": jobs, "users": users,
                }
                return Hold("quota", args, (
                    f"Held by the quota of project {args['project']}: its capability is {args['limit']}, "
                    f"{args['used']} in use by {_n(jobs, 'job')} of {_n(users, 'user')}, and this job asks for "
                    f"{args['request']}. " + self._where(args)))
        share = self.shares.get((d.project_id, d.user_id))
        if share:
            used = ledger.member(d.project_id, d.user_id)
            key = over(used, d.usage, share)
            if key is not None:
                jobs, _users = ledger.counts(key, d.project_id, d.user_id)
                args = self._base(d, position, held) | {
                    "resource": key, "limit": format_amount(key, share[key]),
                    "used": format_amount(key, used.get(key, 0)), "request": format_amount(key, d.usage[key]),
                    "jobs": jobs, "users": 1,
                }
                return Hold("share", args, (
                    f"Held by your share in project {args['project']}: {args['limit']}, of which {args['used']} "
                    f"is in use by {_n(jobs, 'job')} of yours, and this job asks for {args['request']}. "
                    + self._where(args)))
        limits = self.limits.get(d.user_id)
        if d.kind == "interactive" and limits is not None and limits.max_sessions is not None:
            used_sessions = ledger.sessions.get(d.user_id, 0)
            if used_sessions + 1 > limits.max_sessions:
                args = self._base(d, position, held) | {"limit": limits.max_sessions, "used": used_sessions}
                return Hold("sessions", args, (
                    f"Held: you have {_n(used_sessions, 'interactive session')} running and your limit is "
                    f"{limits.max_sessions}; it starts when one ends. " + self._where(args)))
        if d.approval_pending:
            args = self._base(d, position, held)
            return Hold("approval", args, (
                "Waiting for approval: jobs of this size need an administrator's approval before they start. "
                + self._where(args)))
        return None

    def behind(self, d: Demand, position: int, held: int, ahead: int, blocker: str) -> Hold:
        """Hold for a job queued behind a blocked job of its project (its own hard limit first, if any)."""
        hold = self.hard_limits(d, position, held)
        if hold is not None:
            return hold
        args = self._base(d, position, held) | {"ahead": ahead, "blocker": blocker}
        return Hold("queue", args, (
            f"Waiting in the queue of project {args['project']}: position {position} of {held}; the job at position "
            f"{ahead} is held ({blocker}) and jobs of a project start in order."))

    # -- capacity and fair share -----------------------------------------------------------------------------
    def candidates(self) -> list[Demand]:
        """Jobs that may be reclaimed, in victim order (lowest priority, then most recent first); built on the
        first reclaim of the pass, with the preemptible usage per project. Jobs admitted in this pass are not
        candidates."""
        if self._candidates is None:
            now = set(self.admit)
            self._candidates = sorted(
                (d for d in self.ledger.admitted()
                 if d.preemptible and not d.reclaim_lock and d.count == 1 and d.key not in now),
                key=lambda d: (d.priority, -d.created_at.timestamp(), _key_order(d.key)),
            )
            self.ledger.start_reclaim(self._candidates)
        return self._candidates

    def below_deserved(self, d: Demand, lack: dict[str, int]) -> bool:
        """True when ``d``'s project may reclaim for ``d``: its ``deserved`` covers some key the machine lacks,
        and with ``d`` added it stays within its deserved share on every key of ``d`` that ``deserved`` covers."""
        ledger = self.ledger
        pid = d.project_id
        if not ledger.deserved_list(pid) or not any(ledger.covers(pid, key) for key in lack):
            return False
        for key, amount in d.usage.items():
            if amount > 0 and ledger.covers(pid, key) and ledger.excess(pid, key, amount) > 0:
                return False
        return True

    def reclaimable(self, d: Demand, key: str) -> int:
        """Upper bound of ``key`` that preemptible jobs of other projects above their deserved share could free."""
        self.candidates()
        ledger = self.ledger
        return ledger.reclaimable.get(key, 0) - ledger.reclaimable_by.get(d.project_id, {}).get(key, 0)

    def reclaim(self, d: Demand, lack: dict[str, int]) -> bool:
        """Plan preemptions so that ``d`` fits; on success record them and return True, else change nothing."""
        if not self.below_deserved(d, lack) or not self.candidates():
            return False
        ledger = self.ledger
        claimed = [key for key in lack if ledger.covers(d.project_id, key)]  # what d's deserved share covers
        for key in claimed:
            if self.reclaimable(d, key) < lack[key]:
                return False
        chosen: list[tuple[Demand, str]] = []  # victim, the lacking key it frees
        for victim in self._candidates:
            if (victim.key in self.taken or victim.project_id == d.project_id
                    or victim.key not in ledger.jobs[victim.project_id]):
                continue
            frees = None
            for key in sorted(lack):
                amount = victim.usage.get(key, 0)
                if amount > 0:
                    if ledger.excess(victim.project_id, key) - amount < 0:
                        frees = None  # it would bring its project below its deserved share
                        break
                    if frees is None and key in claimed:
                        frees = key
            if frees is None:
                continue
            chosen.append((victim, frees))
            ledger.remove(victim, candidate=True)
            lack = ledger.shortfall(d, self.capacity)
            if not lack:
                break
        if lack:
            for victim, _key in chosen:
                ledger.restore(victim)
            return False
        # Keep only what is needed: give back, latest chosen first, each victim the job fits without (as Kueue's
        # minimal preemption set does).
        for victim, key in reversed(chosen[:-1]):
            ledger.restore(victim)
            if ledger.shortfall(d, self.capacity):
                ledger.remove(victim, candidate=True)
            else:
                chosen.remove((victim, key))
        before: defaultdict[tuple[int, str], int] = defaultdict(int)
        for victim, key in chosen:
            before[(victim.project_id, key)] += victim.usage.get(key, 0)
        for victim, key in chosen:
            self.taken.add(victim.key)
            self.touched.add(victim.project_id)
            used = ledger.project.get(victim.project_id, {}).get(key, 0) + before[(victim.project_id, key)]
            self.preempt.append(self._preemption(victim, d, key, used))
        return True

    def _preemption(self, victim: Demand, d: Demand, key: str, victim_used: int) -> Preemption:
        ledger = self.ledger
        owner = ledger.quota(victim.project_id)
        beneficiary = ledger.quota(d.project_id)
        args = {
            "project": owner.name, "beneficiary_project": beneficiary.name, "resource": key,
            "used": format_amount(key, victim_used),
            "deserved": format_amount(key, ledger.deserved(victim.project_id, key)),
            "beneficiary_used": format_amount(key, ledger.project.get(d.project_id, {}).get(key, 0)),
            "beneficiary_deserved": format_amount(key, ledger.deserved(d.project_id, key)),
        }
        return Preemption(victim.key, d.key, (
            f"Preempted to return capacity to project {beneficiary.name}, below its deserved share "
            f"({args['beneficiary_used']} in use of {args['beneficiary_deserved']} deserved): project {owner.name} "
            f"held {args['used']} with {args['deserved']} deserved, and this job was preemptible."), args=args)

    def capacity_hold(self, d: Demand, lack: dict[str, int], position: int, held: int) -> Hold:
        ledger = self.ledger
        fair = self.below_deserved(d, lack)
        covered = [key for key in sorted(lack) if ledger.covers(d.project_id, key)] if fair else []
        key = covered[0] if covered else sorted(lack)[0]
        jobs, users = ledger.counts(key)
        reserved = ledger.others_reserved(d, key)
        args = self._base(d, position, held) | {
            "resource": key, "limit": format_amount(key, self.capacity.get(key, 0)),
            "used": format_amount(key, ledger.total.get(key, 0)), "reserved": format_amount(key, reserved),
            "request": format_amount(key, d.usage[key]), "jobs": jobs, "users": users,
        }
        in_use = (f"the machine has {args['limit']}, {args['used']} in use by {_n(jobs, 'job')} of "
                  f"{_n(users, 'user')}" + (f" and {args['reserved']} kept for other projects' guarantees"
                                             if reserved else ""))
        if fair and self.capacity.get(key, 0) >= d.usage[key]:
            project_used = ledger.project.get(d.project_id, {}).get(key, 0)
            deserved = ledger.deserved(d.project_id, key)
            args |= {"deserved": format_amount(key, deserved), "project_used": format_amount(key, project_used),
                     "reclaimable": format_amount(key, self.reclaimable(d, key))}
            return Hold("fairshare", args, (
                f"Waiting for the deserved share of project {args['project']} ({args['project_used']} in use of "
                f"{args['deserved']}): {in_use}; only {args['reclaimable']} can be reclaimed from preemptible jobs "
                f"of projects above their deserved share, and this job asks for {args['request']}. "
                + self._where(args)))
        return Hold("capacity", args, (
            f"Waiting for capacity: {in_use}, and this job asks for {args['request']}. " + self._where(args)))


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
