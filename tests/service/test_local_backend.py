"""Local-backend specifics beyond the shared contract: log tails, working directories, the runner's exit status and
environment, the job's environment."""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from crater_app.cluster.local import runner as local_runner
from crater_app.cluster.local import LocalBackend
from crater_app.cluster.local.environment import runner_environment
from tests.conftest import gpu_devices, kill_backend_processes
from tests.helpers import backend_pid, process_gone, wait_for, within, workload, with_task


@pytest.fixture
def local(tmp_path):
    be = LocalBackend(tmp_path / "data", devices=gpu_devices(2), cancel_grace_s=0.3)
    yield be
    kill_backend_processes(tmp_path / "data")
    be._conn.close()


def _log(be: LocalBackend, uid: str, data: bytes) -> None:
    be.job_dir(uid).mkdir(parents=True, exist_ok=True)
    (be.job_dir(uid) / "output.log").write_bytes(data)


@pytest.mark.parametrize(
    ("tail", "expected"),
    [(100, "one\ntwo\nthree\n"), (14, "one\ntwo\nthree\n"), (13, "two\nthree\n"), (10, "two\nthree\n"),
     (9, "three\n"), (6, "three\n"), (3, "ee\n")],
)
def test_log_tail_keeps_whole_lines(local, tail, expected):
    _log(local, "u1", b"one\ntwo\nthree\n")
    assert local.read_logs("u1", tail) == expected


def test_log_tail_is_utf8_safe(local):
    _log(local, "u2", "first line\nzweite Zeile: grüße\n".encode() + b"\xff\n")
    assert local.read_logs("u2", 8) == "\ufffd\n"
    assert local.read_logs("u2") == "first line\nzweite Zeile: grüße\n\ufffd\n"


def _run(be: LocalBackend, w) -> None:
    be.create(w)
    wait_for(lambda: (st := be.status(w.uid)) and st.raw_state in ("Succeeded", "Failed", "Cancelled"), 10, step=be.tick)


def test_working_dir_is_inside_the_job_directory(local):
    w = with_task(workload(["sh", "-c", "pwd; echo data > f.txt"]), working_dir="sub/dir")
    _run(local, w)
    work = local.job_dir(w.uid) / "work" / "sub" / "dir"
    assert local.read_logs(w.uid).strip() == str(work)
    assert (work / "f.txt").read_text() == "data\n"
    assert json.loads((local.job_dir(w.uid) / "exit_code").read_text()) == {"exit_code": 0, "signal": None}


@pytest.mark.parametrize(("sig", "name"), [(signal.SIGKILL, "SIGKILL"), (signal.SIGTERM, "SIGTERM"),
                                           (signal.SIGSEGV, "SIGSEGV")])
def test_a_death_by_signal_is_reported_with_the_signal_name(local, sig, name):
    w = workload(["sh", "-c", f"kill -{int(sig)} $$"])
    _run(local, w)
    st = local.status(w.uid)
    assert (st.raw_state, st.reason, st.exit_code, st.exit_signal) == ("Failed", "Signaled", 128 + sig, sig)
    assert st.code == "local.killed_by_signal" and st.args["signal"] == name
    assert st.message == f"killed by {name} (exit code {128 + sig})"


def test_a_program_that_exits_with_137_itself_was_not_signalled(local):
    w = workload(["sh", "-c", "exit 137"])
    _run(local, w)
    st = local.status(w.uid)
    assert (st.raw_state, st.reason, st.exit_code, st.exit_signal) == ("Failed", "Error", 137, None)
    assert st.code == "local.exited" and st.message == "exited with code 137"


def test_a_workload_that_cannot_start_fails_alone_and_the_others_start_exactly_once(local, tmp_path):
    """Starting one workload raised (a folder name over 255 bytes, an argument with no UTF-8 form): that rolled
    back the whole placement round after the workloads placed before it had been started, so every round
    started those again and no workload was ever placed after it."""
    counter = tmp_path / "starts"
    count = ["sh", "-c", f"echo x >> {counter}"]
    first, later = workload(count, at=0), workload(count, at=3)
    bad_dir = with_task(workload(["true"], at=1), working_dir="d" * 300)
    bad_arg = workload(["echo", "\ud800"], at=2)
    for w in (first, bad_dir, bad_arg, later):
        local.create(w)
    for _ in range(5):
        local.tick()
    wait_for(lambda: all(local.status(w.uid).raw_state in ("Succeeded", "Failed") for w in (first, bad_dir, bad_arg, later)),
             10, step=local.tick, what="all four finished")
    for bad in (bad_dir, bad_arg):
        st = local.status(bad.uid)
        assert st.raw_state == "Failed" and st.reason == "StartError", st
        assert "could not be started" in st.message and st.code == "local.start_error"
    assert local.status(first.uid).raw_state == local.status(later.uid).raw_state == "Succeeded"
    assert counter.read_text() == "x\nx\n"


