"""The ClusterBackend contract, run against every implementation: the local backend (real processes), the
in-memory fake the service tests use as a boundary mock (so the fake cannot drift from the real thing), and the
Kubernetes backend - against the API mock and cluster simulator, or a real cluster when ``CRATER_TEST_KUBECONFIG``
is set (``tests/kube_backends.py``, docs/kubernetes-backend.md)."""

from __future__ import annotations

import re
import time
from dataclasses import replace

import pytest

from crater_app.cluster.base import CAPABILITIES, Changes, ClusterBackend, Placement
from crater_app.domain.jobs import JobPhase
from crater_app.domain.quota import Quota, parse_quota
from crater_app.cluster.kube.backend import KubernetesBackend
from crater_app.cluster.local import LocalBackend
from tests import kube_backends
from tests.conftest import A100, gpu_devices, kill_backend_processes
from tests.fakes import FakeBackend
from tests.helpers import gang, wait_for, within, workload


@pytest.fixture(params=["local", "fake", "kubernetes"])
def backend(request, tmp_path):
    if request.param == "local":
        # A grace long enough for SIGTERM to end a job on a loaded machine too (SIGKILL is tested with the limits).
        be = LocalBackend(tmp_path / "data", devices=gpu_devices(4), cancel_grace_s=within(5))
        yield be
        kill_backend_processes(tmp_path / "data")
        be._conn.close()
    elif request.param == "kubernetes":
        yield from kube_backends.contract_backend(request)
    else:
        yield FakeBackend(gpu_devices(4))


def crater_places(backend: ClusterBackend) -> None:
    """Skip a test of Crater's own placement (its queue order, backfill estimates and their messages): on
    Kubernetes, Volcano's scheduler places workloads and says why one waits."""
    if isinstance(backend, KubernetesBackend):
        pytest.skip("Volcano places the workloads of the Kubernetes backend")


P = JobPhase


def until_state(be: ClusterBackend, uid: str, phases: set[JobPhase], timeout: float = 10.0):
    return wait_for(lambda: (st := be.status(uid)) is not None and st.phase in phases and st, timeout,
                    step=be.tick, what=f"{uid} in {phases}")


def watch(be: ClusterBackend, cursor: str = "", limit: int = 1000) -> Changes:
    changes = be.changes(cursor, limit)
    assert isinstance(changes, Changes) and isinstance(changes.cursor, str) and not changes.relist
    return changes


def test_it_is_a_cluster_backend(backend):
    assert isinstance(backend, ClusterBackend)
    assert isinstance(backend.name, str) and backend.name
    assert backend.capabilities <= CAPABILITIES


def test_capacity_is_the_inventory_without_allocations(backend):
    [node] = backend.capacity()
    assert node.devices == backend.inventory()[0].devices and node.allocations == {}


def test_the_node_carries_the_kubelets_standard_labels(backend):
    [node] = backend.capacity()
    labels = node.labels
    assert labels["kubernetes.io/hostname"] == node.name and labels["kubernetes.io/os"] == "linux"
    assert labels["kubernetes.io/arch"] in {"amd64", "arm64", "ppc64le", "s390x", "riscv64"}
    assert backend.inventory()[0].labels == labels


def test_a_backend_without_queues_accepts_ensure_queue(backend):
    backend.ensure_queue("default", parse_quota({"capability": {"nvidia.com/gpu": "2"}}), {"alice": Quota()})
    assert backend.manifests("nope") == []


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
    assert first.phase == P.QUEUED and first.exit_code is None and first.started_at is None and first.placements == ()
    assert [(r.task, r.replica, r.phase) for r in first.replicas] == [("main", 0, "Pending")]
    assert [c.uid for c in watch(backend).statuses] == [w.uid]
    assert [st.uid for st in backend.list_workloads()] == [w.uid]


def test_create_many_queues_all_and_is_idempotent(backend):
    ws = [workload() for _ in range(3)]
    backend.create(ws[0])
    backend.create_many(ws)
    backend.create_many(ws)
    assert [backend.status(w.uid).phase for w in ws] == [P.QUEUED] * 3
    assert sorted(c.uid for c in watch(backend).statuses) == sorted(w.uid for w in ws)
    assert sorted(st.uid for st in backend.list_workloads()) == sorted(w.uid for w in ws)


