"""Starting one placed workload on the local backend: whom it runs as, its folder, its cgroups and limits, its
environment and its runner.

:class:`Launcher` does the steps in that order. The OS account comes first (isolation: it owns the working
folder), the cgroups before the runner (the runner puts the job's process in them between fork and exec), and
the environment last: it is the job's own (:mod:`crater_app.cluster.local.environment`), handed to the runner on a
descriptor rather than in the runner's environment.
"""

from __future__ import annotations

import os
import pwd
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

from crater_app.cluster.local import cgroups as cg
from crater_app.cluster.local.accounts import AccountError, Accounts
from crater_app.cluster.local.environment import job_environment
from crater_app.cluster.local.isolation import ISOLATED, open_log, prepare_job_folder
from crater_app.cluster.local.outcomes import Limits
from crater_app.cluster.local.processes import runner_argv, spawn

#: the home folder of an account that has none (job accounts, as Debian's ``nobody``)
NO_HOME = "/nonexistent"
_LIMIT_ORDER = ("cpu", "memory", "pids")


@dataclass(frozen=True)
class Launched:
    """A started workload: its runner ``proc`` and the runner's start time ``pid_start`` (epoch seconds; ``None``
    when it was gone at once), the ``limits`` it runs under, the OS ``account`` and ``account_uid`` it runs as, and
    whether that is an account of its own (``isolated``)."""

    proc: subprocess.Popen
    pid_start: float | None
    limits: Limits
    account: str
    account_uid: int
    isolated: bool


class StartFailed(Exception):
    """The workload cannot be started: ``code`` (``event.<code>`` in ``i18n/local/``) and its ``args``."""

    def __init__(self, code: str, **args: object) -> None:
        super().__init__(code)
        self.code = code
        self.args_ = args


def error_text(exc: BaseException) -> str:
    """``Type: message`` of ``exc``, as valid UTF-8 and at most 500 characters."""
    message = f"{type(exc).__name__}: {exc}"
    return message.encode("utf-8", "backslashreplace").decode("utf-8")[:500]


def own_account(euid: int) -> tuple[str, int, str | None]:
    """``(name, uid, home folder or None)`` of the OS user Crater runs as (the name is the number when the user
    database does not know it)."""
    try:
        entry = pwd.getpwuid(euid)
    except KeyError:
        return str(euid), euid, None
    return entry.pw_name, euid, entry.pw_dir or None


class Launcher:
    """Starts workloads under trust model ``trust`` (:mod:`~crater_app.cluster.local.isolation`) with ``accounts``
    (used when it is ``os-account``), the cgroups of ``cgroups`` and at most ``pids_max`` processes per job (0: no
    limit); ``own`` is :func:`own_account` of Crater's user."""

    def __init__(self, trust: str, accounts: Accounts, cgroups: cg.CgroupSupport, pids_max: int,
                 own: tuple[str, int, str | None]) -> None:
        self.trust, self.accounts, self.cgroups, self.pids_max, self.own = trust, accounts, cgroups, pids_max, own

    def limits(self, uid: str, cpu_m: int, memory_bytes: int) -> tuple[Limits, cg.JobCgroup | None, int | None]:
        """Create the cgroups named ``uid`` (a workload's, or one replica's: ``replicas.cgroup_of``), when there are
        any: ``(its limits, the cgroups, RLIMIT_DATA or None)``.

        Raises:
            cgroups.CgroupBusy: an earlier run's cgroup still holds processes. OSError: the kernel refused.
        """
        amounts: dict[str, int] = {}
        by: dict[str, str] = {}
        cgroup = None
        if self.cgroups.version is not None:
            cgroup, applied = cg.create(self.cgroups, uid, memory_bytes, cpu_m, self.pids_max)
            for resource, amount in applied.items():
                amounts[resource], by[resource] = amount, self.cgroups.mechanism(resource)
        rlimit = None
        if memory_bytes > 0 and "memory" not in amounts:
            rlimit = amounts["memory"] = memory_bytes
            by["memory"] = "RLIMIT_DATA"
        return (Limits({k: amounts[k] for k in _LIMIT_ORDER if k in amounts},
                       {k: by[k] for k in _LIMIT_ORDER if k in by}, None if cgroup is None else cgroup.to_json()),
                cgroup, rlimit)

    def launch(self, conn: sqlite3.Connection, folder: Path, uid: str, spec: dict, cpu_m: int, memory_bytes: int,
               devices: tuple[int, ...], *, cgroup_name: str | None = None, log_name: str = "output.log",
               exit_name: str = "exit_code", rendezvous: dict[str, str] | None = None) -> Launched:
        """Start one replica of workload ``uid`` (``spec``: ``user``, ``command``, ``env``, ``working_dir``) in
        ``folder`` on ``devices``, with ``cpu_m`` millicores and ``memory_bytes`` bytes, in the cgroup named
        ``cgroup_name`` (default: the uid), its log and exit status at ``log_name`` and ``exit_name`` in ``folder``, with
        the ``rendezvous`` variables (:mod:`crater_app.domain.rendezvous`; set after the spec's ``env``, which cannot
        replace them); ``conn`` is the placement round's write transaction (a new account's allocation is written
        in it).

        Raises:
            StartFailed: it cannot start (``local.account_*``, ``local.uid_range_full``, ``local.cgroup_error``,
                ``local.start_error``); nothing of it is left running.
            cgroups.CgroupBusy: its earlier run's processes have not exited yet; nothing was started.
        """
        cgroup = None
        try:
            if self.trust == ISOLATED:
                made = self.accounts.for_user(conn, spec["user"])
                account, owner, home = (made.name, made.uid), (made.uid, made.gid), None
            else:
                account, owner, home = (self.own[0], self.own[1]), None, self.own[2]
            cwd = prepare_job_folder(folder, spec.get("working_dir"), owner)
            (folder / exit_name).unlink(missing_ok=True)  # an earlier attempt's
            try:
                limits, cgroup, rlimit = self.limits(cgroup_name or uid, cpu_m, memory_bytes)
            except OSError as exc:
                raise StartFailed("local.cgroup_error", error=error_text(exc)) from exc
            env = job_environment(dict(os.environ), {**(spec.get("env") or {}), **(rendezvous or {})}, uid, devices,
                                  account=account[0], home=Path(home) if home and home != NO_HOME else folder / "work")
            argv = runner_argv(folder, cwd, spec["command"], cgroup.folders if cgroup else (), owner, rlimit,
                               exit_name=exit_name, log_name=log_name)
            log = open_log(folder, log_name)
            try:
                proc, pid_start = spawn(argv, folder, env, log)
            finally:
                os.close(log)
        except AccountError as exc:
            raise StartFailed(exc.code, **exc.args_) from exc
        except (StartFailed, cg.CgroupBusy):
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. OSError (mkdir, exec), ValueError (text no process can take)
            if cgroup is not None:
                cgroup.remove()
            raise StartFailed("local.start_error", error=error_text(exc)) from exc
        return Launched(proc, pid_start, limits, account[0], account[1], owner is not None)
