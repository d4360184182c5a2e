"""Workloads of several replicas on the local backend, beyond the shared contract: each replica's own devices, log
and cgroup on disk, the rendezvous on 127.0.0.1 really working, a free MASTER_PORT per workload, the MPI host file,
a gang that cannot start whole, and adoption of a gang after a restart of Crater."""

from __future__ import annotations

import json
import os
import shlex
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from crater_app.cluster.local import LocalBackend
from crater_app.cluster.local import cgroups as cg
from crater_app.domain.jobs import JobPhase
from crater_app.domain.resources import parse_resources
from tests.conftest import gpu_devices, kill_backend_processes
from tests.helpers import gang, wait_for

SUPPORT = cg.detect(Path("/sys/fs/cgroup"))
P = JobPhase


@pytest.fixture
def local(tmp_path):
    be = LocalBackend(tmp_path / "data", devices=gpu_devices(4), cancel_grace_s=1.0)
    yield be
    kill_backend_processes(tmp_path / "data")
    be.close()


def _until(be, uid, phases, timeout=15.0):
    return wait_for(lambda: (st := be.status(uid)) and st.phase in phases and st, timeout, step=be.tick,
                    what=f"{uid} in {phases}")


def _runners(be, uid) -> list[int]:
    [(replicas,)] = be._store.read("SELECT replicas FROM workloads WHERE uid = ?", (uid,))
    return [r["pid"] for r in json.loads(replicas)]


def test_each_replica_has_its_devices_log_and_host_files(local):
    say = "echo cuda=$CUDA_VISIBLE_DEVICES hosts=$CRATER_HOSTS_DIR; sleep 30"
    w = gang(("ps", 1, say, 1), ("worker", 2, say, 1))
    local.create(w)
    _until(local, w.uid, {P.RUNNING})
    folder = local.job_dir(w.uid)
    logs = {name: wait_for(lambda n=name: "cuda=" in (t := local.read_logs(w.uid, task=n[0], replica=n[1])) and t,
                           5, step=local.tick)
            for name in [("ps", 0), ("worker", 0), ("worker", 1)]}
    assert [logs[k].split()[0] for k in sorted(logs)] == ["cuda=0", "cuda=1", "cuda=2"]
    assert sorted(p.name for p in (folder / "logs").glob("*.log")) == ["ps-0.log", "worker-0.log", "worker-1.log"]
    assert (folder / "logs" / "worker-1.log").read_text() == logs[("worker", 1)]
    hosts = folder / "hosts"
    assert f"hosts={hosts}" in logs[("ps", 0)]
    assert (hosts / "worker.host").read_text() == "127.0.0.1\n127.0.0.1" and (hosts / "ps.host").read_text() == \
        "127.0.0.1"
    runners = _runners(local, w.uid)
    assert len(runners) == 3 and [os.getpgid(pid) for pid in runners] == runners, \
        "every replica is a process group of its own"
    if SUPPORT.version is not None:
        names = set(cg.leftovers(SUPPORT))
        assert {f"{w.uid}.ps-0", f"{w.uid}.worker-0", f"{w.uid}.worker-1"} <= names, "a cgroup per replica"
    local.cancel(w.uid, "done")
    st = _until(local, w.uid, {P.CANCELLED})
    assert (st.exit_code, st.exit_signal) == (143, 15)
    assert not [pid for pid in _runners(local, w.uid) if psutil.pid_exists(pid)
                and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]


DDP = textwrap.dedent("""
    import os, socket, time
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    if rank == 0:
        server = socket.create_server((addr, port))
        seen = sorted(int(server.accept()[0].recv(16)) for _ in range(world - 1))
        print("master heard", seen, "on port", port, flush=True)
    else:
        for _ in range(200):
            try:
                socket.create_connection((addr, port)).sendall(str(rank).encode())
                break
            except OSError:
                time.sleep(0.05)
        print("worker", rank, "reached the master", flush=True)
""")


def test_a_ddp_rendezvous_on_127_0_0_1_works_and_each_workload_gets_its_own_port(local):
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(DDP)}"
    first = gang(("master", 1, command, 0, True), ("worker", 2, command, 0), kind="pytorch")
    second = gang(("master", 1, command, 0, True), ("worker", 1, command, 0), kind="pytorch", at=1)
    local.create(first)
    local.create(second)
    ports = set()
    for w, heard in ((first, "[1, 2]"), (second, "[1]")):
        st = _until(local, w.uid, {P.SUCCEEDED, P.FAILED}, timeout=30)
        assert st.phase == P.SUCCEEDED, (st.message, local.read_logs(w.uid, task="worker"))
        said = local.read_logs(w.uid, task="master")
        assert f"master heard {heard} on port" in said
        ports.add(said.split("on port")[1].split()[0])
        assert "reached the master" in local.read_logs(w.uid, task="worker", replica=0)
    assert len(ports) == 2, "two DDP jobs on one machine, two MASTER_PORTs"