def test_unknown_uids(backend):
    assert backend.status("nope") is None
    assert backend.read_logs("nope") == "" and backend.read_logs("nope", task="main", replica=3) == ""
    with pytest.raises(KeyError):
        backend.cancel("nope", "test")


def test_runs_to_success_with_logs(backend):
    w = workload("echo hello-from-job; exit 0", gpus=2)
    backend.create(w)
    st = until_state(backend, w.uid, {P.SUCCEEDED})
    assert st.exit_code == 0 and st.devices == (0, 1) and st.raw_state
    [node] = backend.inventory()
    assert st.placements == (Placement("main", 0, node.name, (0, 1)),)
    assert [(r.task, r.replica, r.phase, r.exit_code) for r in st.replicas] == [("main", 0, "Succeeded", 0)]
    assert st.started_at is not None and st.finished_at is not None and st.finished_at >= st.started_at
    assert "hello-from-job" in backend.read_logs(w.uid)
    assert backend.read_logs(w.uid, task="main", replica=0) == backend.read_logs(w.uid)
    assert backend.read_logs(w.uid, task="other") == "" and backend.read_logs(w.uid, replica=1) == ""


def test_nonzero_exit_fails_with_the_code(backend):
    w = workload("exit 3")
    backend.create(w)
    st = until_state(backend, w.uid, {P.FAILED})
    assert st.exit_code == 3 and st.exit_signal is None, "exited by itself: no signal"


def test_running_workloads_hold_their_devices(backend):
    w = workload("sleep 30", gpus=3)
    backend.create(w)
    st = until_state(backend, w.uid, {P.RUNNING})
    assert st.devices == (0, 1, 2)
    [node] = backend.inventory()
    assert node.allocations == {0: w.uid, 1: w.uid, 2: w.uid}
    backend.cancel(w.uid, "done")
    until_state(backend, w.uid, {P.CANCELLED})
    assert backend.inventory()[0].allocations == {}


def test_gang_placement_waits_with_the_shortfall(backend):
    crater_places(backend)
    a, b = workload("sleep 30", gpus=2), workload("sleep 30", gpus=3, at=1)
    backend.create(a)
    backend.create(b)
    until_state(backend, a.uid, {P.RUNNING})
    backend.tick()
    st = backend.status(b.uid)
    assert st.phase == P.QUEUED and st.devices == ()
    assert st.message == "waiting for 3 × nvidia.com/gpu; 2 × nvidia.com/gpu free; no estimate of its start"
    assert (st.code, st.args) == ("placement.waiting_unbounded", {
        "request": {"nvidia.com/gpu": 3}, "free": {"nvidia.com/gpu": 2}, "expected_at": None})


def test_backfill_a_bounded_job_uses_an_idle_device_ahead_of_a_blocked_one(backend):
    crater_places(backend)
    running = workload("sleep 30", gpus=3, max_runtime=600)
    backend.create(running)
    until_state(backend, running.uid, {P.RUNNING})
    head = workload("sleep 30", gpus=4, at=1)
    short = workload("sleep 30", gpus=1, at=2, max_runtime=60)
    unbounded = workload("sleep 30", gpus=1, at=3)
    for w in (head, short, unbounded):
        backend.create(w)
    until_state(backend, short.uid, {P.RUNNING})
    backend.tick()
    st = backend.status(head.uid)
    assert st.phase == P.QUEUED and st.code == "placement.waiting" and st.args["expected_at"]
    assert 9 * 60 <= st.args["wait"] <= 10 * 60, "the running job's bound: within 10 minutes"
    st = backend.status(unbounded.uid)
    assert (st.phase, st.raw_state and st.code) == (P.QUEUED, "placement.queued")
    assert st.args["blocker"] == head.uid and st.args["position"] == 2


