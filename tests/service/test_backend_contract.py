"""The ClusterBackend contract, run against every implementation: the local backend (real processes) and the
in-memory fake the service tests use as a boundary mock (so the fake cannot drift from the real thing)."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from crater_app.cluster.base import ClusterBackend
from crater_app.cluster.local import LocalBackend
from tests.conftest import A100, gpu_devices, kill_backend_processes
from tests.fakes import FakeBackend
from tests.helpers import wait_for, within, workload


@pytest.fixture(params=["local", "fake"])
def backend(request, tmp_path):
    if request.param == "local":
        # A grace long enough for SIGTERM to end a job on a loaded machine too (SIGKILL is tested with the limits).
        be = LocalBackend(tmp_path / "data", devices=gpu_devices(4), cancel_grace_s=within(5))
        yield be
        kill_backend_processes(tmp_path / "data")
        be._conn.close()
    else:
        yield FakeBackend(gpu_devices(4))


def until_state(be: ClusterBackend, uid: str, states: set[str], timeout: float = 10.0):
    return wait_for(lambda: (st := be.status(uid)) is not None and st.state in states and st, timeout,
                    step=be.tick, what=f"{uid} in {states}")


def test_it_is_a_cluster_backend(backend):
    assert isinstance(backend, ClusterBackend)
    assert isinstance(backend.name, str) and backend.name


def test_inventory_reports_the_devices_and_no_allocation(backend):
    [node] = backend.inventory()
    assert [(d.index, d.resource, d.model) for d in node.devices] == [(i, "nvidia.com/gpu", A100) for i in range(4)]
    assert node.allocations == {} and node.cpu_m > 0 and node.memory_bytes > 0


def test_create_is_idempotent_and_starts_pending(backend):
    w = workload()
    backend.create(w)
    first = backend.status(w.uid)
    backend.create(w)
    assert backend.status(w.uid) == first
    assert first.state == "Pending" and first.exit_code is None and first.started_at is None
    assert [c.uid for c in backend.changes(0)] == [w.uid]


def test_create_many_queues_all_and_is_idempotent(backend):
    ws = [workload() for _ in range(3)]
    backend.create(ws[0])
    backend.create_many(ws)
    backend.create_many(ws)
    assert [backend.status(w.uid).state for w in ws] == ["Pending"] * 3
    assert sorted(c.uid for c in backend.changes(0)) == sorted(w.uid for w in ws)


def test_unknown_uids(backend):
    assert backend.status("nope") is None
    assert backend.read_logs("nope") == ""
    with pytest.raises(KeyError):
        backend.cancel("nope", "test")


def test_runs_to_success_with_logs(backend):
    w = workload("echo hello-from-job; exit 0", gpus=2)
    backend.create(w)
    st = until_state(backend, w.uid, {"Succeeded"})
    assert st.exit_code == 0 and st.devices == (0, 1)
    assert st.started_at is not None and st.finished_at is not None and st.finished_at >= st.started_at
    assert "hello-from-job" in backend.read_logs(w.uid)


def test_nonzero_exit_fails_with_the_code(backend):
    w = workload("exit 3")
    backend.create(w)
    st = until_state(backend, w.uid, {"Failed"})
    assert st.exit_code == 3 and st.exit_signal is None, "exited by itself: no signal"


def test_running_workloads_hold_their_devices(backend):
    w = workload("sleep 30", gpus=3)
    backend.create(w)
    st = until_state(backend, w.uid, {"Running"})
    assert st.devices == (0, 1, 2)
    [node] = backend.inventory()
    assert node.allocations == {0: w.uid, 1: w.uid, 2: w.uid}
    backend.cancel(w.uid, "done")
    until_state(backend, w.uid, {"Cancelled"})
    assert backend.inventory()[0].allocations == {}


def test_gang_placement_waits_with_the_shortfall(backend):
    a, b = workload("sleep 30", gpus=2), workload("sleep 30", gpus=3, at=1)
    backend.create(a)
    backend.create(b)
    until_state(backend, a.uid, {"Running"})
    backend.tick()
    st = backend.status(b.uid)
    assert st.state == "Pending" and st.devices == ()
    assert st.message == "waiting for 3 × nvidia.com/gpu; 2 × nvidia.com/gpu free; no estimate of its start"
    assert (st.code, st.args) == ("placement.waiting_unbounded", {
        "request": {"nvidia.com/gpu": 3}, "free": {"nvidia.com/gpu": 2}, "expected_at": None})


def test_backfill_a_bounded_job_uses_an_idle_device_ahead_of_a_blocked_one(backend):
    running = workload("sleep 30", gpus=3, max_runtime=600)
    backend.create(running)
    until_state(backend, running.uid, {"Running"})
    head = workload("sleep 30", gpus=4, at=1)
    short = workload("sleep 30", gpus=1, at=2, max_runtime=60)
    unbounded = workload("sleep 30", gpus=1, at=3)
    for w in (head, short, unbounded):
        backend.create(w)
    until_state(backend, short.uid, {"Running"})
    backend.tick()
    st = backend.status(head.uid)
    assert st.state == "Pending" and st.code == "placement.waiting" and st.args["expected_at"]
    assert 9 * 60 <= st.args["wait"] <= 10 * 60, "the running job's bound: within 10 minutes"
    st = backend.status(unbounded.uid)
    assert (st.state, st.code) == ("Pending", "placement.queued")
    assert st.args["blocker"] == head.uid and st.args["position"] == 2


def test_a_finished_uid_runs_again_for_its_next_attempt(backend):
    w = workload("echo run; sleep 30")
    backend.create(w)
    until_state(backend, w.uid, {"Running"})
    backend.create(replace(w, attempt=2))  # not final yet: nothing happens
    assert backend.status(w.uid).attempt == 1
    backend.cancel(w.uid, "preempted")
    first = until_state(backend, w.uid, {"Cancelled"})
    assert first.attempt == 1
    again = replace(w, attempt=2, command=("sh", "-c", "echo again"))
    backend.create(again)
    st = backend.status(w.uid)
    assert (st.state, st.attempt, st.exit_code, st.started_at, st.finished_at) == ("Pending", 2, None, None, None)
    assert st.rev > first.rev
    done = until_state(backend, w.uid, {"Succeeded"})
    assert done.attempt == 2 and done.exit_code == 0
    backend.create(again)  # the same attempt again: idempotent
    backend.create(w)  # an earlier one: ignored
    assert backend.status(w.uid) == done
    logs = wait_for(lambda: "again" in backend.read_logs(w.uid) and backend.read_logs(w.uid), 5)
    assert "again" in logs


def test_priority_first(backend):
    blocker = workload("sleep 30", gpus=4)
    backend.create(blocker)
    until_state(backend, blocker.uid, {"Running"})
    low, high = workload("sleep 30", gpus=4, priority=0, at=1), workload("sleep 30", gpus=4, priority=5, at=2)
    backend.create(low)
    backend.create(high)
    backend.tick()
    backend.cancel(blocker.uid, "make room")
    until_state(backend, high.uid, {"Running"})
    assert backend.status(low.uid).state == "Pending"


def test_cancel_pending_is_immediate(backend):
    blocker, w = workload("sleep 30", gpus=4), workload("sleep 30", gpus=1, at=1)
    backend.create(blocker)
    backend.create(w)
    until_state(backend, blocker.uid, {"Running"})
    backend.cancel(w.uid, "not needed")
    st = backend.status(w.uid)
    assert st.state == "Cancelled" and st.started_at is None and st.finished_at is not None


def test_cancel_running_is_stopping_until_the_process_exits(backend):
    w = workload(["sleep", "30"], gpus=2)
    backend.create(w)
    until_state(backend, w.uid, {"Running"})
    backend.cancel(w.uid, "by test")
    stopping = backend.status(w.uid)
    assert stopping.state == "Stopping" and stopping.finished_at is None and stopping.devices == (0, 1)
    assert backend.inventory()[0].allocations == {0: w.uid, 1: w.uid}, "a stopping workload holds its devices"
    backend.cancel(w.uid, "twice is harmless")
    assert backend.status(w.uid).state in ("Stopping", "Cancelled")
    st = until_state(backend, w.uid, {"Cancelled"}, timeout=5)
    assert st.finished_at is not None and "by test" in st.message
    assert (st.exit_code, st.exit_signal) == (143, 15), "sleep died of SIGTERM: 128 + 15, signal 15"
    assert backend.inventory()[0].allocations == {}


@pytest.mark.parametrize("running", [False, True])
def test_a_cancel_with_a_code_ends_with_that_code(backend, running):
    """The reason of a cancel is a catalogue code and its arguments (``job.cancelled_by`` with the user), so that a
    cancelled job's final reason reads in every language; ``reason`` is its English message."""
    blocker = workload("sleep 30", gpus=4)
    w = workload(["sleep", "30"], gpus=1) if running else workload("sleep 30", gpus=1, at=1)
    backend.create(w if running else blocker)
    if not running:
        backend.create(w)
    until_state(backend, w.uid if running else blocker.uid, {"Running"})
    backend.cancel(w.uid, "cancelled by alice", code="job.cancelled_by", args={"user": "alice"})
    st = until_state(backend, w.uid, {"Cancelled"}, timeout=5)
    assert (st.code, st.args, st.message) == ("job.cancelled_by", {"user": "alice"}, "cancelled by alice")


