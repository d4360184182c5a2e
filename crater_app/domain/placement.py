"""Placement of queued requests onto one node's free capacity: gang (all devices or none), strict order.

Order is priority (higher first), then submission time, then uid - the order Slurm's priority/multifactor
plugin uses with a single priority factor and no backfill, and Volcano's ``priority`` + ``gang`` plugins
with FIFO inside a queue. A request that does not fit blocks the requests after it (no backfill), so a
large job cannot be starved by a stream of small ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from crater_app.domain.resources import CPU, MEMORY, format_bytes


@dataclass(frozen=True)
class Request:
    """A queued request: ``cpu_m`` millicores, ``memory_bytes`` bytes, ``accelerators`` name -> devices,
    ``model`` the required accelerator model (``None`` = any)."""

    uid: str
    priority: int
    created_at: datetime
    cpu_m: int
    memory_bytes: int
    accelerators: dict[str, int]
    model: str | None = None
    #: its ``max_runtime`` in seconds (``None``: unbounded); bounds its end when it is started by backfill
    max_runtime_s: int | None = None


@dataclass(frozen=True)
class FreeDevice:
    """A device not held by any running workload."""

    index: int
    resource: str
    model: str


@dataclass(frozen=True)
class Capacity:
    """What is free on the node now (``cpu_m`` millicores, ``memory_bytes`` bytes, ``devices``)."""

    cpu_m: int
    memory_bytes: int
    devices: tuple[FreeDevice, ...]


@dataclass(frozen=True)
class Running:
    """A workload that holds capacity now: ``cpu_m`` millicores, ``memory_bytes`` bytes, the ``devices`` it holds,
    and ``ends_at`` (UTC), the latest instant it can still be running (its start plus its ``max_runtime``; ``None``:
    unbounded). Backfill reasons about when held capacity comes back from these."""

    uid: str
    cpu_m: int
    memory_bytes: int
    devices: tuple[FreeDevice, ...]
    ends_at: datetime | None


@dataclass(frozen=True)
class Decision:
    """Result of :func:`place`: ``placed`` uid -> device indices; ``waiting`` uid -> reason sentence (English);
    ``reasons`` uid -> ``(code, args)``: the same reason as a catalogue code (``event.<code>``) and arguments."""

    placed: dict[str, tuple[int, ...]]
    waiting: dict[str, str]
    reasons: dict[str, tuple[str, dict]] = field(default_factory=dict)


def queue_order(requests: list[Request]) -> list[Request]:
    """Sort by priority (desc), submission time (asc), uid (asc)."""
    return sorted(requests, key=lambda r: (-r.priority, r.created_at, r.uid))


def _shortfall(req: Request, cap: Capacity) -> str | None:
    """Sentence naming the first resource that does not fit, or ``None`` when ``req`` fits ``cap``."""
    for name, count in sorted(req.accelerators.items()):
        free = sum(1 for d in cap.devices if d.resource == name and (req.model is None or d.model == req.model))
        if free < count:
            what = f"{name} ({req.model})" if req.model else name
            return f"waiting for {count} × {what}; {free} free"
    if req.cpu_m > cap.cpu_m:
        return f"waiting for {req.cpu_m}m {CPU}; {max(cap.cpu_m, 0)}m free"
    if req.memory_bytes > cap.memory_bytes:
        return f"waiting for {format_bytes(req.memory_bytes)} {MEMORY}; {format_bytes(max(cap.memory_bytes, 0))} free"
    return None


def place(requests: list[Request], capacity: Capacity, running: tuple[Running, ...] | list[Running] = (),
          now: datetime | None = None) -> Decision:
    """Place ``requests`` (any order; sorted with :func:`queue_order`) onto ``capacity``.

    Each placed request takes the lowest-indexed free devices of its resource (and model). Once one
    request does not fit, it and every later request wait; their reasons name the shortfall or the
    position in the queue. Pure: no I/O.
    """
    devices = list(capacity.devices)
    cpu, mem = capacity.cpu_m, capacity.memory_bytes
    placed: dict[str, tuple[int, ...]] = {}
    waiting: dict[str, str] = {}
    blocked_at: int | None = None
    for position, req in enumerate(queue_order(requests)):
        if blocked_at is not None:
            ahead = position
            waiting[req.uid] = f"queued: position {position + 1}, behind {ahead} earlier job(s)"
            continue
        reason = _shortfall(req, Capacity(cpu, mem, tuple(devices)))
        if reason is not None:
            blocked_at = position
            waiting[req.uid] = reason
            continue
        taken: list[int] = []
        for name, count in sorted(req.accelerators.items()):
            pick = [d for d in devices if d.resource == name and (req.model is None or d.model == req.model)]
            pick = sorted(pick, key=lambda d: d.index)[:count]
            taken.extend(d.index for d in pick)
            devices = [d for d in devices if d not in pick]
        cpu -= req.cpu_m
        mem -= req.memory_bytes
        placed[req.uid] = tuple(sorted(taken))
    return Decision(placed=placed, waiting=waiting)


def never_fits(req: Request, cpu_m: int, memory_bytes: int, devices: list[tuple[str, str]]) -> tuple[str, str] | None:
    """Whether ``req`` exceeds a node's *total* capacity (so it could never start there).

    Args:
        cpu_m, memory_bytes: the node's capacity (millicores, bytes).
        devices: ``(resource, model)`` of every device on the node.

    Returns:
        ``(field, sentence with the numbers)`` for the first excess, or ``None`` when it can fit.
    """
    for name, count in sorted(req.accelerators.items()):
        have = [m for r, m in devices if r == name]
        if req.model is not None:
            matching = sum(1 for m in have if m == req.model)
            if matching < count:
                models = ", ".join(f"{have.count(m)} × {m}" for m in sorted(set(have))) or "none"
                return "accelerator_model", (
                    f"requested {count} × {name} of model {req.model}; this machine has {matching} of that model"
                    f" ({models})"
                )
        elif len(have) < count:
            return f"resources.{name}", f"requested {count} × {name}; this machine has {len(have)}"
    if req.cpu_m > cpu_m:
        return f"resources.{CPU}", f"requested {req.cpu_m}m cpu; this machine has {cpu_m}m"
    if req.memory_bytes > memory_bytes:
        return f"resources.{MEMORY}", (
            f"requested {format_bytes(req.memory_bytes)} memory; this machine has {format_bytes(memory_bytes)}"
        )
    return None
