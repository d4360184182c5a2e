"""Limits the local backend enforces on real processes: memory (a cgroup, else RLIMIT_DATA), CPU quota, process
count, Stopping while a stopped job's processes exit (and how long backfill counts on it), cgroups removed after the
job, swept after a crash and taken over by a requeued job's next run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from crater_app import i18n
from crater_app.bootstrap import make_backend
from crater_app.cluster.local import LocalBackend
from crater_app.cluster.local.supervisor import STALE_CGROUP_S
from crater_app.cluster.local import cgroups as cg
from crater_app.cluster.local.outcomes import Limits
from crater_app.domain.errors import InvalidInput
from crater_app.domain.resources import parse_resources
from crater_app.services import jobs
from crater_app.services.reconcile import LeaderLoop
from crater_app.settings import Settings
from tests.conftest import gpu_devices, kill_backend_processes
from tests.helpers import drive_until, events, spec, wait_for, workload, with_task

MiB = 1024**2
PYTHON = shutil.which("python3") or "/usr/bin/python3"
ALLOCATE_256_MIB = f"b = bytearray(256 * {MiB}); print('allocated', len(b), flush=True)"
SUPPORT = cg.detect(Path("/sys/fs/cgroup"))
needs_cgroups = pytest.mark.skipif(
    SUPPORT.version is None or not {"memory", "cpu", "pids"} <= SUPPORT.controllers,
    reason=f"no writable memory/cpu/pids cgroups here ({SUPPORT.reason})")


def _backend(tmp_path, **options) -> LocalBackend:
    options.setdefault("cancel_grace_s", 0.3)
    return LocalBackend(tmp_path / "data", devices=gpu_devices(2), **options)


@pytest.fixture
def backends(tmp_path):
    made: list[LocalBackend] = []

    def build(**options) -> LocalBackend:
        be = _backend(tmp_path, **options)
        made.append(be)
        return be

    yield build
    kill_backend_processes(tmp_path / "data")
    for be in made:
        be.close()


def _with(w, **resources):
    return with_task(w, resources=parse_resources(resources))


def _finish(be: LocalBackend, w, timeout: float = 15.0):
    be.create(w)
    return wait_for(lambda: (st := be.status(w.uid)) and st.raw_state in ("Succeeded", "Failed", "Cancelled") and st,
                    timeout, step=be.tick, what=f"{w.uid} finished")


def _cgroup_of(be: LocalBackend, uid: str) -> cg.JobCgroup:
    return cg.of_workload(be.cgroups, uid)


@needs_cgroups
def test_a_job_over_its_memory_limit_is_oom_killed(backends):
    """The case a user reported: a 128Mi job allocated 256 MiB and succeeded."""
    be = backends(cgroups="on")
    w = _with(workload([PYTHON, "-c", ALLOCATE_256_MIB]), memory="128Mi")
    st = _finish(be, w)
    assert (st.raw_state, st.reason, st.exit_code, st.exit_signal) == ("Failed", "OOMKilled", 137, 9)
    assert st.code == "local.oom_killed" and st.args["limit"] == 128 * MiB
    assert st.message.startswith("killed: used more than its memory limit of 128 MiB")
    assert "allocated" not in be.read_logs(w.uid)
    assert not any(f.exists() for f in _cgroup_of(be, w.uid).folders), "its cgroups are gone with it"


@needs_cgroups
def test_a_job_within_its_memory_limit_runs(backends):
    be = backends(cgroups="on")
    st = _finish(be, _with(workload([PYTHON, "-c", ALLOCATE_256_MIB]), memory="512Mi"))
    assert (st.raw_state, st.exit_code) == ("Succeeded", 0)


def test_without_cgroups_memory_is_limited_by_rlimit_data(backends):
    be = backends(cgroups="off")
    assert be.enforcement == {"memory": "RLIMIT_DATA"}
    w = _with(workload([PYTHON, "-c", ALLOCATE_256_MIB]), memory="128Mi")
    st = _finish(be, w)
    assert st.raw_state == "Failed" and st.code == "local.exited_memory_rlimit" and st.args["limit"] == 128 * MiB
    assert "MemoryError" in be.read_logs(w.uid)
    assert "RLIMIT_DATA" in st.message


@needs_cgroups
def test_the_limits_are_written_and_stated_when_the_job_starts(backends, tmp_path):
    be = backends(cgroups="on", pids_max=64)
    flag, ready = tmp_path / "go", tmp_path / "ready"
    w = _with(workload(["sh", "-c", f"touch {ready}; while [ ! -e {flag} ]; do sleep 0.05; done"]), cpu="500m",
              memory="64Mi")
    be.create(w)
    st = wait_for(lambda: (s := be.status(w.uid)) and s.raw_state == "Running" and s, 10, step=be.tick)
    wait_for(ready.exists, 10, what="the job runs")
    group = _cgroup_of(be, w.uid)
    by_controller = {f.parts[-3]: f for f in group.folders} if SUPPORT.version == 1 else {}
    if SUPPORT.version == 1:
        assert (by_controller["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "50000"
        assert (by_controller["cpu"] / "cpu.cfs_period_us").read_text().strip() == "100000"
        assert (by_controller["memory"] / "memory.limit_in_bytes").read_text().strip() == str(64 * MiB)
        assert (by_controller["pids"] / "pids.max").read_text().strip() == "64"
    else:  # pragma: no cover - a v2 machine
        assert (group.folders[0] / "cpu.max").read_text().split() == ["50000", "100000"]
        assert (group.folders[0] / "memory.max").read_text().strip() == str(64 * MiB)
    assert group.pids(), "the job's processes are in its cgroups"
    mechanism = f"cgroup v{SUPPORT.version}"
    assert st.args["limits"] == {"cpu": 500, "memory": 64 * MiB, "pids": 64}
    assert st.args["enforcement"] == f"{mechanism} (cpu, memory, pids)" and mechanism in st.message
    assert be.inventory()[0].enforcement == {"memory": mechanism, "cpu": mechanism, "pids": mechanism}
    flag.touch()
    assert wait_for(lambda: be.status(w.uid).raw_state == "Succeeded", 10, step=be.tick)
    assert not any(f.exists() for f in group.folders)


FORK_UNTIL_REFUSED = """
import os, time
count = 0
try:
    while count < 200:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        count += 1
    print("never refused", flush=True)
