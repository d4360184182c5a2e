"""cluster.local.inventory.parse_local_gpus and discover; cluster.local.processes.job_environment."""

from __future__ import annotations

import pytest

from crater_app.cluster.local import inventory as local_inventory
from crater_app.cluster.local.inventory import DEFAULT_VIRTUAL_MODEL, discover, host_capacity, parse_local_gpus
from crater_app.cluster.local.processes import job_environment
from crater_app.domain.errors import InvalidInput


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("4", (4, DEFAULT_VIRTUAL_MODEL)), ("4:NVIDIA-A100-SXM4-80GB", (4, "NVIDIA-A100-SXM4-80GB")),
     ("", (0, DEFAULT_VIRTUAL_MODEL)), ("  ", (0, DEFAULT_VIRTUAL_MODEL)), ("0", (0, DEFAULT_VIRTUAL_MODEL)),
     ("64", (64, DEFAULT_VIRTUAL_MODEL)), ("2: H100 ", (2, "H100")), ("2:", (2, DEFAULT_VIRTUAL_MODEL))],
)
def test_parse_local_gpus(raw, expected):
    assert parse_local_gpus(raw) == expected


@pytest.mark.parametrize("raw", ["x", "65", "-1", "1.5", "4x", ":A100", "4:" + "m" * 129])
def test_parse_local_gpus_rejects(raw):
    with pytest.raises(InvalidInput) as info:
        parse_local_gpus(raw)
    assert info.value.field == "CRATER_LOCAL_GPUS"


def test_discover_uses_declared_virtual_devices_without_nvml(monkeypatch):
    monkeypatch.setattr(local_inventory, "nvml_devices", lambda: [])  # this machine's real GPUs must not leak in
    devices, source = discover("2:NVIDIA-A100-SXM4-80GB")
    assert source == "CRATER_LOCAL_GPUS"
    assert [(d.index, d.resource, d.model, d.uuid, d.virtual) for d in devices] == [
        (0, "nvidia.com/gpu", "NVIDIA-A100-SXM4-80GB", "virtual-0", True),
        (1, "nvidia.com/gpu", "NVIDIA-A100-SXM4-80GB", "virtual-1", True),
    ]
    assert discover("") == ([], "none")


def test_host_capacity_is_positive():
    name, cpu_m, memory = host_capacity()
    assert name and cpu_m >= 1000 and cpu_m % 1000 == 0 and memory > 0


# -- job_environment -----------------------------------------------------------------------------
BASE = {
    "PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8",
    "CRATER_ADMIN_PASSWORD": "pw", "CRATER_DATABASE_URL": "postgresql://u:pw@db/crater", "CRATER_DATA_DIR": "/var",
    "PGPASSWORD": "pw", "AWS_SECRET_ACCESS_KEY": "s", "GITHUB_TOKEN": "t", "GOOGLE_APPLICATION_CREDENTIALS": "/c.json",
    "SSH_PRIVATE_KEY": "k", "db_password": "pw", "OPENAI_API_KEY": "k", "AWS_ACCESS_KEY_ID": "id",
    "CUDA_VISIBLE_DEVICES": "0,1,2,3", "NVIDIA_VISIBLE_DEVICES": "all",
}


def test_job_environment_strips_secrets_and_crater_settings():
    env = job_environment(BASE, {"EPOCHS": "3"}, "uid-1", (0, 1))
    for gone in ("CRATER_ADMIN_PASSWORD", "CRATER_DATABASE_URL", "CRATER_DATA_DIR", "PGPASSWORD",
                 "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "SSH_PRIVATE_KEY",
                 "db_password", "OPENAI_API_KEY", "AWS_ACCESS_KEY_ID"):
        assert gone not in env, gone
    assert env["PATH"] == "/usr/bin" and env["HOME"] == "/home/u" and env["LANG"] == "C.UTF-8"
    assert env["EPOCHS"] == "3"
    assert env["CRATER_JOB_UID"] == "uid-1"
    assert [k for k in env if k.startswith("CRATER_")] == ["CRATER_JOB_UID"]


def test_job_environment_cuda_variables_are_exact():
    env = job_environment(BASE, {}, "u", (0, 1))
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert env["NVIDIA_VISIBLE_DEVICES"] == "0,1"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert job_environment(BASE, {}, "u", (3,))["CUDA_VISIBLE_DEVICES"] == "3"
    assert job_environment(BASE, {}, "u", (2, 5, 7))["CUDA_VISIBLE_DEVICES"] == "2,5,7"


def test_a_cpu_job_sees_no_gpu():
    env = job_environment(BASE, {}, "u", ())
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    assert env["NVIDIA_VISIBLE_DEVICES"] == "void"


def test_spec_env_cannot_override_the_platform_variables():
    env = job_environment({}, {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "CRATER_JOB_UID": "x"}, "real", (2,))
    assert env["CUDA_VISIBLE_DEVICES"] == "2" and env["CRATER_JOB_UID"] == "real"


def test_spec_env_is_the_users_own_choice():
    assert job_environment({}, {"MY_TOKEN": "mine"}, "u", ())["MY_TOKEN"] == "mine"