def test_a_finished_uid_runs_again_for_its_next_attempt(backend):
    w = workload("echo run; sleep 30")
    backend.create(w)
    until_state(backend, w.uid, {P.RUNNING})
    backend.create(replace(w, attempt=2))  # not final yet: nothing happens
    assert backend.status(w.uid).attempt == 1
    backend.cancel(w.uid, "preempted")
    first = until_state(backend, w.uid, {P.CANCELLED})
    assert first.attempt == 1
    cursor = watch(backend).cursor
    again = replace(w, tasks=(replace(w.tasks[0], command=("sh", "-c", "echo again")),), attempt=2)
    backend.create(again)
    st = backend.status(w.uid)
    assert (st.phase, st.attempt, st.exit_code, st.started_at, st.finished_at) == (P.QUEUED, 2, None, None, None)
    assert st.placements == () and [r.phase for r in st.replicas] == ["Pending"]
    assert watch(backend, cursor).statuses == (st,), "the new run is a change"
    done = until_state(backend, w.uid, {P.SUCCEEDED})
    assert done.attempt == 2 and done.exit_code == 0
    backend.create(again)  # the same attempt again: idempotent
    backend.create(w)  # an earlier one: ignored
    assert backend.status(w.uid) == done
    logs = wait_for(lambda: "again" in backend.read_logs(w.uid) and backend.read_logs(w.uid), 5)
    assert "again" in logs


def test_priority_first(backend):
    crater_places(backend)
    blocker = workload("sleep 30", gpus=4)
    backend.create(blocker)
    until_state(backend, blocker.uid, {P.RUNNING})
    low, high = workload("sleep 30", gpus=4, priority=0, at=1), workload("sleep 30", gpus=4, priority=5, at=2)
    backend.create(low)
    backend.create(high)
    backend.tick()
    backend.cancel(blocker.uid, "make room")
    until_state(backend, high.uid, {P.RUNNING})
    assert backend.status(low.uid).phase == P.QUEUED


def test_cancel_pending_is_immediate(backend):
    blocker, w = workload("sleep 30", gpus=4), workload("sleep 30", gpus=1, at=1)
    backend.create(blocker)
    until_state(backend, blocker.uid, {P.RUNNING})
    backend.create(w)  # after the blocker runs: Volcano orders jobs made in the same second by uid, not by arrival
    backend.tick()
    backend.cancel(w.uid, "not needed")
    st = backend.status(w.uid)
    assert st.phase == P.CANCELLED and st.started_at is None and st.finished_at is not None


def test_cancel_running_is_stopping_until_the_process_exits(backend):
    w = workload(["sleep", "30"], gpus=2)
    backend.create(w)
    until_state(backend, w.uid, {P.RUNNING})
    backend.cancel(w.uid, "by test")
    stopping = backend.status(w.uid)
    assert stopping.phase == P.STOPPING and stopping.finished_at is None and stopping.devices == (0, 1)
    assert backend.inventory()[0].allocations == {0: w.uid, 1: w.uid}, "a stopping workload holds its devices"
    backend.cancel(w.uid, "twice is harmless")
    assert backend.status(w.uid).phase in (P.STOPPING, P.CANCELLED)
    st = until_state(backend, w.uid, {P.CANCELLED}, timeout=5)
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
    until_state(backend, w.uid if running else blocker.uid, {P.RUNNING})
    if not running:  # after the blocker runs: Volcano orders jobs made in the same second by uid, not by arrival
        backend.create(w)
        backend.tick()
    backend.cancel(w.uid, "cancelled by alice", code="job.cancelled_by", args={"user": "alice"})
    st = until_state(backend, w.uid, {P.CANCELLED}, timeout=5)
    assert (st.code, st.args, st.message) == ("job.cancelled_by", {"user": "alice"}, "cancelled by alice")


def test_max_runtime(backend):
    w = workload(["sleep", "30"], max_runtime=1)
    backend.create(w)
    st = until_state(backend, w.uid, {P.FAILED}, timeout=6)
    assert st.reason == "DeadlineExceeded" and "max_runtime" in st.message
    assert (st.exit_code, st.exit_signal) == (143, 15)
    assert _stopped(backend, st, "DeadlineExceeded") == [("main", 0)], "stopped by Crater"
    assert isinstance(backend, KubernetesBackend) or st.replicas[0].exit_code == 143, "its exit code kept"