except OSError as exc:
    print("refused after", count, exc.strerror, flush=True)
"""


@needs_cgroups
def test_the_process_limit_stops_a_fork_bomb(backends):
    be = backends(cgroups="on", pids_max=20)
    w = workload([PYTHON, "-c", FORK_UNTIL_REFUSED])
    st = _finish(be, w)
    assert st.raw_state == "Succeeded"
    words = be.read_logs(w.uid).split()
    assert words[:2] == ["refused", "after"] and int(words[2]) == 19, "20 processes: the job and 19 children"
    assert not any(f.exists() for f in _cgroup_of(be, w.uid).folders), "its children were killed with it"


def _deaf(ready: Path, **fields):
    """A job that ignores SIGTERM (and says so in ``ready`` once it does)."""
    return workload(["sh", "-c", f"trap '' TERM; touch {ready}; while :; do sleep 0.1; done"], **fields)


def test_stopping_holds_the_devices_until_the_last_process_exits(backends, tmp_path):
    be = backends(cancel_grace_s=1.0)
    deaf = _deaf(tmp_path / "ready", gpus=2)
    be.create(deaf)
    wait_for((tmp_path / "ready").exists, 10, step=be.tick, what="the job ignores SIGTERM")
    be.cancel(deaf.uid, "cancelled by alice")
    st = be.status(deaf.uid)
    assert (st.raw_state, st.reason, st.code) == ("Stopping", "CancelRequested", "local.stopping_cancel")
    assert st.message == "stopping: cancelled by alice"
    waiting = workload("exit 0", gpus=1, at=1)
    be.create(waiting)
    started = time.monotonic()
    while time.monotonic() - started < 0.5:  # within the grace: the job ignores SIGTERM and holds both devices
        be.tick()
        assert be.status(deaf.uid).raw_state == "Stopping"
        assert be.status(waiting.uid).raw_state == "Pending"
        time.sleep(0.05)
    assert be.inventory()[0].allocations == {0: deaf.uid, 1: deaf.uid}
    final = wait_for(lambda: (s := be.status(deaf.uid)) and s.raw_state == "Cancelled" and s, 10, step=be.tick)
    assert (final.exit_code, final.exit_signal) == (137, 9), "SIGKILL after the grace"
    assert wait_for(lambda: be.status(waiting.uid).raw_state == "Succeeded", 10, step=be.tick)


def test_a_stopping_job_is_finished_by_the_next_leader(backends, tmp_path):
    """Crater restarted while a job was Stopping: the new process keeps it Stopping until the grace is over, kills
    it, and reports the stop."""
    first = backends(cancel_grace_s=0.5)
    deaf = _deaf(tmp_path / "ready", gpus=1)
    first.create(deaf)
    wait_for((tmp_path / "ready").exists, 10, step=first.tick, what="the job ignores SIGTERM")
    first.cancel(deaf.uid, "cancelled by alice", code="job.cancelled_by", args={"user": "alice"})
    first.close()
    second = backends(cancel_grace_s=0.5)
    second.adopt()
    assert second.status(deaf.uid).raw_state == "Stopping"
    assert second.inventory()[0].allocations == {0: deaf.uid}
    final = wait_for(lambda: (s := second.status(deaf.uid)) and s.raw_state == "Cancelled" and s, 10, step=second.tick)
    assert (final.exit_code, final.exit_signal, final.message) == (137, 9, "cancelled by alice")
    assert (final.code, final.args) == ("job.cancelled_by", {"user": "alice"}), "the cancel's code outlives a restart"
    assert second.inventory()[0].allocations == {}


def test_a_deadline_stop_is_reported_as_stopping_first(backends, tmp_path):
    be = backends(cancel_grace_s=1.0)
    w = _deaf(tmp_path / "ready", max_runtime=1)
    be.create(w)
    st = wait_for(lambda: (s := be.status(w.uid)) and s.raw_state == "Stopping" and s, 10, step=be.tick)
    assert (st.reason, st.code, st.args) == ("DeadlineExceeded", "local.stopping_deadline", {"max_runtime_s": 1})
    final = wait_for(lambda: (s := be.status(w.uid)) and s.raw_state == "Failed" and s, 10, step=be.tick)
    assert final.reason == "DeadlineExceeded" and final.message == "max_runtime of 1s exceeded"


@needs_cgroups
def test_cgroups_left_by_a_crash_are_swept_on_adoption(backends, tmp_path):
    be = backends(cgroups="on")
    w = workload("exit 0")
    st = _finish(be, w)
    assert st.raw_state == "Succeeded"
    left = cg.create(be.cgroups, w.uid, 0, 0, 0)[0]  # as if Crater died between the exit and the cleanup
    running = workload(["sleep", "30"], at=1)
    be.create(running)
    wait_for(lambda: be.status(running.uid).raw_state == "Running", 10, step=be.tick)
    stranger = cg.create(be.cgroups, f"not-ours-{uuid.uuid4()}", 0, 0, 0)[0]
    stale = cg.create(be.cgroups, f"lost-{uuid.uuid4()}", 0, 0, 0)[0]
    hour_ago = time.time() - STALE_CGROUP_S - 60
    for folder in stale.folders:
        os.utime(folder, (hour_ago, hour_ago))
    try:
        restarted = backends(cgroups="on")
        restarted.adopt()
        restarted.tick()
        assert not any(f.exists() for f in left.folders), "a finished workload's cgroup is removed"
        assert all(f.exists() for f in _cgroup_of(be, running.uid).folders), "a running one keeps its cgroup"
        assert all(f.exists() for f in stranger.folders), "a fresh one this backend does not know is left alone"
        assert not any(f.exists() for f in stale.folders), "an empty, hour-old one nobody knows is swept"
    finally:
        stranger.remove()
        stale.remove()


def test_backend_settings_are_checked(tmp_path):
    cases = [({"cgroups": "maybe"}, "local.mode", "CRATER_LOCAL_CGROUPS"),
             ({"cgroup_parent": "../up"}, "local.cgroup_parent", "CRATER_LOCAL_CGROUP_PARENT"),
             ({"cgroup_parent": "/abs"}, "local.cgroup_parent", "CRATER_LOCAL_CGROUP_PARENT"),
             ({"pids_max": -1}, "local.pids_max", "CRATER_LOCAL_PIDS_MAX"),
             ({"isolation": "always"}, "local.mode", "CRATER_LOCAL_ISOLATION"),
             ({"cgroups": "on", "cgroup_root": tmp_path / "no-cgroups"}, "local.cgroups_unavailable",
              "CRATER_LOCAL_CGROUPS")]
    for options, code, field in cases:
        with pytest.raises(InvalidInput) as info:
            LocalBackend(tmp_path / "data", devices=[], **options)
        assert (info.value.code, info.value.field) == (code, field), options
        assert field in info.value.message
    assert not (tmp_path / "data").exists(), "a refused setting changes nothing"


def test_auto_without_cgroups_falls_back(backends, tmp_path):
    be = backends(cgroups="auto", cgroup_root=tmp_path / "no-cgroups")
    assert be.cgroups.version is None and be.cgroups.reason == "not-mounted"
    w = _with(workload("exit 0"), memory="64Mi", cpu="1")
    assert _finish(be, w).raw_state == "Succeeded"
    [(limits,)] = be._store.read("SELECT limits FROM workloads WHERE uid = ?", (w.uid,))
    assert Limits.from_json(limits) == Limits({"memory": 64 * MiB}, {"memory": "RLIMIT_DATA"}), "no CPU limit"


def test_the_runner_stays_outside_the_jobs_cgroup(backends, tmp_path):
    """Only the job is charged: the runner is never in the job's cgroups (so the OOM killer never picks it)."""
    if SUPPORT.version is None:
        pytest.skip("no cgroups here")
    be = backends(cgroups="on")
    flag, ready = tmp_path / "go", tmp_path / "ready"
    w = workload(["sh", "-c", f"touch {ready}; while [ ! -e {flag} ]; do sleep 0.05; done"])
    be.create(w)
    wait_for(ready.exists, 10, step=be.tick, what="the job runs")
    pids = _cgroup_of(be, w.uid).pids()
    runner = be._supervisor.children[w.uid][("main", 0)].pid
    assert pids and runner not in pids
    assert all(os.getpgid(pid) == runner for pid in pids), "the job is in the runner's process group"
    flag.touch()
    assert wait_for(lambda: be.status(w.uid).raw_state == "Succeeded", 10, step=be.tick)


