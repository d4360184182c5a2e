"""The Kubernetes backend's change log (crater_app.cluster.kube.changes): cursors, limits, re-list signals."""

from __future__ import annotations

from crater_app.cluster.base import WorkloadStatus
from crater_app.cluster.kube.changes import ChangeLog
from crater_app.domain.jobs import JobPhase


def st(uid: str, phase=JobPhase.RUNNING) -> WorkloadStatus:
    return WorkloadStatus(uid=uid, phase=phase, raw_state="Running", reason="Running", message="")


def test_reads_in_order_with_limits_and_cursors():
    log = ChangeLog()
    first = log.read("")
    assert (first.statuses, first.relist) == ((), False)
    for i in range(5):
        log.append(st(f"u{i}"))
    a = log.read(first.cursor, limit=2)
    b = log.read(a.cursor, limit=10)
    assert [s.uid for s in a.statuses] == ["u0", "u1"] and [s.uid for s in b.statuses] == ["u2", "u3", "u4"]
    assert not a.relist and not b.relist
    assert log.read(b.cursor).statuses == () and log.read(b.cursor).cursor == b.cursor == log.cursor


def test_a_workload_appears_once_per_change():
    log = ChangeLog()
    log.append(st("u", JobPhase.RUNNING))
    log.append(st("u", JobPhase.SUCCEEDED))
    assert [s.phase for s in log.read("").statuses] == [JobPhase.RUNNING, JobPhase.SUCCEEDED]


def test_foreign_old_and_bad_cursors_ask_for_a_relist():
    log, other = ChangeLog(keep=4), ChangeLog()
    for i in range(20):
        log.append(st(f"u{i}"))
    assert other.read(log.cursor).relist, "a cursor of another process's log"
    assert log.read(f"{log.generation}:1").relist, "older than the oldest kept"
    assert log.read(f"{log.generation}:999").relist and log.read("nonsense").relist
    back = log.read("")
    assert back.relist and back.statuses[0].uid == f"u{20 - len(back.statuses)}"
    fresh = log.read(log.read("nonsense").cursor)
    assert not fresh.relist and fresh.statuses == ()


def test_restart_starts_a_new_generation():
    log = ChangeLog()
    log.append(st("a"))
    old = log.cursor
    log.restart()
    log.append(st("b"))
    r = log.read(old)
    assert r.relist and r.statuses == ()
    assert [s.uid for s in log.read(r.cursor).statuses] == [], "the re-list's cursor goes on from now"
    log.append(st("c"))
    assert [s.uid for s in log.read(r.cursor).statuses] == ["c"]
