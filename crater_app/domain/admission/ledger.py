"""The ledger of one admission pass: admitted usage per machine, project, member and user sessions, reserved
guarantees, what preemptible jobs could give back, and the counts behind a usage (for the reasons)."""

from __future__ import annotations

import math

from crater_app.domain.admission.demands import Demand, ProjectQuota, Usage, share_ratio
from crater_app.domain.quota import split_key


class Ledger:
    """Admitted usage during one :func:`~crater_app.domain.admission.decide` pass: per machine, project, member and
    user sessions, the reserved (unused) part of guarantees, and the jobs/users behind a usage for the reasons.

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
        # Filled by the first reclaim of the pass (see Pass.candidates): preemptible usage per project, what of
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
        return max(share_ratio(used.get(key, 0), amount) for key, amount in deserved.items())

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
