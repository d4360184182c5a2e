"""Fair-share reclaim: which preemptible jobs of projects above their deserved share stop so that a held job of a
project below its share can start (the rules and their sources: the package docstring, step 3)."""

from __future__ import annotations

from collections import defaultdict

from crater_app.domain.admission.demands import Demand, Usage, key_order
from crater_app.domain.admission.ledger import Ledger
from crater_app.domain.admission.reasons import Preemption, amount


class Reclaim:
    """The reclaim part of one pass: the candidates (built on first use), the victims chosen (``taken``), the
    preemptions planned (``preempt``) and the projects whose usage they changed (``touched``, for the queue
    order). ``admitted`` is the pass's list of keys admitted so far (never candidates)."""

    def __init__(self, ledger: Ledger, capacity: Usage, admitted: list) -> None:
        self.ledger = ledger
        self.capacity = capacity
        self.admitted = admitted
        self._candidates: list[Demand] | None = None
        self.taken: set = set()
        self.preempt: list[Preemption] = []
        self.touched: set[int] = set()

    def candidates(self) -> list[Demand]:
        """Jobs that may be reclaimed, in victim order (lowest priority, then most recent first); built on the
        first reclaim of the pass, with the preemptible usage per project. Jobs admitted in this pass are not
        candidates."""
        if self._candidates is None:
            now = set(self.admitted)
            self._candidates = sorted(
                (d for d in self.ledger.admitted()
                 if d.preemptible and not d.reclaim_lock and d.count == 1 and d.key not in now),
                key=lambda d: (d.priority, -d.created_at.timestamp(), key_order(d.key)),
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
        for key, value in d.usage.items():
            if value > 0 and ledger.covers(pid, key) and ledger.excess(pid, key, value) > 0:
                return False
        return True

    def reclaimable(self, d: Demand, key: str) -> int:
        """Upper bound of ``key`` that preemptible jobs of other projects above their deserved share could free."""
        self.candidates()
        ledger = self.ledger
        return ledger.reclaimable.get(key, 0) - ledger.reclaimable_by.get(d.project_id, {}).get(key, 0)

    def plan(self, d: Demand, lack: dict[str, int]) -> bool:
        """Plan preemptions so that ``d`` fits; on success record them and return True, else change nothing."""
        if not self.below_deserved(d, lack) or not self.candidates():
            return False
        ledger = self.ledger
        claimed = [key for key in lack if ledger.covers(d.project_id, key)]  # what d's deserved share covers
        for key in claimed:
            if self.reclaimable(d, key) < lack[key]:
                return False
        chosen: list[tuple[Demand, str]] = []  # victim, the lacking key it frees
        for victim in self._candidates or ():
            if (victim.key in self.taken or victim.project_id == d.project_id
                    or victim.key not in ledger.jobs[victim.project_id]):
                continue
            frees = None
            for key in sorted(lack):
                value = victim.usage.get(key, 0)
                if value > 0:
                    if ledger.excess(victim.project_id, key) - value < 0:
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
        return Preemption(victim.key, d.key, args={
            "project": ledger.quota(victim.project_id).name, "beneficiary_project": ledger.quota(d.project_id).name,
            "resource": key, "used": amount(key, victim_used),
            "deserved": amount(key, ledger.deserved(victim.project_id, key)),
            "beneficiary_used": amount(key, ledger.project.get(d.project_id, {}).get(key, 0)),
            "beneficiary_deserved": amount(key, ledger.deserved(d.project_id, key)),
        })