def _pid_from(be: LocalBackend, path: Path) -> int:
    return int(wait_for(lambda: path.exists() and path.read_text().strip(), 10, step=be.tick, what=f"{path.name} written"))


def _detached(out: Path, trap: str = "") -> str:
    """Shell words that start a process in a new session (as a daemon would), writing its pid to out/d.pid."""
    return f"setsid sh -c '{trap}echo $$ > {out}/d.pid; exec sleep 60' </dev/null >/dev/null 2>&1 &"


def test_a_detached_process_ends_with_its_job(local, tmp_path):
    w = workload(["sh", "-c", _detached(tmp_path) + f" while [ ! -s {tmp_path}/d.pid ]; do sleep 0.05; done"])
    local.create(w)
    daemon = _pid_from(local, tmp_path / "d.pid")
    try:
        wait_for(lambda: local.status(w.uid).raw_state == "Succeeded", 10, step=local.tick)
        assert wait_for(lambda: process_gone(daemon), 5, what="the detached process gone")
    finally:
        if not process_gone(daemon):
            os.kill(daemon, signal.SIGKILL)


def test_cancel_kills_a_detached_process_that_ignores_sigterm(local, tmp_path):
    script = _detached(tmp_path, trap="trap \"\" TERM; ") + " trap '' TERM; while :; do sleep 1; done"
    w = workload(["sh", "-c", script])
    local.create(w)
    daemon = _pid_from(local, tmp_path / "d.pid")
    try:
        wait_for(lambda: local.status(w.uid).raw_state == "Running", 10, step=local.tick)
        local.cancel(w.uid, "test")
        wait_for(lambda: local.status(w.uid).raw_state == "Cancelled", 10, step=local.tick)  # grace 0.3 s, then SIGKILL
        assert wait_for(lambda: process_gone(daemon), 5, what="the detached process gone")
    finally:
        if not process_gone(daemon):
            os.kill(daemon, signal.SIGKILL)