def test_changes_is_a_watch_with_increasing_revisions(backend):
    ws = [workload(f"exit {i}", at=i) for i in range(3)]
    for w in ws:
        backend.create(w)
    everything = watch(backend)
    assert [c.uid for c in everything.statuses] == [w.uid for w in ws], "oldest change first"
    first = watch(backend, limit=1)
    assert first.statuses == everything.statuses[:1]
    rest = watch(backend, first.cursor)
    assert rest.statuses == everything.statuses[1:] and rest.cursor == everything.cursor
    assert watch(backend, everything.cursor).statuses == (), "nothing new"
    until_state(backend, ws[2].uid, {P.FAILED})
    later = [c for page in iter_pages(backend, everything.cursor) for c in page]
    assert {c.uid for c in later} == {w.uid for w in ws}
    assert [c.phase for c in later if c.uid == ws[2].uid][-1] == P.FAILED, "the latest change of each comes last"


def iter_pages(be: ClusterBackend, cursor: str):
    while True:
        page = watch(be, cursor, limit=2)
        if not page.statuses:
            return
        yield page.statuses
        cursor = page.cursor


@pytest.mark.parametrize("cursor", ["garbled", "0:0", "x:1:2", "12"])
def test_a_cursor_the_backend_did_not_give_asks_for_a_relist(backend, cursor):
    w = workload("exit 0")
    backend.create(w)
    changes = backend.changes(cursor)
    assert changes.relist and changes.statuses == ()
    assert [st.uid for st in backend.list_workloads()] == [w.uid]
    assert watch(backend, changes.cursor).statuses == (), "the cursor given with the re-list goes on from now"
    backend.create(other := workload("exit 0"))
    assert [c.uid for c in watch(backend, changes.cursor).statuses] == [other.uid]


def test_a_cursor_of_another_backend_asks_for_a_relist(backend, tmp_path):
    w = workload("exit 0")
    backend.create(w)
    cursor = watch(backend).cursor
    if isinstance(backend, KubernetesBackend):
        other = kube_backends.another(backend)  # another Crater process on the same cluster
    else:
        other = (LocalBackend(tmp_path / "other", devices=gpu_devices(1)) if isinstance(backend, LocalBackend)
                 else FakeBackend(gpu_devices(1)))
    other.create(workload("exit 0"))
    assert other.changes(cursor).relist


def test_adopt_is_safe_to_call(backend):
    w = workload("exit 0")
    backend.create(w)
    backend.adopt()
    until_state(backend, w.uid, {P.SUCCEEDED})
    backend.adopt()
    assert backend.status(w.uid).phase == P.SUCCEEDED


def test_extending_the_holder_moves_the_expected_start_of_the_job_it_blocks(backend):
    crater_places(backend)
    running = workload("sleep 30", gpus=4, max_runtime=600)
    backend.create(running)
    until_state(backend, running.uid, {P.RUNNING})
    head = workload("sleep 30", gpus=1, at=1)
    backend.create(head)
    backend.tick()
    assert 9 * 60 <= backend.status(head.uid).args["wait"] <= 10 * 60
    backend.extend(running.uid, 3600)  # the next round re-estimates, though nothing else changed
    backend.tick()
    st = backend.status(head.uid)
    assert st.phase == P.QUEUED and 59 * 60 <= st.args["wait"] <= 60 * 60


def test_extend_moves_the_deadline(backend):
    w = workload("sleep 30", max_runtime=1)
    backend.create(w)
    backend.extend(w.uid, 60)  # while pending: the deadline it will start with
    until_state(backend, w.uid, {P.RUNNING})
    backend.extend(w.uid, 120)  # while running: later still
    deadline = time.monotonic() + 2.0  # past the original 1 s max_runtime
    while time.monotonic() < deadline:
        backend.tick()
        time.sleep(0.05)
    assert backend.status(w.uid).phase == P.RUNNING
    backend.extend(w.uid, 1)  # and earlier: it is past the new deadline, so it is stopped for it
    st = until_state(backend, w.uid, {P.FAILED}, timeout=6)
    assert st.reason == "DeadlineExceeded" and "max_runtime of 1" in st.message
    backend.extend(w.uid, 600)  # a finished workload keeps its end
    assert backend.status(w.uid).phase == P.FAILED
    with pytest.raises(KeyError):
        backend.extend("nope", 60)


