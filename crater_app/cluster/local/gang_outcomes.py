"""What the local backend says about a gang of several replicas as it ends (statuses as catalogue codes of
``i18n/replicas/``; pure).

When :func:`crater_app.domain.gang.decide` ends a gang while some replicas still run, the workload is ``Stopping``
with stop reason :data:`STOP_GANG` (:data:`STOP_RESTART` for a restart, raw state ``Restarting``) and the verdict kept
in its stop arguments (:func:`verdict_args`); once the last replica has exited :func:`final` gives its end.
"""

from __future__ import annotations

from crater_app.cluster.local.outcomes import Outcome, say
from crater_app.cluster.local.store import FAILED, SUCCEEDED
from crater_app.domain.gang import ABORT, COMPLETE, RESTART, Verdict

#: stop reasons (column ``stop_reason``) of a gang whose verdict stops its other replicas, or restarts it
STOP_GANG, STOP_RESTART = "GangEnded", "Restarting"
#: the phase of a replica that Crater stopped (its gang ended, a cancel, a deadline), beside Succeeded/Failed of one
#: that ended on its own
STOPPED = "Stopped"


def stopped_reason(stop_reason: str, stop_args: dict) -> str:
    """The reason (CamelCase) of a replica stopped by Crater while its workload's stop was ``stop_reason`` (column
    ``stop_reason``; ``stop_args`` its arguments): ``GangEnded`` when an ``ends_job`` task's end (or every needed
    replica's success) ended the gang, ``ReplicaFailed`` when another replica's failure did, ``Restarting`` for a
    gang restart, else the stop reason itself (``Cancelled``, ``DeadlineExceeded``)."""
    if stop_reason == STOP_GANG:
        verdict = verdict_of(stop_args)
        return "GangEnded" if verdict.action == COMPLETE and verdict.succeeded else "ReplicaFailed"
    return stop_reason


def verdict_args(verdict: Verdict) -> dict:
    """``verdict`` as the JSON object kept in ``stop_args``."""
    return {"action": verdict.action, "succeeded": verdict.succeeded,
            "task": verdict.replica[0] if verdict.replica else None,
            "replica": verdict.replica[1] if verdict.replica else None, "exit_code": verdict.exit_code}


def verdict_of(args: dict) -> Verdict:
    """The inverse of :func:`verdict_args`."""
    task, index = args.get("task"), args.get("replica")
    return Verdict(args.get("action", ABORT), bool(args.get("succeeded")),
                   (task, index) if task is not None and index is not None else None, args.get("exit_code"))


def stopping(verdict: Verdict, ender: str | None, restart: int = 0, max_retry: int = 0) -> tuple[str, dict]:
    """``(reason, message columns)`` of a gang being stopped for ``verdict`` (``ender``: the task whose end ends the
    workload, if one does; ``restart`` the restart this stop leads to)."""
    task, index = verdict.replica or ("", 0)
    if verdict.action == RESTART:
        return "Restarting", say("replicas.restarting", restart=restart, max_retry=max_retry, task=task,
                                 replica=index, exit_code=verdict.exit_code)
    if verdict.action == COMPLETE and verdict.succeeded:
        return "TaskCompleted", say("replicas.stopping_completed", task=ender or "")
    if verdict.replica is not None and verdict.exit_code is None:
        return "ReplicaFailed", say("replicas.stopping_lost", task=task, replica=index)
    return "ReplicaFailed", say("replicas.stopping_failed", task=task, replica=index, exit_code=verdict.exit_code)


def restart_marker(verdict: Verdict, restart: int, max_retry: int) -> str:
    """The line written into every replica's log as the gang starts again (logs are not UI text: English), e.g.
    ``--- crater: restart 1 of 2 (replica worker-1 exited with code 3) ---``."""
    task, index = verdict.replica or ("", 0)
    if verdict.replica is None:
        why = "too few replicas succeeded"
    elif verdict.exit_code is None:
        why = f"replica {task}-{index} ended without an exit status"
    else:
        why = f"replica {task}-{index} exited with code {verdict.exit_code}"
    return f"--- crater: restart {restart} of {max_retry} ({why}) ---\n"


def final(verdict: Verdict, records: list[dict], ender: str | None, needed: int) -> Outcome:
    """The end of a gang whose replicas (``records``, see :mod:`~crater_app.cluster.local.replicas`) have all exited,
    as ``verdict`` decided (``ender`` as for :func:`stopping`; ``needed`` the replicas that had to succeed)."""
    if verdict.action == COMPLETE and verdict.succeeded:
        if ender:
            return Outcome(SUCCEEDED, "Completed", say("replicas.task_completed", task=ender), 0, None)
        ok = sum(1 for r in records if r.get("exit_code") == 0)
        return Outcome(SUCCEEDED, "Completed", say("replicas.completed", replicas=len(records), succeeded=ok), 0, None)
    if verdict.replica is None:
        ok = sum(1 for r in records if r.get("exit_code") == 0)
        return Outcome(FAILED, "Error", say("replicas.too_few_succeeded", replicas=len(records), succeeded=ok,
                                            needed=needed), None, None)
    task, index = verdict.replica
    record = next((r for r in records if (r["task"], r["replica"]) == (task, index)), {})
    if verdict.exit_code is None:
        return Outcome(FAILED, "ProcessLost", say("replicas.lost", task=task, replica=index), None, None)
    return Outcome(FAILED, record.get("reason") or "Error",
                   say("replicas.failed", task=task, replica=index, exit_code=verdict.exit_code),
                   verdict.exit_code, record.get("exit_signal"))