def test_the_runner_keeps_a_job_log_bounded(tmp_path):
    """A job printing in a loop filled the disk (6 GB in 15 s); the log keeps its head and its tail."""
    wrapper = tmp_path / "runner.py"
    wrapper.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(local_runner.__file__).parent)!r})
        import runner as r
        r.LOG_LIMIT_BYTES, r.LOG_HEAD_BYTES, r.LOG_TAIL_BYTES = 400_000, 1_000, 100_000
        sys.exit(r.main(sys.argv[1:]))
    """))
    log = tmp_path / "output.log"
    program = "import sys\nfor i in range(200000): print(f'line {i:07d}')"
    with open(log, "ab") as out:
        code = subprocess.call([sys.executable, "-S", str(wrapper), str(tmp_path / "exit_code"), str(tmp_path), "--",
                                sys.executable, "-c", program], stdout=out, stderr=subprocess.STDOUT)
    assert code == 0 and json.loads((tmp_path / "exit_code").read_text()) == {"exit_code": 0, "signal": None}
    text = log.read_text()
    assert len(text) <= 400_000
    lines = text.splitlines()
    assert lines[0] == "line 0000000" and lines[-1] == "line 0199999"
    marker = next(line for line in lines if "dropped" in line)
    numbers = [int(line.split()[1]) for line in lines if line.startswith("line ")]
    gap = next(i for i in range(1, len(numbers)) if numbers[i] != numbers[i - 1] + 1)
    assert numbers[gap:] == list(range(numbers[gap], 200000)), "the tail is whole, from a line start"
    assert numbers[:gap] == list(range(gap)), "the head is whole"
    dropped = (numbers[gap] - gap) * len("line 0000000\n")
    assert f"[crater: {dropped} bytes of output dropped here" in marker


def test_the_job_gets_its_output_through_the_runner_unchanged(local):
    payload = ("import os,sys; sys.stdout.buffer.write(bytes(range(256)) * 4); sys.stdout.flush();"
               " sys.stderr.write('to stderr\\n')")
    w = workload([sys.executable, "-c", payload])
    _run(local, w)
    data = (local.job_dir(w.uid) / "output.log").read_bytes()
    assert bytes(range(256)) * 4 in data and b"to stderr\n" in data
    started = time.monotonic()
    assert local.read_logs(w.uid, 100).endswith("to stderr\n")
    assert time.monotonic() - started < within(1)


@pytest.mark.parametrize("options", [["--user", "x:1"], ["--cgroup"], ["--nice", "5"]])
def test_the_runner_refuses_bad_options(tmp_path, options):
    done = subprocess.run([sys.executable, "-S", local_runner.__file__, str(tmp_path / "exit_code"), str(tmp_path),
                           *options, "--", "true"], capture_output=True, text=True)
    assert done.returncode == 2 and "usage: runner.py" in done.stderr
    assert not (tmp_path / "exit_code").exists()


def test_without_isolation_the_job_says_it_runs_as_craters_user(tmp_path):
    be = LocalBackend(tmp_path / "data", devices=gpu_devices(1), isolation="off", cgroups="off")
    try:
        w = workload(["sleep", "30"], gpus=1)
        be.create(w)
        st = wait_for(lambda: (s := be.status(w.uid)) and s.raw_state == "Running" and s, 10, step=be.tick)
        assert st.code == "local.started_shared_devices" and st.args["trust"] == "off"
        assert st.args["uid"] == os.geteuid() and "not isolated" in st.message
        assert be.inventory()[0].isolation == "off"
    finally:
        kill_backend_processes(tmp_path / "data")
        be.close()


#: variables that steer the dynamic loader, glibc or Python: a job may set them for its own program
STEERING = {"LD_PRELOAD": "/nonexistent/hook.so", "LD_LIBRARY_PATH": "/nonexistent/lib", "LD_AUDIT": "/nonexistent/a",
            "GCONV_PATH": "/nonexistent/gconv", "GLIBC_TUNABLES": "glibc.malloc.check=3", "LOCPATH": "/nonexistent",
            "PYTHONPATH": "/nonexistent/py", "PYTHONSTARTUP": "/nonexistent/s.py", "PYTHONWARNINGS": "error",
            "MY_SETTING": "1"}


def test_the_runner_gets_none_of_the_jobs_environment(local):
    """The runner (root where jobs are isolated) runs in isolated mode with a fixed environment; the job's ``env``
    reaches only the job's program."""
    w = with_task(workload(["sleep", "30"]), env=STEERING)
    local.create(w)
    wait_for(lambda: local.status(w.uid).raw_state == "Running", 10, step=local.tick)
    runner = psutil.Process(backend_pid(local, w.uid))
    assert runner.cmdline()[1:5] == ["-I", "-S", "-X", "utf8"]
    assert runner.environ() == runner_environment()
    assert runner.cwd() == str(local.job_dir(w.uid)), "the runner starts in Crater's folder, not the job's"
    [job] = wait_for(runner.children, 5, what="the job's process")
    wait_for(lambda: job.name() == "sleep", 5, what="the job's program started")  # past fork, exec done
    env = job.environ()
    assert {k: env.get(k) for k in STEERING} == STEERING
    assert job.cwd() == str(local.job_dir(w.uid) / "work")
    assert not [p for p in local.job_dir(w.uid).iterdir() if p.name not in ("work", "output.log")], \
        "nothing of the environment is left in the job's folder"


def test_a_shared_job_inherits_no_credentials_from_crater(local, monkeypatch):
    """Without isolation too: the job's environment is an allowlist of Crater's."""
    monkeypatch.setenv("REFLEX_REDIS_URL", "redis://:state-store-pw@127.0.0.1:6379/0")
    monkeypatch.setenv("HTTPS_PROXY", "http://u:proxy-pw@proxy:3128")
    monkeypatch.setenv("PGPASSFILE", "/root/.pgpass-pw")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent-pw")
    w = workload(["env"])
    _run(local, w)
    env = dict(line.split("=", 1) for line in local.read_logs(w.uid).splitlines() if "=" in line)
    assert not [k for k, v in env.items() if "pw" in v], env
    account = pwd.getpwuid(os.geteuid())
    assert (env["USER"], env["HOME"]) == (account.pw_name, account.pw_dir), "its account's name and home"
    assert env["CRATER_JOB_UID"] == w.uid and env["PATH"] == os.environ["PATH"]
