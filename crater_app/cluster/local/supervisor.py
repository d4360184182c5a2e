"""The local backend's supervision of started workloads: starting a placed gang, noticing each replica's exit,
deciding the gang's end, deadlines, the grace between SIGTERM and SIGKILL, and the cgroups left behind.

Every replica is watched on its own (its runner's pid and start time; :mod:`~crater_app.cluster.local.replicas`).
When one ends its outcome is recorded (:func:`~crater_app.cluster.local.outcomes.finished`) and the gang rule
(:func:`crater_app.domain.gang.decide`) says whether the workload ends: then the replicas still running get SIGTERM
(the workload is ``Stopping`` and holds its devices until the last one has exited), and the workload ends as the
verdict said (:mod:`~crater_app.cluster.local.gang_outcomes`). A workload of one replica ends exactly as a
single-command job always has. A gang restart (``restart_policy`` ``restart``) stops every replica (raw state
``Restarting``) and starts the gang again on the same devices.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Callable

from crater_app.cluster.local import cgroups as cg
from crater_app.cluster.local import gang_outcomes as go
from crater_app.cluster.local import specs
from crater_app.cluster.local.gangs import GangBusy, gang_cgroups, start_gang
from crater_app.cluster.local.launch import Launcher, StartFailed
from crater_app.cluster.local.outcomes import (SIGNAL_BASE, STOP_CANCELLED, STOP_DEADLINE, Limits, Outcome, cancelled,
                                               finished, say, started, stopping)
from crater_app.cluster.local.processes import (ExitStatus, alive, kill_leftovers, kill_tree, read_exit,
                                                signal_group)
from crater_app.cluster.local.replicas import live_records, uid_of_cgroup
from crater_app.cluster.local.store import (CANCELLED, FAILED, FINAL, HOLDING, PENDING, RESTARTING, RUNNING,
                                            STOPPING, Store)
from crater_app.domain.gang import RESTART, WAIT, Verdict, decide

STALE_CGROUP_S = 3600.0  # an empty cgroup unknown to the store is swept on adoption once it is this old (seconds)
_RESTARTED: list[dict] = []  # _gang_moves' answer after a restart (nothing to signal; the old replicas are gone)
_IN_HOLDING = f"state IN ({','.join('?' * len(HOLDING))})"
_WATCHED = ("uid, state, pid, pid_start, started_at, max_runtime_s, term_sent_at, limits, devices, replicas")


def _json_dict(raw: str | None) -> dict:
    """The JSON object in ``raw`` (``{}`` for anything else)."""
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class Supervisor:
    """Watches the started workloads of ``store`` whose folders are ``job_dir(uid)``, starting gangs through
    ``launcher`` on ``node`` (its ``devices``: index -> resource name) under trust model ``trust``; ``clock`` in
    epoch seconds; ``grace_s`` between SIGTERM and SIGKILL; ``cgroups`` the machine's cgroup support."""

    def __init__(self, store: Store, launcher: Launcher, job_dir: Callable[[str], Path], node: str,
                 kinds: dict[int, str], trust: str, clock: Callable[[], float], grace_s: float,
                 cgroups: cg.CgroupSupport) -> None:
        self.store, self.launcher, self.job_dir, self.node = store, launcher, job_dir, node
        self.kinds, self.trust, self.clock, self.grace_s, self.cgroups = kinds, trust, clock, grace_s, cgroups
        self.children: dict[str, dict[tuple[str, int], subprocess.Popen]] = {}
        self.left_cgroups: dict[str, cg.JobCgroup] = {}  # cgroup name -> cgroups of ended replicas not gone yet

    # -- starting -----------------------------------------------------------------------------------------------
    def start(self, conn: sqlite3.Connection, uid: str, devices: tuple[int, ...]) -> bool:
        """Start placed workload ``uid``'s gang on ``devices`` inside the placement round's transaction ``conn``;
        ``False`` when it stays pending for a later round (an earlier run's processes are still exiting). Never
        raises: a failure fails this workload only (raising would roll back the round after other workloads had
        been started, and they would be started again)."""
        spec, tasks, code, _ = self._spec(conn, uid)
        for name in gang_cgroups(uid, tasks):  # made again by this start: a tick must no longer remove them
            self.left_cgroups.pop(name, None)
        try:
            gang = start_gang(self.launcher, conn, self.job_dir(uid), uid, spec, tasks, devices, self.kinds)
        except GangBusy as exc:
            self.left_cgroups[exc.name] = exc.cgroup  # each tick tries again to empty it
            if code != "local.waiting_for_earlier_run":
                self.store.update(conn, uid, reason="Queued",
                                  **say("local.waiting_for_earlier_run", processes=len(exc.pids)))
            return False
        except StartFailed as exc:
            self.store.update(conn, uid, state=FAILED, reason="StartError", finished_at=self.clock(),
                              **say(exc.code, **exc.args_))
            return True
        self.children[uid] = gang.procs
        run = gang.first
        message = started(self.node, devices, self.trust, run.account, run.account_uid, run.limits, run.isolated)
        self.store.update(conn, uid, state=RUNNING, reason="Started", devices=json.dumps(list(devices)),
                          pid=run.proc.pid, pid_start=run.pid_start, started_at=self.clock(),
                          limits=run.limits.to_json(), replicas=json.dumps(gang.records), **message)
        return True

    def _spec(self, conn: sqlite3.Connection, uid: str) -> tuple[dict, list[specs.TaskSpec], str, str]:
        spec_text, cpu_m, memory_bytes, code, accelerators, replicas = conn.execute(
            "SELECT spec, cpu_m, memory_bytes, code, accelerators, replicas FROM workloads WHERE uid = ?",
            (uid,)).fetchone()
        spec = json.loads(spec_text)
        return spec, specs.tasks_of(spec, cpu_m, memory_bytes, json.loads(accelerators)), code, replicas

    # -- watching -----------------------------------------------------------------------------------------------
    def watch(self) -> None:
        """One look at every started workload: record the replicas that have exited (and end or stop the gang as
        the rule says), stop those past their ``max_runtime``, SIGKILL what outlived the grace."""
        rows = self.store.read(f"SELECT {_WATCHED} FROM workloads WHERE {_IN_HOLDING}", HOLDING)
        now = self.clock()
        for uid, state, pid, pid_start, started_at, max_runtime, term_sent, limits, devices, replicas in rows:
            records = live_records(replicas, pid, pid_start, limits, devices)
            children = self.children.get(uid, {})
            exited = []
            for r in records:
                if r.get("phase"):
                    continue
                child = children.get((r["task"], r["replica"]))
                if (child.poll() is not None) if child is not None else not alive(r.get("pid"), r.get("pid_start")):
                    exited.append((r["task"], r["replica"]))
            if exited:
                self._ended(uid, exited)
                continue
            if state == RUNNING and term_sent is None and max_runtime and started_at is not None \
                    and now - started_at >= max_runtime:
                with self.store.tx() as conn:
                    current = conn.execute("SELECT state FROM workloads WHERE uid = ?", (uid,)).fetchone()[0]
                    if current != RUNNING:
                        continue  # cancelled meanwhile
                    self.store.update(conn, uid, state=STOPPING, reason="DeadlineExceeded", stop_reason=STOP_DEADLINE,
                                      term_sent_at=now, **stopping(STOP_DEADLINE, max_runtime_s=max_runtime))
                signal_all(records, signal.SIGTERM)
            elif term_sent is not None and now - term_sent >= self.grace_s:
                for r in records:
                    if not r.get("phase"):
                        kill_tree(r.get("pid"), r.get("pid_start"))
                        cgroup = cg.JobCgroup.from_json(Limits.from_json(r.get("limits")).cgroup)
                        if cgroup is not None:
                            cgroup.kill()

    def _ended(self, uid: str, exited: list[tuple[str, int]]) -> None:
        """Replicas ``exited`` of workload ``uid`` have ended: record how, and move the workload on."""
        folder = self.job_dir(uid)
        seen: dict[tuple[str, int], tuple] = {}
        found = self.store.read("SELECT pid, pid_start, limits, devices, replicas FROM workloads WHERE uid = ?",
                                (uid,))
        if not found:
            return
        for r in live_records(found[0][4], *found[0][:4]):
            key = (r["task"], r["replica"])
            if key not in exited:
                continue
            kill_leftovers(r.get("pid"), r.get("pid_start"))
            limits = Limits.from_json(r.get("limits"))
            cgroup = cg.JobCgroup.from_json(limits.cgroup)
            if cgroup is not None:
                cgroup.kill()  # what is left of the replica, wherever in its tree it was
            child = self.children.get(uid, {}).get(key)
            runner_signal = -child.returncode if child is not None and (child.returncode or 0) < 0 else None
            seen[key] = (read_exit(folder / r.get("exit", "exit_code")), limits, cgroup, runner_signal, child is None)
        stop_after, restarted = None, False
        with self.store.tx() as conn:
            row = conn.execute(
                "SELECT state, stop_reason, stop_message, stop_code, stop_args, term_sent_at, max_runtime_s, pid,"
                " pid_start, limits, devices, replicas FROM workloads WHERE uid = ?", (uid,)).fetchone()
            if row is None or row[0] not in HOLDING:
                return
            state, stop_reason, stop_message, stop_code, stop_args, term_sent, max_runtime = row[:7]
            records = live_records(row[11], *row[7:11])
            for r in records:
                key = (r["task"], r["replica"])
                if key not in seen or r.get("phase"):
                    continue
                exit_status, limits, cgroup, runner_signal, adopted = seen[key]
                outcome = finished(exit_status, stop_sent=term_sent is not None, runner_signal=runner_signal,
                                   oom_kills=cgroup.oom_kills() if cgroup is not None else 0, limits=limits,
                                   adopted=adopted)
                code, sig, reason = outcome.exit_code, outcome.exit_signal, outcome.reason
                if exit_status is None and term_sent is not None:  # its runner died of the stop (SIGKILL after the
                    sig = runner_signal or signal.SIGKILL          # grace) before it could record a status
                    code, reason = SIGNAL_BASE + sig, "Signaled"
                phase = outcome.state
                if stop_reason is not None and term_sent is not None:  # Crater stopped it: not a failure of its own
                    phase, reason = go.STOPPED, go.stopped_reason(stop_reason, _json_dict(stop_args))
                r.update(phase=phase, exit_code=code, exit_signal=sig, reason=reason)
            if len(records) == 1 and self._restarts_alone(conn, uid, stop_reason, records):
                restarted = True
            elif len(records) == 1:  # one replica: it ends exactly as a single-command job always has
                if (records[0]["task"], records[0]["replica"]) not in seen:
                    return
                exit_status, limits, cgroup, runner_signal, adopted = seen[(records[0]["task"], records[0]["replica"])]
                outcome = finished(exit_status, stop_reason=stop_reason, stop_text=stop_message or "",
                                   stop_code=stop_code or "", stop_args=_json_dict(stop_args),
                                   stop_sent=term_sent is not None, runner_signal=runner_signal,
                                   max_runtime_s=max_runtime, oom_kills=cgroup.oom_kills() if cgroup else 0,
                                   limits=limits, adopted=adopted)
                self._finish(conn, uid, outcome, records)
            else:
                stop_after = self._gang_moves(conn, uid, state, stop_reason, stop_message, stop_code, stop_args,
                                              term_sent, max_runtime, records)
                restarted = stop_after is _RESTARTED
        if restarted:
            return  # the new run's processes and cgroups (of the same names) replaced the ended ones
        for key, (_, _, cgroup, _, _) in seen.items():
            self.children.get(uid, {}).pop(key, None)
            if cgroup is not None and not cgroup.remove():
                self.left_cgroups[cgroup.folders[0].name if cgroup.folders else uid] = cgroup
        if not self.children.get(uid):
            self.children.pop(uid, None)
        if stop_after:
            signal_all(stop_after, signal.SIGTERM)

    def _restarts_alone(self, conn: sqlite3.Connection, uid: str, stop_reason: str | None,
                        records: list[dict]) -> bool:
        """A workload of one replica that failed by itself under ``restart_policy`` ``restart`` with retries left
        starts again (``True``); anything else ends as a single-command job."""
        record = records[0]
        if stop_reason is not None or not record.get("phase") or record.get("exit_code") == 0:
            return False
        spec, tasks, _, _ = self._spec(conn, uid)
        restarts, max_retry = record.get("restarts", 0), int(spec.get("max_retry") or 0)
        verdict = decide([(t.name, t.replicas, t.ends_job) for t in tasks],
                         {(record["task"], record["replica"]): record.get("exit_code")},
                         restart_policy=spec.get("restart_policy") or "fail", max_retry=max_retry, restarts=restarts)
        return verdict.action == RESTART and self._restart(conn, uid, spec, tasks, verdict, restarts + 1, max_retry,
                                                           records)

    def _finish(self, conn: sqlite3.Connection, uid: str, outcome: Outcome, records: list[dict]) -> None:
        self.store.update(conn, uid, state=outcome.state, reason=outcome.reason, exit_code=outcome.exit_code,
                          exit_signal=outcome.exit_signal, finished_at=self.clock(), replicas=json.dumps(records),
                          **outcome.message)

    def _gang_moves(self, conn: sqlite3.Connection, uid: str, state: str, stop_reason: str | None,
                    stop_message: str | None, stop_code: str | None, stop_args: str | None, term_sent: float | None,
                    max_runtime: int | None, records: list[dict]) -> list[dict] | None:
        """Apply the gang rule after some of ``records`` ended; the replicas to SIGTERM now (``None``: none)."""
        spec, tasks, _, _ = self._spec(conn, uid)
        ender = next((t.name for t in tasks if t.ends_job), None)
        ended = {(r["task"], r["replica"]): r.get("exit_code") for r in records if r.get("phase")}
        restarts = max((r.get("restarts", 0) for r in records), default=0)
        max_retry = int(spec.get("max_retry") or 0)
        needed = spec.get("min_available") or len(records)
        if stop_reason in (go.STOP_GANG, go.STOP_RESTART):
            verdict = go.verdict_of(_json_dict(stop_args))
        elif stop_reason is None:
            verdict = decide([(t.name, t.replicas, t.ends_job) for t in tasks], ended,
                             restart_policy=spec.get("restart_policy") or "fail", max_retry=max_retry,
                             restarts=restarts, min_available=spec.get("min_available"))
        else:
            verdict = None  # a cancel or a deadline: it ends as that stop says, once every replica has exited
        first = records[0]
        if all(r.get("phase") for r in records):
            if verdict is None:  # as the stop says, with the first replica's exit status
                code = first.get("exit_code")
                outcome = finished(ExitStatus(code, first.get("exit_signal")) if code is not None else None,
                                   stop_reason=stop_reason, stop_text=stop_message or "", stop_code=stop_code or "",
                                   stop_args=_json_dict(stop_args), stop_sent=True, max_runtime_s=max_runtime)
            elif verdict.action == RESTART:
                return _RESTARTED if self._restart(conn, uid, spec, tasks, verdict, restarts + 1, max_retry,
                                                   records) else None
            else:
                outcome = go.final(verdict, records, ender, needed)
            self._finish(conn, uid, outcome, records)
            return None
        if verdict is None or verdict.action == WAIT or stop_reason is not None:
            self.store.update(conn, uid, replicas=json.dumps(records))
            return None
        reason, message = go.stopping(verdict, ender, restarts + 1, max_retry)
        self.store.update(conn, uid, state=RESTARTING if verdict.action == RESTART else STOPPING, reason=reason,
                          stop_reason=go.STOP_RESTART if verdict.action == RESTART else go.STOP_GANG,
                          stop_args=json.dumps(go.verdict_args(verdict)), term_sent_at=self.clock(),
                          replicas=json.dumps(records), **message)
        return [r for r in records if not r.get("phase")]

    def _restart(self, conn: sqlite3.Connection, uid: str, spec: dict, tasks: list[specs.TaskSpec],
                 verdict: Verdict, restart: int, max_retry: int, records: list[dict]) -> bool:
        """Start the whole gang again on its devices (every replica has exited); ``False`` when it could not start
        (the workload has failed)."""
        devices = tuple(d for r in records for d in r.get("devices") or ())
        try:
            gang = start_gang(self.launcher, conn, self.job_dir(uid), uid, spec, tasks, devices, self.kinds,
                              restarts=restart, marker=go.restart_marker(verdict, restart, max_retry))
        except StartFailed as exc:
            self._finish(conn, uid, Outcome(FAILED, "StartError", say(exc.code, **exc.args_), None, None), records)
            return False
        except GangBusy as exc:
            self._finish(conn, uid, Outcome(FAILED, "StartError", say("local.start_error", error=str(exc)), None,
                                            None), records)
            return False
        self.children[uid] = gang.procs
        task, index = verdict.replica or ("", 0)
        self.store.update(conn, uid, state=RUNNING, reason="Restarted", pid=gang.first.proc.pid,
                          pid_start=gang.first.pid_start, limits=gang.first.limits.to_json(),
                          replicas=json.dumps(gang.records), term_sent_at=None, stop_reason=None, stop_args=None,
                          **say("replicas.restarted", restart=restart, max_retry=max_retry, task=task,
                                replica=index, exit_code=verdict.exit_code))
        return True

    # -- stopping -----------------------------------------------------------------------------------------------
    def cancel(self, conn: sqlite3.Connection, uid: str, reason: str, code: str, args: dict) -> list[dict] | None:
        """Record a cancel of ``uid`` in transaction ``conn`` (see ``LocalBackend.cancel``); the replicas to SIGTERM
        once it is committed (``None``: none).

        Raises:
            KeyError: unknown ``uid``.
        """
        row = conn.execute("SELECT state, term_sent_at, pid, pid_start, limits, devices, replicas FROM workloads"
                           " WHERE uid = ?", (uid,)).fetchone()
        if row is None:
            raise KeyError(uid)
        state, term_sent = row[:2]
        now = self.clock()
        if state == PENDING:
            self.store.update(conn, uid, state=CANCELLED, reason="Cancelled", finished_at=now,
                              **cancelled(reason, code, args))
        elif (state == RUNNING and term_sent is None) or state == RESTARTING:
            # a restart's stop becomes this cancel (its SIGTERM is already sent: the grace runs from then)
            self.store.update(conn, uid, state=STOPPING, reason="CancelRequested", stop_reason=STOP_CANCELLED,
                              stop_message=reason, stop_code=code, stop_args=json.dumps(args),
                              term_sent_at=term_sent if state == RESTARTING else now,
                              **stopping(STOP_CANCELLED, reason, code=code, args=args))
            return [r for r in live_records(row[6], *row[2:6]) if not r.get("phase")]
        return None

    # -- cgroups --------------------------------------------------------------------------------------------------
    def remove_left_cgroups(self) -> None:
        """Try again to remove the cgroups of ended replicas that still held processes."""
        for name, cgroup in list(self.left_cgroups.items()):
            cgroup.kill()
            if cgroup.remove():
                self.left_cgroups.pop(name, None)

    def sweep_cgroups(self) -> None:
        """Hand the leftover cgroups of finished workloads, and of pending ones (an earlier run's, of a requeued
        job), to the next tick for removal; remove unknown ones that are empty and old."""
        names = list(cg.leftovers(self.cgroups))
        uids = sorted({uid_of_cgroup(n) for n in names})
        states: dict[str, str] = {}
        for i in range(0, len(uids), 500):
            chunk = uids[i:i + 500]
            states.update(self.store.read(
                f"SELECT uid, state FROM workloads WHERE uid IN ({','.join('?' * len(chunk))})", chunk))
        for name in names:
            state = states.get(uid_of_cgroup(name))
            cgroup = cg.of_workload(self.cgroups, name)
            if state is not None:
                if (state in FINAL or state == PENDING) and name not in self.left_cgroups:
                    self.left_cgroups[name] = cgroup  # removed by the next tick
            # Not ours (another Crater on this machine, or a workload whose row was lost): removed only when empty and
            # older than STALE_CGROUP_S, so that a cgroup another backend has just made for a job is never touched.
            elif not cgroup.pids() and cgroup.age_s(self.clock()) > STALE_CGROUP_S:
                cgroup.remove()


def signal_all(records: list[dict], sig: int) -> None:
    """Send ``sig`` to the process group of every replica in ``records``."""
    for r in records:
        signal_group(r.get("pid"), sig)