def test_the_mpi_launcher_gets_a_hostfile_and_mpi_host_of_the_workers(local):
    w = gang(("launcher", 1, "cat $CRATER_MPI_HOSTFILE; echo host=$MPI_HOST", 0, True), ("worker", 2, "sleep 30", 0),
             kind="mpi")
    local.create(w)
    st = _until(local, w.uid, {P.SUCCEEDED, P.FAILED})
    assert st.phase == P.SUCCEEDED, st.message
    assert local.read_logs(w.uid, task="launcher") == "127.0.0.1\n127.0.0.1\nhost=127.0.0.1,127.0.0.1\n"


def test_a_gang_that_cannot_start_whole_leaves_no_replica_running(local):
    w = gang(("ok", 2, "sleep 30", 0), ("bad", 1, "sleep 30", 0))
    w = replace(w, tasks=(w.tasks[0], replace(w.tasks[1], working_dir="d" * 300)))
    local.create(w)
    st = _until(local, w.uid, {P.FAILED})
    assert st.reason == "StartError" and st.code == "local.start_error", st.message
    assert local.inventory()[0].allocations == {}
    work = str(local.job_dir(w.uid) / "work")
    left = [p for p in psutil.process_iter(["cwd", "status"]) if p.info["cwd"] == work
            and p.info["status"] != psutil.STATUS_ZOMBIE]
    assert left == [], "the replicas already started were killed"


def test_a_gang_is_adopted_by_the_next_crater_and_stopped_replica_by_replica(tmp_path, local):
    w = gang(("worker", 2, "sleep 30", 1), ("chief", 1, "sleep 0.5; exit 0", 0, True))
    local.create(w)
    _until(local, w.uid, {P.RUNNING})
    pids = _runners(local, w.uid)
    local._supervisor.children.clear()  # as if Crater restarted: nobody holds the runners any more
    again = LocalBackend(tmp_path / "data", devices=gpu_devices(4), cancel_grace_s=1.0)
    try:
        again.adopt()
        assert again.status(w.uid).phase == P.RUNNING, "its replicas still run: adopted"
        st = _until(again, w.uid, {P.SUCCEEDED}, timeout=15)
        assert st.code == "replicas.task_completed" and st.args == {"task": "chief"}
        assert wait_for(lambda: not [p for p in pids if psutil.pid_exists(p)
                                     and psutil.Process(p).status() != psutil.STATUS_ZOMBIE], 5)
        assert again.inventory()[0].allocations == {}
    finally:
        again.close()


def test_each_replica_gets_the_limits_of_its_task(local):
    if SUPPORT.version is None or "memory" not in SUPPORT.controllers:
        pytest.skip("no memory cgroups here")
    w = gang(("small", 1, "sleep 30", 0), ("large", 1, "sleep 30", 0))
    w = replace(w, tasks=(replace(w.tasks[0], resources=parse_resources({"memory": "64Mi"})),
                          replace(w.tasks[1], resources=parse_resources({"memory": "128Mi"}))))
    local.create(w)
    _until(local, w.uid, {P.RUNNING})
    [(replicas,)] = local._store.read("SELECT replicas FROM workloads WHERE uid = ?", (w.uid,))
    amounts = [json.loads(r["limits"])["amounts"]["memory"] for r in json.loads(replicas)]
    assert amounts == [64 * 1024**2, 128 * 1024**2]
    local.cancel(w.uid, "done")
    _until(local, w.uid, {P.CANCELLED})


def test_a_gang_holds_its_devices_while_any_replica_outlives_the_cancel(tmp_path, local):
    ready = tmp_path / "ready"
    w = gang(("quick", 1, "sleep 30", 1), ("deaf", 1, f"trap '' TERM; touch {ready}; while :; do sleep 0.1; done", 1))
    local.create(w)
    wait_for(ready.exists, 10, step=local.tick, what="the deaf replica ignores SIGTERM")
    local.cancel(w.uid, "cancelled by alice")
    wait_for(lambda: (st := local.status(w.uid)).replicas[0].phase == "Stopped" and st, 5, step=local.tick,
             what="the quick replica has exited")
    st = local.status(w.uid)
    assert (st.phase, st.reason) == (P.STOPPING, "CancelRequested")
    assert [r.phase for r in st.replicas] == ["Stopped", "Running"]
    assert local.inventory()[0].allocations == {0: w.uid, 1: w.uid}, "held until the last replica has exited"
    final = _until(local, w.uid, {P.CANCELLED}, timeout=10)
    assert "cancelled by alice" in final.message and local.inventory()[0].allocations == {}
    assert [r.exit_code for r in final.replicas] == [143, 137], "SIGTERM, then SIGKILL after the grace"
    assert [(r.phase, r.reason) for r in final.replicas] == [("Stopped", "Cancelled")] * 2


def test_a_gang_past_its_deadline_is_stopped_replica_by_replica(local):
    w = gang(("worker", 2, "sleep 30", 0), max_runtime_s=1)
    local.create(w)
    st = _until(local, w.uid, {P.FAILED}, timeout=10)
    assert st.reason == "DeadlineExceeded" and (st.exit_code, st.exit_signal) == (143, 15)
    assert [r.exit_code for r in st.replicas] == [143, 143]
    assert [(r.phase, r.reason) for r in st.replicas] == [("Stopped", "DeadlineExceeded")] * 2
