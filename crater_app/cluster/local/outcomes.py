"""What the local backend says about a workload: each status as a catalogue code and its arguments (pure).

Every status the backend reports carries ``code``/``args`` (``event.<code>`` in ``i18n/local/``) and ``message``,
the same sentence in English. :func:`finished` turns what a workload's end left behind (the runner's exit status,
the stop that was asked for, the OOM kills its cgroup counted, the limits it ran under) into its final status.
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass, field

from crater_app import i18n
from crater_app.cluster.local.processes import ExitStatus
from crater_app.cluster.local.store import CANCELLED, FAILED, SUCCEEDED

#: the stop reasons a workload can carry while it is Stopping (column ``stop_reason``)
STOP_CANCELLED, STOP_DEADLINE = "Cancelled", "DeadlineExceeded"
#: the exit code a shell reports for a process killed by signal ``n`` is ``SIGNAL_BASE + n``
SIGNAL_BASE = 128


def english(code: str, args: dict) -> str:
    """The status sentence ``event.<code>`` in English."""
    return i18n.render(i18n.DEFAULT_LANGUAGE, f"event.{code}", args, fallback=code)


def say(code: str, **args: object) -> dict[str, str]:
    """The store columns of a status message: ``code``, ``args`` (JSON text) and ``message`` (English)."""
    return {"code": code, "args": json.dumps(args), "message": english(code, args)}


def cancelled(reason: str, code: str = "", args: dict | None = None) -> dict[str, str]:
    """The store columns of a ``Cancelled`` status: the cancel's ``code`` and ``args`` as the services gave them
    (``job.cancelled_by`` with the ``user``), with ``reason`` as the English message (rendered from the code when it
    is empty); ``local.cancelled_because`` with ``reason`` for a cancel that came without a code, and
    ``local.cancelled`` for one without either."""
    if code:
        args = dict(args or {})
        return {"code": code, "args": json.dumps(args), "message": reason or english(code, args)}
    if reason:
        return say("local.cancelled_because", reason=reason)
    return say("local.cancelled")


def signal_name(number: int) -> str:
    """The name of signal ``number`` as Python's :class:`signal.Signals` has it (``9`` -> ``SIGKILL``), or
    ``signal N`` for a number this system does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def enforcement_text(enforced_by: dict[str, str]) -> str:
    """How the limits are enforced, as identifiers (``cgroup v1 (memory, cpu, pids)``, ``RLIMIT_DATA (memory)``;
    ``-`` when nothing is), grouped by mechanism in the order resources were given."""
    groups: dict[str, list[str]] = {}
    for resource, mechanism in enforced_by.items():
        groups.setdefault(mechanism, []).append(resource)
    return ", ".join(f"{mechanism} ({', '.join(names)})" for mechanism, names in groups.items()) or "-"


@dataclass(frozen=True)
class Limits:
    """The limits one workload runs under: ``amounts`` in Crater's units (``memory`` bytes, ``cpu`` millicores,
    ``pids`` processes) and ``enforced_by`` resource -> mechanism (``cgroup v1``, ``cgroup v2``, ``RLIMIT_DATA``).
    Kept with the workload (column ``limits``) to explain its end."""

    amounts: dict[str, int] = field(default_factory=dict)
    enforced_by: dict[str, str] = field(default_factory=dict)
    cgroup: dict | None = None

    def to_json(self) -> str:
        """The JSON text kept in the store."""
        return json.dumps({"amounts": self.amounts, "enforced_by": self.enforced_by, "cgroup": self.cgroup})

    @classmethod
    def from_json(cls, raw: str | None) -> Limits:
        """The inverse of :meth:`to_json` (empty limits for anything else)."""
        try:
            data = json.loads(raw or "{}")
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        return cls(dict(data.get("amounts") or {}), dict(data.get("enforced_by") or {}), data.get("cgroup"))


def started(node: str, devices: tuple[int, ...], trust: str, account: str, uid: int, limits: Limits,
            isolated: bool) -> dict[str, str]:
    """The ``Running`` status' message: where it runs, as whom (``isolated``: its own OS account; else Crater's),
    under which ``trust`` model, on which devices (when it has some) and with which limits."""
    amounts, enforcement = limits.amounts, enforcement_text(limits.enforced_by)
    listed = ",".join(str(d) for d in devices)
    if isolated and devices:
        return say("local.started_isolated_devices", node=node, devices=listed, account=account, uid=uid,
                   trust=trust, limits=amounts, enforcement=enforcement)
    if isolated:
        return say("local.started_isolated", node=node, account=account, uid=uid, trust=trust, limits=amounts,
                   enforcement=enforcement)
    if devices:
        return say("local.started_shared_devices", node=node, devices=listed, account=account, uid=uid,
                   trust=trust, limits=amounts, enforcement=enforcement)
    return say("local.started_shared", node=node, account=account, uid=uid, trust=trust, limits=amounts,
               enforcement=enforcement)


