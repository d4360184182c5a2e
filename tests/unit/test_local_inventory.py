"""cluster.local.inventory: parse_local_gpus, discover and host_capacity."""

from __future__ import annotations

import pytest

from crater_app.cluster.local import inventory as local_inventory
from crater_app.cluster.local.inventory import (DEFAULT_VIRTUAL_MODEL, discover, host_capacity, node_labels,
                                                parse_local_gpus)
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


@pytest.mark.parametrize(("system", "machine", "os_label", "arch"), [
    ("Linux", "x86_64", "linux", "amd64"), ("Linux", "aarch64", "linux", "arm64"), ("Linux", "armv7l", "linux", "arm"),
    ("Linux", "ppc64le", "linux", "ppc64le"), ("Darwin", "arm64", "darwin", "arm64"),
    ("Linux", "mips64", "linux", "mips64"),  # Go's name is the machine's where there is no other
])
def test_node_labels_are_the_kubelets(system, machine, os_label, arch):
    assert node_labels("gpu-01", system, machine) == {"kubernetes.io/hostname": "gpu-01", "kubernetes.io/os": os_label,
                                                      "kubernetes.io/arch": arch}