def test_the_application_passes_its_settings_to_the_backend(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", local_gpus="1", local_isolation="off", local_cgroups="off",
                        local_pids_max=7, local_uid_min=70000, local_uid_max=70010, local_account_prefix="job-")
    be = make_backend(settings)
    try:
        assert (be.trust, be.cgroups.reason, be.pids_max) == ("off", "off", 7)
        assert (be.accounts.uid_range, be.accounts.prefix) == ((70000, 70010), "job-")
        assert Settings().local_isolation == "auto" and Settings().local_cgroups == "auto", "the product's defaults"
    finally:
        be.close()


@needs_cgroups
@pytest.mark.local_backend
def test_the_reported_case_through_the_services(world):
    """A job asking for 128Mi that allocates 256 MiB ends Failed (OOMKilled) with the limit in words."""
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("hungry", [PYTHON, "-c", ALLOCATE_256_MIB],
                                                  resources={"cpu": "1", "memory": "128Mi"}))
    row = drive_until(loop, job.id, {"Succeeded", "Failed"}, timeout=20)
    assert (row.phase, row.exit_code) == ("Failed", 137)
    assert row.reason.startswith("killed: used more than its memory limit of 128 MiB")
    assert events(ctx, job.id)[-1].reason == "OOMKilled"


def _put_in(cgroup: cg.JobCgroup, pid: int) -> None:
    for folder in cgroup.folders:
        (folder / "cgroup.procs").write_text(str(pid))


