"""When a running gang (every replica of a workload, started together) ends, and how (pure).

Given which replicas have ended and how, :func:`decide` says what the backend does next. The rules follow Volcano's
Job ``policies`` and its completion rule:

1. A replica that failed (non-zero exit, killed, or lost) under ``restart_policy``:
   ``fail`` (``PodFailed`` -> ``TerminateJob``): stop the others, the workload fails, naming that replica;
   ``restart`` (``PodFailed`` -> ``RestartJob``): stop every replica and start the whole gang again, at most
   ``max_retry`` times (then as ``fail``); ``ignore`` (no policy): carry on.
2. A task with ``ends_job`` (``TaskCompleted`` -> ``CompleteJob``: a PyTorch master, an MPI launcher) whose replicas
   have all ended ends the workload: the others are stopped; it succeeded when those replicas all exited 0.
3. Without one, the workload ends when every replica has: it succeeded when at least ``min_available`` replicas
   (the gang: all of them by default) exited 0, as Volcano completes a Job whose succeeded pods reach
   ``minAvailable``, else it failed, naming the first replica that failed.

Replicas are ``(task, index)``; tasks are given in order as ``(name, replicas, ends_job)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

#: what :func:`decide` may answer
WAIT, COMPLETE, ABORT, RESTART = "wait", "complete", "abort", "restart"


@dataclass(frozen=True)
class Verdict:
    """What to do: ``action`` one of :data:`WAIT` (nothing yet), :data:`COMPLETE` (stop the replicas still running;
    the workload ends as ``succeeded`` says), :data:`ABORT` (stop the others; it fails) or :data:`RESTART` (stop every
    replica, then start the gang again); ``replica`` the failed replica it names (``(task, index)``; ``None`` when
    none failed) and ``exit_code`` that replica's (``None``: lost without a status)."""

    action: str
    succeeded: bool = False
    replica: tuple[str, int] | None = None
    exit_code: int | None = None


def decide(tasks: Sequence[tuple[str, int, bool]], ended: Mapping[tuple[str, int], int | None], *,
           restart_policy: str = "fail", max_retry: int = 0, restarts: int = 0,
           min_available: int | None = None) -> Verdict:
    """The verdict for a running gang of ``tasks`` whose replicas in ``ended`` have ended (``(task, index)`` -> exit
    code, ``None`` for one lost without a status), ``restarts`` gang restarts done so far (see the module docstring).
    """
    order = [(name, i) for name, replicas, _ in tasks for i in range(replicas)]
    failed = [r for r in order if r in ended and ended[r] != 0]
    if failed and restart_policy != "ignore":
        first = failed[0]
        if restart_policy == "restart" and restarts < max_retry:
            return Verdict(RESTART, replica=first, exit_code=ended[first])
        return Verdict(ABORT, replica=first, exit_code=ended[first])
    enders = [name for name, _, ends in tasks if ends]
    for name in enders:
        mine = [r for r in order if r[0] == name]
        if all(r in ended for r in mine):
            bad = [r for r in mine if ended[r] != 0]
            if bad:
                return Verdict(COMPLETE, succeeded=False, replica=bad[0], exit_code=ended[bad[0]])
            return Verdict(COMPLETE, succeeded=True)
    if not enders and all(r in ended for r in order):
        ok = sum(1 for r in order if ended[r] == 0)
        needed = len(order) if min_available is None else min_available
        if ok >= needed:
            return Verdict(COMPLETE, succeeded=True)
        first = failed[0] if failed else None
        return Verdict(COMPLETE, succeeded=False, replica=first, exit_code=ended[first] if first else None)
    return Verdict(WAIT)
