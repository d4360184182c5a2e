"""The local backend's own state: one SQLite file, ``<data_dir>/local/backend.db``.

It survives restarts of the web process and is shared safely between processes (WAL mode); writes run under
``BEGIN IMMEDIATE``, so placement never gives one device to two workloads. Tables: ``workloads`` (one row per
workload uid; ``rev`` increases with every change), ``accounts`` (the OS accounts of Crater users,
:mod:`crater_app.cluster.local.accounts`) and ``meta`` (``store_id``: a random id made with the file). Columns added
by later versions are added to an older file when it is opened.

The watch cursor (:meth:`Store.changes`) is ``"<store_id>:<rev>"``: a cursor of another file (the store was replaced
or wiped), one ahead of this file's revisions, or one that is not of this form asks the caller to re-list
(``Changes.relist``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from contextlib import contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import ContextManager, Iterator

from crater_app.cluster.base import Changes, Placement, ReplicaStatus, WorkloadStatus
from crater_app.domain.job_tasks import SINGLE_TASK
from crater_app.domain.jobs import JobPhase

PENDING, RUNNING, STOPPING = "Pending", "Running", "Stopping"
#: a gang whose replicas are being stopped to start again (``restart_policy`` ``restart``; Volcano's ``Restarting``)
RESTARTING = "Restarting"
SUCCEEDED, FAILED, CANCELLED = "Succeeded", "Failed", "Cancelled"
FINAL = (SUCCEEDED, FAILED, CANCELLED)
#: states whose workload holds its devices, CPU and memory (a Stopping one until its last process has exited)
HOLDING = (RUNNING, STOPPING, RESTARTING)
#: the store's words (``WorkloadStatus.raw_state``) as Crater's phases (a restart is the backend's own: the job runs
#: on); any other word has none
PHASES = {PENDING: JobPhase.QUEUED, RUNNING: JobPhase.RUNNING, STOPPING: JobPhase.STOPPING,
          RESTARTING: JobPhase.RUNNING, SUCCEEDED: JobPhase.SUCCEEDED, FAILED: JobPhase.FAILED,
          CANCELLED: JobPhase.CANCELLED}

SCHEMA = """
CREATE TABLE IF NOT EXISTS workloads (
  uid TEXT PRIMARY KEY, spec TEXT NOT NULL, priority INTEGER NOT NULL, created_at REAL NOT NULL,
  cpu_m INTEGER NOT NULL, memory_bytes INTEGER NOT NULL, accelerators TEXT NOT NULL, model TEXT,
  max_runtime_s INTEGER, state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', message TEXT NOT NULL DEFAULT '',
  exit_code INTEGER, devices TEXT NOT NULL DEFAULT '[]', pid INTEGER, pid_start REAL,
  started_at REAL, finished_at REAL, stop_reason TEXT, stop_message TEXT, term_sent_at REAL,
  rev INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_workloads_rev ON workloads(rev);
CREATE INDEX IF NOT EXISTS ix_workloads_state ON workloads(state, priority, created_at);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS accounts (
  user TEXT PRIMARY KEY, account TEXT NOT NULL UNIQUE, uid INTEGER NOT NULL UNIQUE, gid INTEGER NOT NULL,
  created_at REAL NOT NULL
);
"""
#: columns of ``workloads`` newer than its first version: name -> definition
ADDED_COLUMNS = {
    "code": "TEXT NOT NULL DEFAULT ''",  # the message as a catalogue code (event.<code>) ...
    "args": "TEXT NOT NULL DEFAULT '{}'",  # ... and its arguments (JSON)
    "exit_signal": "INTEGER",  # the signal that ended the job's main process
    "limits": "TEXT NOT NULL DEFAULT '{}'",  # outcomes.Limits as JSON: amounts, mechanisms, cgroup folders
    "attempt": "INTEGER NOT NULL DEFAULT 1",  # the job's run (Workload.attempt): a requeued job runs again
    "stop_code": "TEXT",  # the cancel's reason as a catalogue code (event.<code>; stop_message its English) ...
    "stop_args": "TEXT",  # ... and its arguments (JSON)
    # the workload's replicas as a JSON list of objects, in task order: "task", "replica" (index) and, once placed,
    # what each one runs with (see crater_app.cluster.local.replicas); '' for a row of one replica written before
    "replicas": "TEXT NOT NULL DEFAULT ''",
}
STATUS_COLUMNS = ("uid, state, reason, message, exit_code, devices, started_at, finished_at, rev, code, args,"
                  " exit_signal, attempt, replicas")
#: the task of a row written before workloads had tasks (one replica)
DEFAULT_TASK = SINGLE_TASK  # the one task of a single-task job spec


def ts(value: float | None) -> datetime | None:
    """Epoch seconds as a UTC datetime (``None`` stays ``None``)."""
    return None if value is None else datetime.fromtimestamp(value, timezone.utc)


def replica_records(raw: str | None) -> list[dict]:
    """The ``replicas`` column as a list of objects (one replica of :data:`DEFAULT_TASK` for a row without it)."""
    try:
        found = json.loads(raw) if raw else None
    except ValueError:
        found = None
    if not isinstance(found, list) or not found or not all(isinstance(r, dict) for r in found):
        return [{"task": DEFAULT_TASK, "replica": 0}]
    return found


def _replica_phase(state: str, record: dict, started: bool) -> str:
    """A replica's phase: its own (``phase``, written when it ended) or the workload's where it has none."""
    if record.get("phase"):
        return record["phase"]
    if not started:
        return PENDING
    return RUNNING if state in HOLDING else state if state in (SUCCEEDED, FAILED) else FAILED


def status_from_row(row: tuple, node: str) -> WorkloadStatus:
    """A :class:`WorkloadStatus` from a row of :data:`STATUS_COLUMNS`, its replicas placed on ``node``."""
    (uid, state, reason, message, exit_code, devices, started, finished, rev, code, args, exit_signal, attempt,
     replicas) = row
    try:
        decoded = json.loads(args or "{}")
    except ValueError:
        decoded = {}
    records = replica_records(replicas)
    placed = started is not None or state in HOLDING
    if len(records) == 1 and "devices" not in records[0]:
        records = [{**records[0], "devices": json.loads(devices)}]
    placements = tuple(Placement(r["task"], r["replica"], node, tuple(r.get("devices") or ()))
                       for r in records) if placed else ()
    views = tuple(ReplicaStatus(
        task=r["task"], replica=r["replica"], phase=_replica_phase(state, r, placed), node=node if placed else "",
        exit_code=r.get("exit_code", exit_code if len(records) == 1 and state not in HOLDING else None),
        reason=r.get("reason", ""), restarts=r.get("restarts", 0),
    ) for r in records)
    return WorkloadStatus(
        uid=uid, phase=PHASES.get(state), raw_state=state, reason=reason, message=message, exit_code=exit_code,
        started_at=ts(started), finished_at=ts(finished), code=code or "",
        args=decoded if isinstance(decoded, dict) else {}, exit_signal=exit_signal, attempt=attempt or 1,
        placements=placements, replicas=views,
    )


class Store:
    """The SQLite store at ``path`` (created with its folder when missing). Thread-safe: one connection behind a
    re-entrant lock (``lock``), transactions through :meth:`tx`. ``turn``: a re-entrant context manager taken before
    each write transaction, so that the writers of several processes (web workers) queue for the database's one
    write lock instead of polling in SQLite's busy handler (``services.context.WriterLock``); default: none."""

    def __init__(self, path: Path, turn: ContextManager | None = None, node: str = "") -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.node = node
        self.turn = turn if turn is not None else nullcontext()
        self.lock = threading.RLock()
        self.conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(SCHEMA)
        with self.tx() as conn:
            have = {r[1] for r in conn.execute("PRAGMA table_info(workloads)")}
            for name, definition in ADDED_COLUMNS.items():
                if name not in have:
                    conn.execute(f"ALTER TABLE workloads ADD COLUMN {name} {definition}")
            conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', ?)", (uuid.uuid4().hex,))
            self.store_id = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``), committed on success and rolled back on any exception."""
        with self.turn, self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def read(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        """Rows of one query, outside any transaction of this process."""
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    @staticmethod
    def head(conn: sqlite3.Connection) -> int:
        """The latest revision (0 when empty)."""
        return conn.execute("SELECT COALESCE(MAX(rev), 0) FROM workloads").fetchone()[0]

    def next_rev(self, conn: sqlite3.Connection) -> int:
        """The revision the next change gets."""
        return self.head(conn) + 1

    def update(self, conn: sqlite3.Connection, uid: str, **cols: object) -> None:
        """Set ``cols`` of workload ``uid`` and give it the next revision (a change the watch reports)."""
        cols["rev"] = self.next_rev(conn)
        assignments = ", ".join(f"{k} = ?" for k in cols)
        conn.execute(f"UPDATE workloads SET {assignments} WHERE uid = ?", (*cols.values(), uid))

    def status(self, uid: str) -> WorkloadStatus | None:
        """Current status of ``uid`` or ``None``."""
        rows = self.read(f"SELECT {STATUS_COLUMNS} FROM workloads WHERE uid = ?", (uid,))
        return status_from_row(rows[0], self.node) if rows else None

    def list_all(self) -> list[WorkloadStatus]:
        """The current status of every workload, in change order."""
        return [status_from_row(r, self.node)
                for r in self.read(f"SELECT {STATUS_COLUMNS} FROM workloads ORDER BY rev")]

    def cursor(self, rev: int) -> str:
        """The watch cursor of revision ``rev`` of this file (``"<store_id>:<rev>"``)."""
        return f"{self.store_id}:{rev}"

    def changes(self, cursor: str, limit: int) -> Changes:
        """Statuses changed after ``cursor`` (``""``: from the first), in change order (at most ``limit``), and the
        cursor to go on from; ``relist`` (with no statuses and the cursor of the latest revision) for a cursor this
        file did not give (see the module docstring)."""
        with self.lock:
            head = self.head(self.conn)
            store_id, _, rev_text = cursor.rpartition(":")
            if cursor == "":
                since = 0
            elif store_id == self.store_id and rev_text.isdigit() and int(rev_text) <= head:
                since = int(rev_text)
            else:
                return Changes((), self.cursor(head), relist=True)
            rows = self.conn.execute(f"SELECT {STATUS_COLUMNS} FROM workloads WHERE rev > ? ORDER BY rev LIMIT ?",
                                     (since, limit)).fetchall()
        statuses = tuple(status_from_row(r, self.node) for r in rows)
        return Changes(statuses, self.cursor(rows[-1][8] if rows else since))

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()