#: prints the memory limit of the cgroup the job runs in (cgroup v1: the memory hierarchy's line of /proc/self/cgroup)
_OWN_MEMORY_LIMIT = ("cat /sys/fs/cgroup/memory$(grep -E '^[0-9]+:memory:' /proc/self/cgroup | cut -d: -f3)"
                     "/memory.limit_in_bytes")


@needs_cgroups
def test_a_requeued_run_starts_after_a_restart_that_found_its_earlier_cgroup(backends):
    """Crater stopped between a run's exit and the removal of its cgroup, the job was requeued and handed over
    again, and Crater restarted while it was Pending: the next run failed (``FileExistsError``)."""
    be = backends(cgroups="on")
    w = workload("exit 0")
    assert _finish(be, w).raw_state == "Succeeded"
    left = cg.create(be.cgroups, w.uid, 0, 0, 0)[0]
    try:
        be.create(replace(w, attempt=2))
        be.close()
        restarted = backends(cgroups="on")
        restarted.adopt()
        st = wait_for(lambda: (s := restarted.status(w.uid)) and s.raw_state in ("Succeeded", "Failed") and s, 15,
                      step=restarted.tick)
        assert (st.raw_state, st.attempt) == ("Succeeded", 2), st.message
    finally:
        left.kill()
        left.remove()


@needs_cgroups
def test_a_requeued_run_takes_its_earlier_cgroup_over_with_fresh_limits(backends):
    """A process of the earlier run is still in the workload's cgroup (it has not died yet): the next run kills
    it, and runs in a cgroup made again with its own limits (and its own OOM count)."""
    be = backends(cgroups="on")
    w = _with(workload(_OWN_MEMORY_LIMIT), memory="64Mi")
    assert _finish(be, w).raw_state == "Succeeded"
    assert be.read_logs(w.uid).split() == [str(64 * MiB)]
    left = cg.create(be.cgroups, w.uid, 32 * MiB, 0, 0)[0]
    straggler = subprocess.Popen(["sleep", "60"])
    try:
        _put_in(left, straggler.pid)
        st = _finish(be, replace(w, attempt=2))
        assert (st.raw_state, st.attempt) == ("Succeeded", 2), st.message
        assert be.read_logs(w.uid).split() == [str(64 * MiB)] * 2, "its own limit, not the one left in the cgroup"
        assert straggler.wait(timeout=5) == -signal.SIGKILL, "the earlier run's process was killed"
    finally:
        straggler.kill()
        straggler.wait()


