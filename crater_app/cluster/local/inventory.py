"""Inventory of this machine: CPU and memory from psutil, NVIDIA GPUs from NVML (``nvidia-ml-py``),
or virtual devices declared by ``CRATER_LOCAL_GPUS`` (``"4"`` or ``"4:NVIDIA-A100-SXM4-80GB"``)."""

from __future__ import annotations

import platform
import socket

import psutil

from crater_app.cluster.base import Device
from crater_app.domain.errors import InvalidInput
from crater_app.domain.resources import NVIDIA_GPU

#: Kubernetes' well-known node labels (``k8s.io/api/core/v1`` ``LabelHostname``, ``LabelOSStable``,
#: ``LabelArchStable``), which the kubelet sets on every node
HOSTNAME_LABEL, OS_LABEL, ARCH_LABEL = "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch"
#: ``platform.machine()`` -> Go's ``GOARCH``, what ``kubernetes.io/arch`` holds
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "armv7l": "arm",
           "i386": "386", "i686": "386", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}
DEFAULT_VIRTUAL_MODEL = "Virtual-GPU"
MAX_VIRTUAL_GPUS = 64
MAX_MODEL_CHARS = 128


def parse_local_gpus(value: str) -> tuple[int, str]:
    """Parse ``CRATER_LOCAL_GPUS``: ``"N"`` or ``"N:MODEL"`` -> ``(N, MODEL)``; ``""`` -> ``(0, default)``.

    Raises:
        InvalidInput: ``local.gpus_format`` (N not a whole number in 0..64) or ``local.gpus_model_length`` (a model
            name over 128 characters), field ``CRATER_LOCAL_GPUS``.
    """
    text = (value or "").strip()
    if not text:
        return 0, DEFAULT_VIRTUAL_MODEL
    count_text, _, model = text.partition(":")
    if not count_text.strip().isdigit() or int(count_text) > MAX_VIRTUAL_GPUS:
        raise InvalidInput("local.gpus_format", "CRATER_LOCAL_GPUS", value=text, max=MAX_VIRTUAL_GPUS)
    model = model.strip() or DEFAULT_VIRTUAL_MODEL
    if len(model) > MAX_MODEL_CHARS:
        raise InvalidInput("local.gpus_model_length", "CRATER_LOCAL_GPUS", max=MAX_MODEL_CHARS)
    return int(count_text), model


def nvml_devices() -> list[Device]:
    """NVIDIA devices reported by NVML, in NVML index order; ``[]`` when no driver or no device."""
    try:
        import pynvml
    except ImportError:  # pragma: no cover - nvidia-ml-py is a dependency
        return []
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return []
    try:
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(handle)
            name = name.decode() if isinstance(name, bytes) else name
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
            memory = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
            # Same normalisation as NVIDIA GPU feature discovery's nvidia.com/gpu.product label.
            model = name.replace(" ", "-")
            out.append(Device(index=i, resource=NVIDIA_GPU, model=model, memory_bytes=memory, uuid=uuid))
        return out
    except pynvml.NVMLError:
        return []
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:  # pragma: no cover
            pass


def discover(local_gpus: str) -> tuple[list[Device], str]:
    """Devices of this machine and where they came from: NVML wins; else ``CRATER_LOCAL_GPUS``; else none.

    Returns:
        ``(devices, source)`` with source ``"nvml"``, ``"CRATER_LOCAL_GPUS"`` or ``"none"``.
    """
    real = nvml_devices()
    if real:
        return real, "nvml"
    count, model = parse_local_gpus(local_gpus)
    if count:
        return [
            Device(index=i, resource=NVIDIA_GPU, model=model, memory_bytes=0, uuid=f"virtual-{i}", virtual=True)
            for i in range(count)
        ], "CRATER_LOCAL_GPUS"
    return [], "none"


def host_capacity() -> tuple[str, int, int]:
    """``(hostname, cpu millicores, memory bytes)`` of this machine."""
    return socket.gethostname(), (psutil.cpu_count() or 1) * 1000, int(psutil.virtual_memory().total)


def node_labels(node_name: str, system: str | None = None, machine: str | None = None) -> dict[str, str]:
    """The labels the kubelet would give this machine: ``kubernetes.io/hostname`` (the node's name),
    ``kubernetes.io/os`` (``linux``: ``platform.system()`` lower-cased) and ``kubernetes.io/arch`` (``amd64``,
    ``arm64``, ...: Go's name for ``platform.machine()``), so that a ``node_selector`` on them works locally too."""
    system = (system if system is not None else platform.system()).lower()
    machine = (machine if machine is not None else platform.machine()).lower()
    return {HOSTNAME_LABEL: node_name, OS_LABEL: system, ARCH_LABEL: _GOARCH.get(machine, machine)}