def test_max_runtime(backend):
    w = workload(["sleep", "30"], max_runtime=1)
    backend.create(w)
    st = until_state(backend, w.uid, {"Failed"}, timeout=6)
    assert st.reason == "DeadlineExceeded" and "max_runtime" in st.message
    assert (st.exit_code, st.exit_signal) == (143, 15)


def test_changes_is_a_watch_with_increasing_revisions(backend):
    ws = [workload(f"exit {i}", at=i) for i in range(3)]
    for w in ws:
        backend.create(w)
    changes = backend.changes(0)
    revs = [c.rev for c in changes]
    assert revs == sorted(revs) and len(set(revs)) == len(revs) == 3
    assert backend.changes(revs[0]) == changes[1:]
    assert backend.changes(0, limit=2) == changes[:2]
    assert backend.changes(revs[-1]) == []
    until_state(backend, ws[2].uid, {"Failed"})
    later = backend.changes(revs[-1])
    assert later and all(c.rev > revs[-1] for c in later)
    assert [c.rev for c in later] == sorted(c.rev for c in later)
    assert {c.uid for c in later} == {w.uid for w in ws}


def test_adopt_is_safe_to_call(backend):
    w = workload("exit 0")
    backend.create(w)
    backend.adopt()
    until_state(backend, w.uid, {"Succeeded"})
    backend.adopt()
    assert backend.status(w.uid).state == "Succeeded"


