"""The embedded *local* backend: each workload runs as a process group on this machine.

State lives in its own SQLite file (``<data_dir>/local/backend.db``), so it survives restarts of the web
process and is shared safely between processes; placement runs under ``BEGIN IMMEDIATE`` so two
workloads never get the same device. Layout per workload: ``<data_dir>/jobs/<uid>/`` with ``work/``
(the working directory), ``output.log`` (stdout+stderr) and ``exit_code`` (written by
:mod:`crater_app.cluster.local_runner`).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

import psutil

from crater_app.cluster.base import Device, NodeInventory, Workload, WorkloadStatus
from crater_app.cluster.local_inventory import discover, host_capacity
from crater_app.domain.batching import GroupCommit
from crater_app.domain.placement import Capacity, FreeDevice, Request, Running, place

RUNNER = str(Path(__file__).with_name("local_runner.py"))
PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED = "Pending", "Running", "Succeeded", "Failed", "Cancelled"
FINAL = (SUCCEEDED, FAILED, CANCELLED)
# Variables of the web process that a job must not inherit (credentials, Crater's own settings).
_SECRET_MARKERS = ("PASSWORD", "SECRET", "TOKEN", "CREDENTIAL", "PRIVATE_KEY", "API_KEY", "ACCESS_KEY")

_STATUS_COLUMNS = ("uid, state, reason, message, exit_code, devices, started_at, finished_at, rev, code, args,"
                   " attempt")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS workloads (
  uid TEXT PRIMARY KEY, spec TEXT NOT NULL, priority INTEGER NOT NULL, created_at REAL NOT NULL,
  cpu_m INTEGER NOT NULL, memory_bytes INTEGER NOT NULL, accelerators TEXT NOT NULL, model TEXT,
  max_runtime_s INTEGER, state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', message TEXT NOT NULL DEFAULT '',
  exit_code INTEGER, devices TEXT NOT NULL DEFAULT '[]', pid INTEGER, pid_start REAL,
  started_at REAL, finished_at REAL, stop_reason TEXT, stop_message TEXT, term_sent_at REAL,
  rev INTEGER NOT NULL, code TEXT NOT NULL DEFAULT '', args TEXT NOT NULL DEFAULT '{}',
  attempt INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS ix_workloads_rev ON workloads(rev);
CREATE INDEX IF NOT EXISTS ix_workloads_state ON workloads(state, priority, created_at);
"""


def _ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, timezone.utc)


def job_environment(base: dict[str, str], spec_env: dict[str, str], uid: str, devices: tuple[int, ...]) -> dict[str, str]:
    """Environment of a job process: ``base`` without ``CRATER_*`` and secret-looking variables, then the
    spec's ``env``, then ``CRATER_JOB_UID``, ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (indices as NVML/nvidia-smi
    number them), ``CUDA_VISIBLE_DEVICES`` and ``NVIDIA_VISIBLE_DEVICES`` set to exactly ``devices``
    (``""``/``void`` when none, so a CPU job sees no GPU)."""
    env = {
        k: v for k, v in base.items()
        if not k.startswith("CRATER_") and not any(m in k.upper() for m in _SECRET_MARKERS)
    }
    env.update(spec_env)
    visible = ",".join(str(d) for d in devices)
    env["CRATER_JOB_UID"] = uid
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    env["CUDA_VISIBLE_DEVICES"] = visible
    env["NVIDIA_VISIBLE_DEVICES"] = visible or "void"
    return env