FREEZER = Path("/sys/fs/cgroup/freezer")


@needs_cgroups
@pytest.mark.skipif(not (FREEZER / "freezer.state").exists() and not (FREEZER / "cgroup.procs").exists(),
                    reason="needs the cgroup v1 freezer (a frozen process outlives SIGKILL until it is thawed)")
def test_a_requeued_run_waits_while_its_earlier_runs_process_cannot_exit(backends, monkeypatch):
    """A process of the earlier run does not die at once (uninterruptible sleep, here: frozen): the next run waits,
    Pending with the reason, instead of failing; it starts once the process is gone."""
    monkeypatch.setattr(cg, "REUSE_WAIT_S", 0.3)
    be = backends(cgroups="on")
    w = workload("echo second run")
    assert _finish(be, w).raw_state == "Succeeded"
    left = cg.create(be.cgroups, w.uid, 0, 0, 0)[0]
    freezer = FREEZER / f"crater-test-{uuid.uuid4()}"
    freezer.mkdir()
    stuck = subprocess.Popen(["sleep", "60"])
    try:
        _put_in(left, stuck.pid)
        (freezer / "cgroup.procs").write_text(str(stuck.pid))
        (freezer / "freezer.state").write_text("FROZEN")
        wait_for(lambda: (freezer / "freezer.state").read_text().strip() == "FROZEN", 5, what="frozen")
        be.create(replace(w, attempt=2))
        be.tick()
        st = be.status(w.uid)
        assert (st.raw_state, st.code, st.args) == ("Pending", "local.waiting_for_earlier_run", {"processes": 1})
        assert st.message == "waiting for 1 process of its earlier run to exit before it starts again"
        assert i18n.render("zh-CN", "event.local.waiting_for_earlier_run", st.args) == (
            "等待上一次运行遗留的 1 个进程退出后再次启动")
        cursor = be.changes().cursor
        be.tick()
        assert be.changes(cursor).statuses == (), "no new status while it keeps waiting"
        (freezer / "freezer.state").write_text("THAWED")
        assert stuck.wait(timeout=5) == -signal.SIGKILL
        final = wait_for(lambda: (s := be.status(w.uid)) and s.raw_state in ("Succeeded", "Failed") and s, 15,
                         step=be.tick)
        assert (final.raw_state, final.attempt) == ("Succeeded", 2), final.message
    finally:
        (freezer / "freezer.state").write_text("THAWED")
        stuck.kill()
        stuck.wait()
        freezer.rmdir()
        left.kill()
        left.remove()


@pytest.mark.parametrize("max_runtime", [None, 36000])
def test_backfill_counts_a_stopping_job_as_ending_within_its_grace(backends, tmp_path, max_runtime):
    """A stopping job ends at the latest when its grace is over (SIGKILL), whatever its max_runtime: the blocked
    head's earliest start is then, and a job that would run past it waits, while a shorter one still fills in."""
    be = backends(cancel_grace_s=60)
    deaf = _deaf(tmp_path / "ready", gpus=1, max_runtime=max_runtime)
    be.create(deaf)
    wait_for((tmp_path / "ready").exists, 10, step=be.tick, what="the job ignores SIGTERM")
    be.cancel(deaf.uid, "make room")
    term_sent = time.time()
    head = workload(["true"], gpus=2, at=1)
    long = workload(["true"], gpus=1, at=2, max_runtime=3600)
    short = workload(["true"], gpus=1, at=3, max_runtime=30)
    for w in (head, long, short):
        be.create(w)
    be.tick()
    waiting = be.status(head.uid)
    assert waiting.code == "placement.waiting", waiting.message
    expected = datetime.fromisoformat(waiting.args["expected_at"]).timestamp()
    assert term_sent + 60 - 5 <= expected <= term_sent + 60 + 5, "SIGTERM + the grace"
    behind = be.status(long.uid)
    assert (behind.raw_state, behind.code, behind.args["blocker"]) == ("Pending", "placement.queued", head.uid)
    assert wait_for(lambda: be.status(short.uid).raw_state == "Succeeded", 10, step=be.tick), "it ends in time"
    assert be.status(long.uid).raw_state == "Pending" and be.status(deaf.uid).raw_state == "Stopping"
