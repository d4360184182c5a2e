"""The local backend's store across versions: rows written before workloads had tasks read (and run) as one task
``main`` of one replica, and a cursor of a replaced store file asks for a re-list."""

from __future__ import annotations

import json
import sqlite3
import time

from crater_app.cluster.base import Placement
from crater_app.cluster.local import LocalBackend
from crater_app.domain.jobs import JobPhase
from tests.conftest import gpu_devices, kill_backend_processes
from tests.helpers import wait_for, workload

#: the store's first schema (before codes, limits, attempts and replicas)
OLD_SCHEMA = """
CREATE TABLE workloads (
  uid TEXT PRIMARY KEY, spec TEXT NOT NULL, priority INTEGER NOT NULL, created_at REAL NOT NULL,
  cpu_m INTEGER NOT NULL, memory_bytes INTEGER NOT NULL, accelerators TEXT NOT NULL, model TEXT,
  max_runtime_s INTEGER, state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', message TEXT NOT NULL DEFAULT '',
  exit_code INTEGER, devices TEXT NOT NULL DEFAULT '[]', pid INTEGER, pid_start REAL,
  started_at REAL, finished_at REAL, stop_reason TEXT, stop_message TEXT, term_sent_at REAL,
  rev INTEGER NOT NULL
);
"""


def _old_store(data_dir, rows: list[tuple]) -> None:
    path = data_dir / "local" / "backend.db"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.executescript(OLD_SCHEMA)
    conn.executemany("INSERT INTO workloads (uid, spec, priority, created_at, cpu_m, memory_bytes, accelerators,"
                     " state, exit_code, devices, started_at, finished_at, rev) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     rows)
    conn.commit()
    conn.close()


def test_rows_of_one_command_read_and_run_as_one_task_of_one_replica(tmp_path):
    now = time.time()
    spec = {"name": "old", "project": "default", "user": "alice", "image": "local/host",
            "command": ["sh", "-c", "echo from-an-old-row"], "env": {}, "working_dir": None}
    _old_store(tmp_path / "data", [
        ("done", json.dumps(spec), 0, now, 1000, 0, json.dumps({"nvidia.com/gpu": 1}), "Succeeded", 0, "[1]",
         now - 5, now - 1, 1),
        ("waiting", json.dumps(spec), 0, now, 1000, 0, json.dumps({"nvidia.com/gpu": 1}), "Pending", None, "[]",
         None, None, 2),
    ])
    be = LocalBackend(tmp_path / "data", devices=gpu_devices(2))
    try:
        done = be.status("done")
        assert (done.phase, done.raw_state, done.exit_code) == (JobPhase.SUCCEEDED, "Succeeded", 0)
        assert done.placements == (Placement("main", 0, be.node_name, (1,)),)
        assert [(r.task, r.replica, r.phase, r.exit_code) for r in done.replicas] == [("main", 0, "Succeeded", 0)]
        assert {st.uid for st in be.list_workloads()} == {"done", "waiting"}
        st = wait_for(lambda: (s := be.status("waiting")) and s.phase == JobPhase.SUCCEEDED and s, 10, step=be.tick)
        assert st.devices == (0,) and "from-an-old-row" in be.read_logs("waiting", task="main")
    finally:
        kill_backend_processes(tmp_path / "data")
        be.close()


def test_a_cursor_of_a_replaced_store_file_asks_for_a_relist(tmp_path):
    be = LocalBackend(tmp_path / "data", devices=gpu_devices(1))
    be.create(workload("exit 0"))
    cursor = be.changes().cursor
    be.close()
    (tmp_path / "data" / "local" / "backend.db").unlink()
    again = LocalBackend(tmp_path / "data", devices=gpu_devices(1))
    try:
        w = workload("exit 0")
        again.create(w)
        changes = again.changes(cursor)
        assert changes.relist and changes.statuses == ()
        assert [st.uid for st in again.list_workloads()] == [w.uid]
        assert again.changes(changes.cursor).statuses == ()
    finally:
        again.close()
