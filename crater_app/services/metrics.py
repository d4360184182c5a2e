"""Platform health figures for ``/metrics``: aggregates only (no job names, users or projects)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func
from sqlmodel import select

from crater_app.db.models import Job
from crater_app.domain.jobs import JobPhase
from crater_app.services.context import ServiceContext


@dataclass(frozen=True)
class NodeFigures:
    """One node: capacity and allocation (``cpu_m`` millicores, ``memory_bytes`` bytes) and, per
    ``(resource, model)``, ``(devices, devices allocated)``."""

    name: str
    cpu_m: int
    cpu_m_allocated: int
    memory_bytes: int
    memory_bytes_allocated: int
    accelerators: dict[tuple[str, str], tuple[int, int]]


@dataclass(frozen=True)
class PlatformFigures:
    """``jobs_by_phase`` (every :class:`JobPhase`, zero when none), ``backend`` name and ``nodes``."""

    jobs_by_phase: dict[str, int]
    backend: str
    nodes: list[NodeFigures]


def platform_figures(ctx: ServiceContext) -> PlatformFigures:
    """Count jobs by phase (one grouped query on the phase index) and read the backend's inventory."""
    with ctx.session(read_only=True) as s:
        counts = dict(s.exec(select(Job.phase, func.count()).group_by(Job.phase)).all())
    by_phase = {p.value: int(counts.get(p.value, 0)) for p in JobPhase}
    nodes = []
    for node in ctx.backend.inventory():
        accelerators: dict[tuple[str, str], tuple[int, int]] = {}
        for d in node.devices:
            total, used = accelerators.get((d.resource, d.model), (0, 0))
            accelerators[(d.resource, d.model)] = (total + 1, used + (d.index in node.allocations))
        nodes.append(NodeFigures(
            name=node.name, cpu_m=node.cpu_m, cpu_m_allocated=node.cpu_m_allocated, memory_bytes=node.memory_bytes,
            memory_bytes_allocated=node.memory_bytes_allocated, accelerators=accelerators,
        ))
    return PlatformFigures(jobs_by_phase=by_phase, backend=ctx.backend.name, nodes=nodes)