# -- workloads of several replicas --------------------------------------------------------------------------------
#: what each replica of the DDP-style gangs below prints: its rendezvous variables (Volcano's pytorch/svc plugins)
SAY = "echo rank=$RANK world=$WORLD_SIZE addr=$MASTER_ADDR port=$MASTER_PORT index=$VC_TASK_INDEX" \
      " workers=$VC_WORKER_HOSTS num=$VC_WORKER_NUM"


def _replicas(st):
    return [(r.task, r.replica, r.phase) for r in st.replicas]


def _stopped(backend, st, reason):
    """The replicas of ``st`` that Crater (or Volcano, for it) stopped: ``(task, index)``, ``Stopped`` with
    ``reason``."""
    return [(r.task, r.replica) for r in st.replicas if (r.phase, r.reason) == ("Stopped", reason)]


def _said(backend, uid, task, replica):
    text = wait_for(lambda: "rank=" in (t := backend.read_logs(uid, task=task, replica=replica)) and t, 5,
                    step=backend.tick, what=f"{task}-{replica} printed its variables")
    return dict(word.split("=", 1) for word in text.split("rank=", 1)[1].join(["rank=", ""]).split())


def test_a_gang_starts_whole_with_its_devices_logs_and_rendezvous_per_replica(backend):
    if isinstance(backend, KubernetesBackend):
        pytest.skip("rendezvous on 127.0.0.1 is the local backend's: on a cluster Volcano's svc plugin names the pods")
    w = gang(("master", 1, f"{SAY}; sleep 30", 1), ("worker", 2, f"{SAY}; sleep 30", 1), kind="pytorch")
    backend.create(w)
    st = until_state(backend, w.uid, {P.RUNNING})
    [node] = backend.inventory()
    assert st.placements == (Placement("master", 0, node.name, (0,)), Placement("worker", 0, node.name, (1,)),
                             Placement("worker", 1, node.name, (2,))), "split per replica in task order"
    assert _replicas(st) == [("master", 0, "Running"), ("worker", 0, "Running"), ("worker", 1, "Running")]
    assert node.allocations == {0: w.uid, 1: w.uid, 2: w.uid}
    seen = {(t, i): _said(backend, w.uid, t, i) for t, i in [("master", 0), ("worker", 0), ("worker", 1)]}
    assert [seen[k]["rank"] for k in sorted(seen)] == ["0", "1", "2"], "master 0, worker i -> i + 1"
    assert {v["world"] for v in seen.values()} == {"3"} and {v["addr"] for v in seen.values()} == {"127.0.0.1"}
    ports = {v["port"] for v in seen.values()}
    assert len(ports) == 1 and 0 < int(ports.pop()) < 65536, "one MASTER_PORT for the whole gang"
    assert [seen[k]["index"] for k in sorted(seen)] == ["0", "0", "1"]
    assert {(v["workers"], v["num"]) for v in seen.values()} == {("127.0.0.1,127.0.0.1", "2")}
    assert backend.read_logs(w.uid, task="worker", replica=2) == "", "no such replica"
    backend.cancel(w.uid, "by test")
    assert backend.status(w.uid).phase in (P.STOPPING, P.CANCELLED)
    st = until_state(backend, w.uid, {P.CANCELLED})
    assert all(r.phase != "Running" for r in st.replicas), _replicas(st)
    assert [(r.phase, r.reason) for r in st.replicas] == [("Stopped", "Cancelled")] * 3, _replicas(st)
    assert backend.inventory()[0].allocations == {}


def test_a_gang_that_does_not_fit_starts_no_replica(backend):
    crater_places(backend)
    blocker = workload("sleep 30", gpus=2)
    backend.create(blocker)
    until_state(backend, blocker.uid, {P.RUNNING})
    w = gang(("worker", 3, "sleep 30", 1), at=1)
    backend.create(w)
    backend.tick()
    st = backend.status(w.uid)
    assert st.phase == P.QUEUED and st.placements == ()
    assert _replicas(st) == [("worker", i, "Pending") for i in range(3)]
    assert st.args["request"] == {"nvidia.com/gpu": 3}, "placed as one request of the whole gang"
    backend.cancel(blocker.uid, "make room")
    st = until_state(backend, w.uid, {P.RUNNING})
    assert sorted(d for p in st.placements for d in p.devices) == [0, 1, 2]