def stopping(stop_reason: str, reason_text: str = "", max_runtime_s: int | None = None, code: str = "",
             args: dict | None = None) -> dict[str, str]:
    """The ``Stopping`` status' message: why it is being stopped (a cancel's ``code``/``args`` nested as a message,
    so that it reads in the viewer's language; ``reason_text`` when the cancel came without a code)."""
    if stop_reason == STOP_DEADLINE:
        return say("local.stopping_deadline", max_runtime_s=max_runtime_s or 0)
    if code:
        return say("local.stopping_cancel", reason=i18n.part(f"event.{code}", **(args or {})))
    return say("local.stopping_cancel", reason=reason_text or "cancelled")


@dataclass(frozen=True)
class Outcome:
    """A workload's final status: ``state``, CamelCase ``reason``, the message columns (:func:`say`), and the exit
    status (``exit_code`` shell-style, ``exit_signal`` the signal number or ``None``)."""

    state: str
    reason: str
    message: dict[str, str]
    exit_code: int | None
    exit_signal: int | None


def finished(exit: ExitStatus | None, *, stop_reason: str | None = None, stop_text: str = "",
             stop_code: str = "", stop_args: dict | None = None, stop_sent: bool = False, runner_signal: int | None = None, max_runtime_s: int | None = None,
             oom_kills: int = 0, limits: Limits | None = None, adopted: bool = False) -> Outcome:
    """The final status of a workload whose runner has exited.

    Args:
        exit: what the runner recorded (``None``: it left nothing, e.g. it was killed itself).
        stop_reason: ``Cancelled`` or ``DeadlineExceeded`` when a stop was asked for; ``stop_text``,
            ``stop_code`` and ``stop_args`` the cancel's reason as the services gave it (:func:`cancelled`). stop_sent: SIGTERM was sent (so a runner that left nothing died of the
            stop: ``runner_signal`` when known, else SIGKILL after the grace).
        oom_kills: OOM kills counted by the workload's memory cgroup. limits: the limits it ran under.
        adopted: the runner ended while no Crater process watched it.
    """
    limits = limits or Limits()
    code, sig = (exit.exit_code, exit.signal) if exit is not None else (None, None)
    if exit is None and stop_sent:
        # The runner itself died of our signal before it could record a status (e.g. SIGTERM during its start-up,
        # or SIGKILL after the grace): report that signal, shell-style.
        sig = runner_signal or signal.SIGKILL
        code = SIGNAL_BASE + sig
    if stop_reason == STOP_CANCELLED:
        return Outcome(CANCELLED, "Cancelled", cancelled(stop_text, stop_code, stop_args), code, sig)
    if stop_reason == STOP_DEADLINE:
        return Outcome(FAILED, "DeadlineExceeded", say("local.deadline_exceeded", max_runtime_s=max_runtime_s or 0),
                       code, sig)
    if exit is None:
        return Outcome(FAILED, "ProcessLost", say("local.process_lost_adopted" if adopted else "local.process_lost"),
                       None, None)
    if oom_kills and code != 0:
        memory = limits.amounts.get("memory", 0)
        return Outcome(FAILED, "OOMKilled", say("local.oom_killed", limit=memory, exit_code=code,
                                                mechanism=limits.enforced_by.get("memory", "")), code, sig)
    if code == 0:
        return Outcome(SUCCEEDED, "Completed", say("local.exited", exit_code=0), 0, None)
    if sig is not None:
        return Outcome(FAILED, "Signaled", say("local.killed_by_signal", signal=signal_name(sig), exit_code=code),
                       code, sig)
    if limits.enforced_by.get("memory") == "RLIMIT_DATA":
        return Outcome(FAILED, "Error", say("local.exited_memory_rlimit", exit_code=code,
                                            limit=limits.amounts.get("memory", 0)), code, None)
    return Outcome(FAILED, "Error", say("local.exited", exit_code=code), code, None)