class LocalBackend:
    """:class:`~crater_app.cluster.base.ClusterBackend` running workloads as local process groups.

    Args:
        data_dir: Crater's data folder (state DB, job folders).
        local_gpus: ``CRATER_LOCAL_GPUS`` value for machines without NVML devices.
        cancel_grace_s: seconds between SIGTERM and SIGKILL.
        devices: explicit device list (tests); ``None`` discovers them.
        clock: seconds since the epoch (tests may pass a fake).
    """

    name = "local"

    def __init__(
        self,
        data_dir: Path,
        local_gpus: str = "",
        cancel_grace_s: float = 10.0,
        devices: list[Device] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.jobs_dir = self.data_dir / "jobs"
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "local").mkdir(parents=True, exist_ok=True)
        if devices is None:
            devices, self.device_source = discover(local_gpus)
        else:
            self.device_source = "explicit"
        self.devices: tuple[Device, ...] = tuple(devices)
        self.node_name, self.cpu_m, self.memory_bytes = host_capacity()
        self.cancel_grace_s = cancel_grace_s
        self.clock = clock
        self._lock = threading.RLock()
        self._children: dict[str, subprocess.Popen] = {}
        self._placed_rev = -1
        self._requests: dict[str, Request] = {}  # uid -> placement request of a pending workload
        self._creates = GroupCommit()
        self._conn = sqlite3.connect(
            self.data_dir / "local" / "backend.db", timeout=30, isolation_level=None, check_same_thread=False
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)
        have = {row[1] for row in self._conn.execute("PRAGMA table_info(workloads)")}
        for column in ("code TEXT NOT NULL DEFAULT ''", "args TEXT NOT NULL DEFAULT '{}'",
                       "attempt INTEGER NOT NULL DEFAULT 1"):  # state files of an earlier version
            if column.split()[0] not in have:
                self._conn.execute(f"ALTER TABLE workloads ADD COLUMN {column}")

    # -- storage -------------------------------------------------------------------------------
    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    @staticmethod
    def _next_rev(conn: sqlite3.Connection) -> int:
        return (conn.execute("SELECT COALESCE(MAX(rev), 0) FROM workloads").fetchone()[0]) + 1

    def _update(self, conn: sqlite3.Connection, uid: str, **cols) -> None:
        cols["rev"] = self._next_rev(conn)
        assignments = ", ".join(f"{k} = ?" for k in cols)
        conn.execute(f"UPDATE workloads SET {assignments} WHERE uid = ?", (*cols.values(), uid))

    def job_dir(self, uid: str) -> Path:
        """Folder of workload ``uid`` (``work/``, ``output.log``, ``exit_code``)."""
        return self.jobs_dir / uid

    # -- ClusterBackend ------------------------------------------------------------------------
    def inventory(self) -> list[NodeInventory]:
        """One node: this machine, with the devices held by running workloads."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT uid, devices, cpu_m, memory_bytes FROM workloads WHERE state = ?", (RUNNING,)
            ).fetchall()
        allocations: dict[int, str] = {}
        for uid, devices, _, _ in rows:
            for index in json.loads(devices):
                allocations[index] = uid
        return [
            NodeInventory(
                name=self.node_name, cpu_m=self.cpu_m, memory_bytes=self.memory_bytes, devices=self.devices,
                source=self.device_source, allocations=allocations,
                cpu_m_allocated=sum(r[2] for r in rows), memory_bytes_allocated=sum(r[3] for r in rows),
            )
        ]

    def create(self, workload: Workload) -> None:
        """Queue ``workload`` as ``Pending`` (idempotent on ``uid``)."""
        # Concurrent creates (e.g. many submissions at once) share one transaction.
        self._creates.run(self._row(workload), self._insert_workloads)

    def create_many(self, workloads: list[Workload]) -> None:
        """:meth:`create` for several workloads in one transaction (batched submissions)."""
        self._insert_workloads([self._row(w) for w in workloads])

    @staticmethod
    def _row(workload: Workload) -> tuple:
        spec = {
            "name": workload.name, "project": workload.project, "user": workload.user, "image": workload.image,
            "command": list(workload.command), "env": workload.env, "working_dir": workload.working_dir,
        }
        return (
            workload.uid, json.dumps(spec), workload.priority, workload.created_at.timestamp(),
            workload.resources.cpu_m, workload.resources.memory_bytes,
            json.dumps(workload.resources.accelerators), workload.accelerator_model, workload.max_runtime_s,
            PENDING, "Queued", "waiting for placement", "placement.pending", workload.attempt,
        )

    def _insert_workloads(self, rows: list[tuple]) -> list[None]:
        with self._tx() as conn:
            rev = self._next_rev(conn)
            # A known uid is left alone, unless this is its next attempt and its last run is final: then it runs
            # again (same folder and log), as Pending with a fresh status.
            conn.executemany(
                "INSERT INTO workloads (uid, spec, priority, created_at, cpu_m, memory_bytes, accelerators,"
                " model, max_runtime_s, state, reason, message, code, attempt, rev)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(uid) DO UPDATE SET"
                " spec = excluded.spec, max_runtime_s = excluded.max_runtime_s, state = excluded.state,"
                " reason = excluded.reason, message = excluded.message, code = excluded.code, args = '{}',"
                " attempt = excluded.attempt, rev = excluded.rev, exit_code = NULL, devices = '[]', pid = NULL,"
                " pid_start = NULL, started_at = NULL, finished_at = NULL, stop_reason = NULL, stop_message = NULL,"
                " term_sent_at = NULL WHERE workloads.attempt < excluded.attempt"
                f" AND workloads.state IN ({','.join('?' * len(FINAL))})",
                [(*row, rev + i, *FINAL) for i, row in enumerate(rows)],
            )
        return [None] * len(rows)

    def cancel(self, uid: str, reason: str) -> None:
        """Cancel: a pending workload ends at once; a running one gets SIGTERM, SIGKILL after the grace.

        Raises:
            KeyError: unknown ``uid``.
        """
        with self._tx() as conn:
            row = conn.execute("SELECT state, pid, term_sent_at FROM workloads WHERE uid = ?", (uid,)).fetchone()
            if row is None:
                raise KeyError(uid)
            state, pid, term_sent = row
            now = self.clock()
            if state == PENDING:
                self._update(conn, uid, state=CANCELLED, reason="Cancelled", message=reason, finished_at=now, code="", args="{}")
            elif state == RUNNING and term_sent is None:
                self._update(conn, uid, stop_reason="Cancelled", stop_message=reason, term_sent_at=now,
                             message=f"stopping: {reason}")
                self._signal(pid, signal.SIGTERM)

    def extend(self, uid: str, max_runtime_s: int) -> None:
        """Move the deadline: ``max_runtime_s`` seconds from the workload's start (the column :meth:`tick` checks
        each round). Finished workloads and those already stopping (cancelled, or past their old deadline) keep
        theirs.

        Raises:
            KeyError: unknown ``uid``.
        """
        with self._tx() as conn:
            row = conn.execute("SELECT state, term_sent_at FROM workloads WHERE uid = ?", (uid,)).fetchone()
            if row is None:
                raise KeyError(uid)
            state, term_sent = row
            if state in FINAL or term_sent is not None:
                return
            conn.execute("UPDATE workloads SET max_runtime_s = ? WHERE uid = ?", (max_runtime_s, uid))

    def changes(self, since_rev: int, limit: int = 1000) -> list[WorkloadStatus]:
        """Statuses changed after ``since_rev``, in change order (at most ``limit``)."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_STATUS_COLUMNS} FROM workloads WHERE rev > ? ORDER BY rev LIMIT ?", (since_rev, limit)
            ).fetchall()
        return [self._status(r) for r in rows]

    def status(self, uid: str) -> WorkloadStatus | None:
        """Current status of ``uid`` or ``None``."""
        with self._lock:
            row = self._conn.execute(f"SELECT {_STATUS_COLUMNS} FROM workloads WHERE uid = ?", (uid,)).fetchone()
        return None if row is None else self._status(row)

    @staticmethod
    def _status(row: tuple) -> WorkloadStatus:
        uid, state, reason, message, exit_code, devices, started, finished, rev, code, args, attempt = row
        return WorkloadStatus(
            uid=uid, state=state, reason=reason, message=message, exit_code=exit_code,
            devices=tuple(json.loads(devices)), started_at=_ts(started), finished_at=_ts(finished), rev=rev,
            code=code, args=json.loads(args), attempt=attempt,
        )

    def read_logs(self, uid: str, tail_bytes: int = 65536) -> str:
        """Last ``tail_bytes`` of the job's ``output.log``, decoded as UTF-8 (invalid bytes replaced). When the
        tail starts inside a line, that partial first line is dropped (unless nothing would be left)."""
        path = self.job_dir(uid) / "output.log"
        try:
            with open(path, "rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                start = max(0, size - tail_bytes)
                fh.seek(max(0, start - 1))  # one byte more: does the tail start at a line boundary?
                data = fh.read(size - start + (1 if start else 0))
        except FileNotFoundError:
            return ""
        if start:
            before, data = data[:1], data[1:]
            rest = data.split(b"\n", 1)[1] if b"\n" in data else b""
            if before != b"\n" and rest:
                data = rest
        return data.decode("utf-8", "replace")

    def tick(self) -> None:
        """Reap exits, enforce ``max_runtime`` and cancellation grace, then place queued workloads."""
        self._watch_running()
        self._place()

    def adopt(self) -> None:
        """Re-adopt workloads left running by an earlier web process (same pid and start time), or mark
        them Failed (``ProcessLost``); their exit status is read from ``exit_code`` when it was written."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT uid, pid, pid_start FROM workloads WHERE state = ?", (RUNNING,)
            ).fetchall()
        for uid, pid, pid_start in rows:
            if uid in self._children:
                continue
            if not self._alive(pid, pid_start):
                self._finish_if_exited(uid, adopted=True)

    # -- internals -----------------------------------------------------------------------------
    @staticmethod
    def _signal(pid: int | None, sig: int) -> None:
        if not pid:
            return
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _alive(self, pid: int | None, pid_start: float | None) -> bool:
        if not pid:
            return False
        try:
            proc = psutil.Process(pid)
            if pid_start is not None and abs(proc.create_time() - pid_start) > 1.0:
                return False  # pid reused by another process
            return proc.status() != psutil.STATUS_ZOMBIE
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False

    def _read_exit(self, uid: str) -> int | None:
        try:
            return int((self.job_dir(uid) / "exit_code").read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def _kill_leftovers(self, pid: int | None, pid_start: float | None) -> None:
        """SIGKILL what is left of a finished workload's process group (background children, or children
        that ignored SIGTERM while the main process exited), so its devices are really free."""
        if not pid:
            return
        try:
            if pid_start is not None and abs(psutil.Process(pid).create_time() - pid_start) > 1.0:
                return  # the number now belongs to an unrelated process (and so its group is not ours)
        except psutil.NoSuchProcess:
            pass  # the runner is gone; a live group with its id can only hold the workload's leftovers
        except psutil.AccessDenied:  # pragma: no cover
            return
        self._signal(pid, signal.SIGKILL)

    def _kill_tree(self, pid: int | None, pid_start: float | None) -> None:
        """SIGKILL the runner ``pid``, its descendants (also those that left its process group: the runner is a
        child subreaper, so detached ones stay below it) and its process group."""
        if not pid:
            return
        try:
            runner = psutil.Process(pid)
            if pid_start is None or abs(runner.create_time() - pid_start) <= 1.0:
                for proc in runner.children(recursive=True):
                    try:
                        proc.kill()
                    except psutil.Error:
                        pass
        except psutil.Error:
            pass
        self._signal(pid, signal.SIGKILL)

    def _finish_if_exited(self, uid: str, adopted: bool = False) -> None:
        code = self._read_exit(uid)
        with self._lock:
            found = self._conn.execute("SELECT state, pid, pid_start FROM workloads WHERE uid = ?", (uid,)).fetchone()
        if found is not None and found[0] == RUNNING:
            self._kill_leftovers(found[1], found[2])
        with self._tx() as conn:
            row = conn.execute(
                "SELECT state, stop_reason, stop_message, term_sent_at, max_runtime_s FROM workloads WHERE uid = ?",
                (uid,),
            ).fetchone()
            if row is None or row[0] != RUNNING:
                return
            _, stop_reason, stop_message, term_sent, max_runtime = row
            now = self.clock()
            if stop_reason == "Cancelled":
                state, reason, message = CANCELLED, "Cancelled", stop_message or "cancelled"
            elif stop_reason == "DeadlineExceeded":
                state, reason, message = FAILED, "DeadlineExceeded", f"max_runtime of {max_runtime} s exceeded"
            elif code is None:
                state, reason = FAILED, "ProcessLost"
                message = (
                    "the job's process ended while Crater was not running and left no exit status"
                    if adopted else "the job's process ended without recording an exit status"
                )
            elif code == 0:
                state, reason, message = SUCCEEDED, "Completed", "exited with code 0"
            else:
                state, reason, message = FAILED, "Error", f"exited with code {code}"
            if code is None and term_sent is not None:
                # The runner itself died of our signal before it could record a status (e.g. SIGTERM during
                # its start-up, or SIGKILL after the grace): report that signal, shell-style.
                child = self._children.get(uid)
                died_of = -child.returncode if child is not None and (child.returncode or 0) < 0 else signal.SIGKILL
                code = 128 + died_of
            self._update(conn, uid, state=state, reason=reason, message=message, exit_code=code, finished_at=now, code="", args="{}")
        self._children.pop(uid, None)

    def _watch_running(self) -> None:
        with self._lock:
            rows = self._conn.execute(
                "SELECT uid, pid, pid_start, started_at, max_runtime_s, term_sent_at FROM workloads WHERE state = ?",
                (RUNNING,),
            ).fetchall()
        now = self.clock()
        for uid, pid, pid_start, started, max_runtime, term_sent in rows:
            child = self._children.get(uid)
            exited = child.poll() is not None if child is not None else not self._alive(pid, pid_start)
            if exited:
                self._finish_if_exited(uid, adopted=child is None)
                continue
            if term_sent is None and max_runtime and started is not None and now - started >= max_runtime:
                with self._tx() as conn:
                    self._update(conn, uid, stop_reason="DeadlineExceeded", term_sent_at=now,
                                 message=f"stopping: max_runtime of {max_runtime} s exceeded")
                self._signal(pid, signal.SIGTERM)
            elif term_sent is not None and now - term_sent >= self.cancel_grace_s:
                self._kill_tree(pid, pid_start)

    def _place(self) -> None:
        with self._tx() as conn:
            head = conn.execute("SELECT COALESCE(MAX(rev), 0) FROM workloads").fetchone()[0]
            if head == self._placed_rev:
                return
            running = conn.execute(
                "SELECT devices, cpu_m, memory_bytes, uid, started_at, max_runtime_s FROM workloads WHERE state = ?",
                (RUNNING,),
            ).fetchall()
            held = {i for r in running for i in json.loads(r[0])}
            now = self.clock()
            by_index = {d.index: FreeDevice(d.index, d.resource, d.model) for d in self.devices}
            holding = [  # what running workloads hold, until their start + max_runtime (backfill)
                Running(r[3], r[1], r[2], tuple(by_index[i] for i in json.loads(r[0]) if i in by_index),
                        _ts(max(r[4] + r[5], now)) if r[4] is not None and r[5] else None)
                for r in running
            ]
            capacity = Capacity(
                cpu_m=self.cpu_m - sum(r[1] for r in running),
                memory_bytes=self.memory_bytes - sum(r[2] for r in running),
                devices=tuple(FreeDevice(d.index, d.resource, d.model) for d in self.devices if d.index not in held),
            )
            pending = conn.execute("SELECT uid, message FROM workloads WHERE state = ?", (PENDING,)).fetchall()
            requests = self._pending_requests(conn, [r[0] for r in pending])
            messages = dict(pending)
            decision = place(requests, capacity, holding, _ts(now))
            changed = [(uid, message) for uid, message in decision.waiting.items() if messages[uid] != message]
            if changed:  # as one _update per workload (revs head+1, head+2, ...), in one statement
                rev = self._next_rev(conn)
                conn.executemany(
                    "UPDATE workloads SET reason = ?, message = ?, code = ?, args = ?, rev = ? WHERE uid = ?",
                    [("Queued", message, decision.reasons[uid][0], json.dumps(decision.reasons[uid][1]), rev + i, uid)
                     for i, (uid, message) in enumerate(changed)],
                )
            for uid, devices in decision.placed.items():
                self._start(conn, uid, devices)
            self._placed_rev = conn.execute("SELECT COALESCE(MAX(rev), 0) FROM workloads").fetchone()[0]

    def _pending_requests(self, conn: sqlite3.Connection, uids: list[str]) -> list[Request]:
        """Placement requests of the pending workloads ``uids``. A request never changes while its workload
        is pending (priority, time and resources are written once, by :meth:`create`), so they are kept
        between rounds and only new workloads are read and decoded: a round over a long queue stays cheap."""
        cache = self._requests
        missing = [uid for uid in uids if uid not in cache]
        for i in range(0, len(missing), 500):
            chunk = missing[i:i + 500]
            rows = conn.execute(
                "SELECT uid, priority, created_at, cpu_m, memory_bytes, accelerators, model, max_runtime_s"
                f" FROM workloads WHERE uid IN ({','.join('?' * len(chunk))})", chunk,
            ).fetchall()
            for r in rows:
                cache[r[0]] = Request(uid=r[0], priority=r[1], created_at=_ts(r[2]), cpu_m=r[3], memory_bytes=r[4],
                                      accelerators=json.loads(r[5]), model=r[6], max_runtime_s=r[7])
        if len(cache) > len(uids):  # forget workloads that are no longer pending
            live = set(uids)
            self._requests = cache = {uid: req for uid, req in cache.items() if uid in live}
        return [cache[uid] for uid in uids]

    def _start(self, conn: sqlite3.Connection, uid: str, devices: tuple[int, ...]) -> None:
        spec = json.loads(conn.execute("SELECT spec FROM workloads WHERE uid = ?", (uid,)).fetchone()[0])
        folder = self.job_dir(uid)
        work = folder / "work"
        now = self.clock()
        # Whatever goes wrong here fails this workload only. Raising would roll back the whole placement round -
        # after the workloads placed before this one were already started, so that the next round would start
        # them again (duplicates), and no workload would ever be placed again while this one stays pending.
        try:
            cwd = work / spec["working_dir"] if spec.get("working_dir") else work
            cwd.mkdir(parents=True, exist_ok=True)
            (folder / "exit_code").unlink(missing_ok=True)  # an earlier attempt's
            env = job_environment(dict(os.environ), spec.get("env") or {}, uid, devices)
            with open(folder / "output.log", "ab") as log:
                proc = subprocess.Popen(
                    [sys.executable, "-S", RUNNER, str(folder / "exit_code"), str(cwd), "--", *spec["command"]],
                    cwd=str(cwd), env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True, close_fds=True,
                )
        except Exception as exc:  # noqa: BLE001 - e.g. OSError (mkdir, exec), ValueError (text no process can take)
            message = f"the job could not be started: {type(exc).__name__}: {exc}"
            message = message.encode("utf-8", "backslashreplace").decode("utf-8")[:500]
            self._update(conn, uid, state=FAILED, reason="StartError", message=message, finished_at=now, code="", args="{}")
            return
        try:
            pid_start = psutil.Process(proc.pid).create_time()
        except psutil.NoSuchProcess:  # pragma: no cover - exited within microseconds
            pid_start = None
        self._children[uid] = proc
        self._update(
            conn, uid, state=RUNNING, reason="Started", code="", args="{}", message=f"started on {self.node_name}"
            + (f" with devices {','.join(map(str, devices))}" if devices else ""),
            devices=json.dumps(list(devices)), pid=proc.pid, pid_start=pid_start, started_at=now,
        )