def test_extending_the_holder_moves_the_expected_start_of_the_job_it_blocks(backend):
    running = workload("sleep 30", gpus=4, max_runtime=600)
    backend.create(running)
    until_state(backend, running.uid, {"Running"})
    head = workload("sleep 30", gpus=1, at=1)
    backend.create(head)
    backend.tick()
    assert 9 * 60 <= backend.status(head.uid).args["wait"] <= 10 * 60
    backend.extend(running.uid, 3600)  # the next round re-estimates, though nothing else changed
    backend.tick()
    st = backend.status(head.uid)
    assert st.state == "Pending" and 59 * 60 <= st.args["wait"] <= 60 * 60


def test_extend_moves_the_deadline(backend):
    w = workload("sleep 30", max_runtime=1)
    backend.create(w)
    backend.extend(w.uid, 60)  # while pending: the deadline it will start with
    until_state(backend, w.uid, {"Running"})
    backend.extend(w.uid, 120)  # while running: later still
    deadline = time.monotonic() + 2.0  # past the original 1 s max_runtime
    while time.monotonic() < deadline:
        backend.tick()
        time.sleep(0.05)
    assert backend.status(w.uid).state == "Running"
    backend.extend(w.uid, 1)  # and earlier: it is past the new deadline, so it is stopped for it
    st = until_state(backend, w.uid, {"Failed"}, timeout=6)
    assert st.reason == "DeadlineExceeded" and "max_runtime of 1" in st.message
    backend.extend(w.uid, 600)  # a finished workload keeps its end
    assert backend.status(w.uid).state == "Failed"
    with pytest.raises(KeyError):
        backend.extend("nope", 60)
