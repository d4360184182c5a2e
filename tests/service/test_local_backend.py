"""Local-backend specifics beyond the shared contract: log tails, working directories, the runner's exit status."""

from __future__ import annotations

from dataclasses import replace

import pytest

from crater_app.cluster.local import LocalBackend
from tests.conftest import gpu_devices, kill_backend_processes
from tests.helpers import wait_for, workload


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
    wait_for(lambda: (st := be.status(w.uid)) and st.state in ("Succeeded", "Failed", "Cancelled"), 10, step=be.tick)


def test_working_dir_is_inside_the_job_directory(local):
    w = replace(workload(["sh", "-c", "pwd; echo data > f.txt"]), working_dir="sub/dir")
    _run(local, w)
    work = local.job_dir(w.uid) / "work" / "sub" / "dir"
    assert local.read_logs(w.uid).strip() == str(work)
    assert (work / "f.txt").read_text() == "data\n"
    assert (local.job_dir(w.uid) / "exit_code").read_text() == "0"


def test_signal_death_is_recorded_shell_style(local):
    w = workload(["sh", "-c", "kill -9 $$"])
    _run(local, w)
    st = local.status(w.uid)
    assert st.state == "Failed" and st.exit_code == 137 and st.reason == "Error"
