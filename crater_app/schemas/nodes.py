"""Nodes and their accelerators as the API shows them."""

from __future__ import annotations

from crater_app.schemas.base import Public


class DevicePublic(Public):
    """One accelerator and who holds it (``job_id``/``job_name``/``user`` are ``None`` when free or hidden)."""

    index: int
    resource: str
    model: str
    memory_bytes: int
    uuid: str
    virtual: bool
    busy: bool
    job_id: int | None = None
    job_name: str | None = None
    user: str | None = None


class NodePublic(Public):
    """A node: capacity (``cpu_m`` millicores, ``memory_bytes`` bytes), allocation and devices."""

    name: str
    backend: str
    device_source: str
    cpu_m: int
    memory_bytes: int
    cpu_m_allocated: int
    memory_bytes_allocated: int
    devices: list[DevicePublic]
    models: list[str]