def test_the_task_that_ends_the_job_ends_it_and_the_others_are_stopped(backend):
    w = gang(("master", 1, "echo done; exit 0", 0, True), ("worker", 2, "sleep 30", 0))
    backend.create(w)
    st = until_state(backend, w.uid, {P.SUCCEEDED})
    assert st.exit_code == 0 and st.code == "replicas.task_completed" and st.args == {"task": "master"}
    assert _replicas(st)[0] == ("master", 0, "Succeeded")
    assert all(r.exit_code is not None for r in st.replicas[1:])
    assert _stopped(backend, st, "GangEnded") == [("worker", 0), ("worker", 1)], "stopped by Crater, not failed"
    assert "done" in backend.read_logs(w.uid)


def test_a_failed_replica_fails_the_gang_and_stops_the_others(backend):
    w = gang(("master", 1, "sleep 30", 0), ("worker", 2, "sleep 0.2; exit 3", 0))
    backend.create(w)
    st = until_state(backend, w.uid, {P.FAILED})
    assert (st.code, st.exit_code) == ("replicas.failed", 3)
    assert st.args in ({"task": "worker", "replica": 0, "exit_code": 3}, {"task": "worker", "replica": 1,
                                                                           "exit_code": 3})
    assert ("master", 0) in _stopped(backend, st, "ReplicaFailed"), "the master was stopped"
    assert isinstance(backend, KubernetesBackend) or st.replicas[0].exit_code == 143, "its exit code kept"


def test_a_failed_replica_is_ignored_under_ignore(backend):
    w = gang(("worker", 3, "sleep 0.3; exit 0", 0), ("flaky", 1, "exit 3", 0), restart_policy="ignore",
             min_available=3)
    backend.create(w)
    st = until_state(backend, w.uid, {P.SUCCEEDED})
    assert ("flaky", 0, "Failed") in _replicas(st) and st.exit_code == 0
    assert st.code == "replicas.completed" and st.args == {"replicas": 4, "succeeded": 3}


def test_every_replica_succeeding_ends_the_gang(backend):
    w = gang(("worker", 2, "sleep 0.2; echo ok", 0))
    backend.create(w)
    st = until_state(backend, w.uid, {P.SUCCEEDED})
    assert _replicas(st) == [("worker", 0, "Succeeded"), ("worker", 1, "Succeeded")]
    assert [backend.read_logs(w.uid, task="worker", replica=i) for i in (0, 1)] == ["ok\n", "ok\n"]


def test_restart_starts_the_whole_gang_again_up_to_max_retry(backend):
    w = gang(("worker", 2, "echo run; exit 4", 0), restart_policy="restart", max_retry=1)
    backend.create(w)
    st = until_state(backend, w.uid, {P.FAILED})
    assert (st.code, st.exit_code) == ("replicas.failed", 4)
    assert {r.restarts for r in st.replicas} == {1}
    assert backend.read_logs(w.uid, task="worker", replica=0).count("run") == 2, "ran twice: its log goes on"
    if not isinstance(backend, KubernetesBackend):  # a pod's log there is its own container's
        for i in (0, 1):
            assert re.fullmatch(r"run\n--- crater: restart 1 of 1 \(replica worker-[01] exited with code 4\) ---\n"
                                r"run\n", backend.read_logs(w.uid, task="worker", replica=i)), "one line between runs"


def test_restart_applies_to_a_workload_of_one_replica_too(backend):
    w = replace(workload("echo try; exit 5"), restart_policy="restart", max_retry=2)
    backend.create(w)
    st = until_state(backend, w.uid, {P.FAILED})
    assert st.exit_code == 5 and [r.restarts for r in st.replicas] == [2]
    assert backend.read_logs(w.uid).count("try") == 3
    if not isinstance(backend, KubernetesBackend):
        assert backend.read_logs(w.uid) == "try\n--- crater: restart 1 of 2 (replica main-0 exited with code 5) ---\n" \
            "try\n--- crater: restart 2 of 2 (replica main-0 exited with code 5) ---\ntry\n"
