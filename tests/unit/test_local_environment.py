"""cluster.local.environment: the job's environment is an allowlist of Crater's, and the runner's own is fixed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crater_app.cluster.local.environment import encode, job_environment, runner_environment
from crater_app.cluster.local.processes import runner_argv

WORK = Path("/data/jobs/u1/work")
#: what a web process's environment may hold: settings, credentials (also inside URLs), Crater's session, and the
#: variables a job may inherit
CRATER_ENV = {
    "PATH": "/usr/bin", "HOME": "/root", "USER": "root", "LOGNAME": "root", "LANG": "C.UTF-8", "LC_TIME": "en_GB.UTF-8",
    "LANGUAGE": "en", "TZ": "UTC", "TERM": "xterm", "CUDA_HOME": "/usr/local/cuda",
    "NVIDIA_DRIVER_CAPABILITIES": "compute,utility", "CUDA_VISIBLE_DEVICES": "0,1,2,3", "NVIDIA_VISIBLE_DEVICES": "all",
    "CRATER_SECRET_KEY": "k", "CRATER_ADMIN_PASSWORD": "pw", "CRATER_DATA_DIR": "/var/lib/crater",
    "DATABASE_URL": "postgresql://u:p@db/x", "PGPASSWORD": "p", "PGPASSFILE": "/root/.pgpass",
    "REFLEX_REDIS_URL": "redis://:pw@127.0.0.1:6379/0", "REDIS_URL": "redis://:pw@cache:6379/0",
    "HTTPS_PROXY": "http://u:pw@proxy:3128", "http_proxy": "http://u:pw@proxy:3128", "NO_PROXY": "localhost",
    "AWS_SECRET_ACCESS_KEY": "s", "AWS_ACCESS_KEY_ID": "id", "GITHUB_TOKEN": "t", "db_password": "pw",
    "GOOGLE_APPLICATION_CREDENTIALS": "/c.json", "NVIDIA_API_KEY": "nvapi-x", "CUDA_AUTH_URL": "https://u:p@h",
    "SSH_AUTH_SOCK": "/tmp/agent", "XDG_RUNTIME_DIR": "/run/user/0", "PWD": "/srv/crater", "KRB5CCNAME": "/tmp/k",
    "LD_LIBRARY_PATH": "/opt/crater/lib", "LD_PRELOAD": "/opt/crater/hook.so", "PYTHONPATH": "/srv/crater",
    "VIRTUAL_ENV": "/srv/crater/.venv",
}


def test_a_job_inherits_only_the_allowlist():
    env = job_environment(CRATER_ENV, {}, "u1", (0, 1), account="crater-alice", home=WORK)
    assert env == {
        "PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_TIME": "en_GB.UTF-8", "LANGUAGE": "en", "TZ": "UTC",
        "TERM": "xterm", "CUDA_HOME": "/usr/local/cuda", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "HOME": str(WORK), "USER": "crater-alice", "LOGNAME": "crater-alice",
        "CRATER_JOB_UID": "u1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "0,1",
        "NVIDIA_VISIBLE_DEVICES": "0,1",
    }


@pytest.mark.parametrize("name", ["REFLEX_REDIS_URL", "REDIS_URL", "HTTPS_PROXY", "http_proxy", "PGPASSFILE",
                                  "NVIDIA_API_KEY", "CUDA_AUTH_URL", "SSH_AUTH_SOCK", "LD_PRELOAD", "PYTHONPATH"])
def test_credentials_and_crater_s_own_settings_never_reach_a_job(name):
    env = job_environment(CRATER_ENV, {}, "u1", (), account="crater", home=Path("/root"))
    assert name not in env
    assert not any("pw" in value for value in env.values())


def test_the_job_is_its_accounts_user_with_its_home():
    env = job_environment(CRATER_ENV, {}, "u1", (), account="crater", home=Path("/home/crater"))
    assert (env["USER"], env["LOGNAME"], env["HOME"]) == ("crater", "crater", "/home/crater")


def test_the_cuda_variables_are_exact():
    env = job_environment(CRATER_ENV, {}, "u", (2, 5, 7), account="a", home=WORK)
    assert (env["CUDA_VISIBLE_DEVICES"], env["NVIDIA_VISIBLE_DEVICES"], env["CUDA_DEVICE_ORDER"]) == (
        "2,5,7", "2,5,7", "PCI_BUS_ID")


def test_a_cpu_job_sees_no_gpu():
    env = job_environment(CRATER_ENV, {}, "u", (), account="a", home=WORK)
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["NVIDIA_VISIBLE_DEVICES"] == "void"


def test_the_spec_env_is_the_jobs_own_but_cannot_move_the_platform_variables():
    spec = {"MY_TOKEN": "mine", "HOME": "/scratch/alice", "LD_LIBRARY_PATH": "/opt/conda/lib",
            "PYTHONPATH": "/work/src", "CUDA_VISIBLE_DEVICES": "0,1,2,3", "CRATER_JOB_UID": "x"}
    env = job_environment({}, spec, "real", (2,), account="a", home=WORK)
    assert env["MY_TOKEN"] == "mine" and env["HOME"] == "/scratch/alice"
    assert env["LD_LIBRARY_PATH"] == "/opt/conda/lib" and env["PYTHONPATH"] == "/work/src", "for its own processes"
    assert env["CUDA_VISIBLE_DEVICES"] == "2" and env["CRATER_JOB_UID"] == "real"


def test_the_runner_environment_is_fixed(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/tmp/evil")
    monkeypatch.setenv("LD_PRELOAD", "/tmp/evil.so")
    assert runner_environment() == {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                    "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def test_the_runner_starts_in_isolated_mode(tmp_path):
    argv = runner_argv(tmp_path, tmp_path / "work", ["id"])
    assert argv[1:5] == ["-I", "-S", "-X", "utf8"]
    assert argv[-2:] == ["--", "id"]


def test_encode_round_trips_unicode():
    env = {"GREETING": "你好", "EMPTY": ""}
    assert json.loads(encode(env).decode("utf-8")) == env


@pytest.mark.parametrize("env", [{"A": "x\0y"}, {"A=B": "x"}, {"": "x"}, {"A\0": "x"}, {"A": "\ud800"}])
def test_encode_refuses_what_no_process_can_take(env):
    with pytest.raises(ValueError):
        encode(env)

