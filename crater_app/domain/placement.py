"""Placement of queued requests onto one node's capacity: gang (all devices or none), priority order, EASY
backfill.

Order is priority (higher first), then submission time, then uid - the order of Slurm's priority/multifactor
plugin with a single priority factor, and of Volcano's ``priority`` + ``gang`` plugins with FIFO inside a queue.
Requests are placed in that order while they fit the free capacity. The first one that does not fit is the
*head*: it gets a reservation (:mod:`crater_app.domain.backfill`, EASY backfill after Lifka 1995, Mu'alem &
Feitelson 2001, as Slurm's ``sched/backfill``): its shadow time is when enough running workloads will have ended,
by their ``ends_at`` bounds, for it to fit; the devices it would take then are the lowest-indexed matching ones
among those free at that time. A later request that fits now still starts when it will have ended by the shadow
time (``now`` + its ``max_runtime_s``), or when it takes only devices, CPU and memory the head will not need then
(the *extra* capacity, of which it takes its share). Anything else waits behind the head. So a small job uses an
idle device while a large one waits, and a stream of small jobs never delays the large one's earliest start. The
requests placed earlier in the same call hold capacity from now on too: the head's reservation counts each of them
as a running workload that ends by ``now`` + its ``max_runtime_s`` (unbounded without one), as admission counts the
jobs it admits in a pass.

Reasons are catalogue codes (``event.<code>``, ``i18n/queue``) with their arguments, and the same in English
(``Decision.waiting``, the backend's message):

- ``placement.waiting`` / ``placement.waiting_unbounded`` (the head): ``request`` (the first resource it lacks,
  ``{key: amount}`` in Crater's units), ``free`` (the same key, free now), ``expected_at`` (ISO 8601 UTC; ``None``
  when the workloads holding what it lacks have no bound) and ``wait`` (seconds from ``now``, whole minutes);
- ``placement.queued`` / ``placement.queued_unbounded`` (behind it): ``position`` (1-based, among the waiting
  requests in queue order: the head is 1),
  ``blocker`` (the head's uid), ``blocker_request`` (what the head lacks), and the head's ``expected_at``/``wait``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import cached_property

from crater_app import i18n
from crater_app.domain import backfill
from crater_app.domain.resources import CPU, MEMORY


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
    """Result of :func:`place`: ``placed`` uid -> device indices; ``reasons`` uid -> ``(code, args)`` of every
    waiting request: its reason as a catalogue code (``event.<code>``) and arguments; :attr:`waiting` the same as
    English sentences."""

    placed: dict[str, tuple[int, ...]]
    reasons: dict[str, tuple[str, dict]] = field(default_factory=dict)

    @cached_property
    def waiting(self) -> dict[str, str]:
        """uid -> the reason's English sentence, rendered on first use (a round over a long queue compares codes
        and arguments and renders only the reasons that changed)."""
        return {uid: _message(code, args) for uid, (code, args) in self.reasons.items()}


def queue_order(requests: list[Request]) -> list[Request]:
    """Sort by priority (desc), submission time (asc), uid (asc)."""
    return sorted(requests, key=lambda r: (-r.priority, r.created_at, r.uid))


def _matches(req: Request, name: str, device: FreeDevice) -> bool:
    return device.resource == name and (req.model is None or device.model == req.model)


def _shortfall(req: Request, cpu_m: int, memory_bytes: int, devices: list[FreeDevice]) -> tuple[dict, dict] | None:
    """``(request, free)`` of the first resource ``req`` lacks (``{key: amount}``, Crater's units; a key with a
    model after a colon when ``req`` asks for one), or ``None`` when it fits."""
    for name, count in sorted(req.accelerators.items()):
        free = sum(1 for d in devices if _matches(req, name, d))
        if free < count:
            key = f"{name}:{req.model}" if req.model else name
            return {key: count}, {key: free}
    if req.cpu_m > cpu_m:
        return {CPU: req.cpu_m}, {CPU: max(cpu_m, 0)}
    if req.memory_bytes > memory_bytes:
        return {MEMORY: req.memory_bytes}, {MEMORY: max(memory_bytes, 0)}
    return None


def _pick(req: Request, devices: list[FreeDevice]) -> list[FreeDevice] | None:
    """The lowest-indexed devices of ``devices`` that ``req`` would take, or ``None`` when they are too few."""
    picked: list[FreeDevice] = []
    for name, count in sorted(req.accelerators.items()):
        matching = sorted((d for d in devices if _matches(req, name, d) and d not in picked), key=lambda d: d.index)
        if len(matching) < count:
            return None
        picked.extend(matching[:count])
    return picked


def _usage(devices: tuple[FreeDevice, ...] | list[FreeDevice], cpu_m: int, memory_bytes: int) -> dict[str, int]:
    """Devices (counted per resource name and per ``name:model``), CPU and memory as a backfill usage."""
    usage: dict[str, int] = {CPU: cpu_m, MEMORY: memory_bytes}
    for d in devices:
        for key in (d.resource, f"{d.resource}:{d.model}"):
            usage[key] = usage.get(key, 0) + 1
    return usage


def _need(req: Request) -> dict[str, int]:
    need = {CPU: req.cpu_m, MEMORY: req.memory_bytes}
    for name, count in req.accelerators.items():
        need[name] = need.get(name, 0) + count
        if req.model:
            key = f"{name}:{req.model}"
            need[key] = need.get(key, 0) + count
    return need


@dataclass
class _Head:
    """The blocked head's reservation as placement uses it: the backfill reservation, the devices it does not
    need at its shadow time (``spare``, by index) and its CPU/memory extra."""

    request: Request
    reservation: backfill.Reservation
    spare: set[int]
    lacking: dict
    cpu_m: int = 0
    memory_bytes: int = 0


def _reserve(head: Request, free: list[FreeDevice], cpu_m: int, memory_bytes: int, running, now: datetime,
             lacking: dict) -> _Head:
    holdings = [backfill.Holding(_usage(r.devices, r.cpu_m, r.memory_bytes), r.ends_at) for r in running]
    reservation = backfill.reserve(_need(head), _usage(free, cpu_m, memory_bytes), holdings, now)
    if reservation.start_at is None:
        back = [r for r in running if r.ends_at is not None]
    else:
        back = [r for r in running if r.ends_at is not None and r.ends_at <= reservation.start_at]
    at_shadow = list(free) + [d for r in back for d in r.devices]
    taken = _pick(head, at_shadow)
    if taken is None:  # it lacks devices even then: it needs every matching one
        taken = [d for d in at_shadow if any(_matches(head, name, d) for name in head.accelerators)]
    spare = {d.index for d in at_shadow} - {d.index for d in taken}
    return _Head(head, reservation, spare, lacking, cpu_m=reservation.extra.get(CPU, 0),
                 memory_bytes=reservation.extra.get(MEMORY, 0))


def _ends_at(req: Request, now: datetime | None) -> datetime | None:
    """When ``req`` started ``now`` has ended at the latest (``None``: no bound, or no clock)."""
    if now is None or req.max_runtime_s is None:
        return None
    return now + timedelta(seconds=req.max_runtime_s)


def _message(code: str, args: dict) -> str:
    return i18n.render(i18n.DEFAULT_LANGUAGE, f"event.{code}", args, fallback=code)


def place(requests: list[Request], capacity: Capacity, running: tuple[Running, ...] | list[Running] = (),
          now: datetime | None = None) -> Decision:
    """Place ``requests`` (any order; sorted with :func:`queue_order`) onto ``capacity`` (see the module docstring).

    Args:
        requests: the pending requests; ``max_runtime_s`` bounds the end of one started ahead of the head.
        capacity: what is free now.
        running: the workloads that hold the rest, with their ``ends_at`` bounds (UTC); the requests this call
            places ahead of the head are added to them for its reservation.
        now: the current instant (UTC); without it no request is known to end in time, so only extra capacity
            is lent ahead of a blocked head.

    Returns:
        :class:`Decision`: ``placed`` uid -> the device indices it takes (lowest-indexed free devices of its
        resource and model, or of the head's spare devices when it runs past the head's shadow time); every other
        request in ``waiting`` (English) and ``reasons`` (code, args). Pure: no I/O.
    """
    devices = list(capacity.devices)
    cpu, mem = capacity.cpu_m, capacity.memory_bytes
    placed: dict[str, tuple[int, ...]] = {}
    reasons: dict[str, tuple[str, dict]] = {}
    head: _Head | None = None
    started: list[Running] = []  # placed ahead of the head in this call: they hold capacity until their bound
    clock = now or datetime.min.replace(tzinfo=timezone.utc)
    for req in queue_order(requests):
        lack = _shortfall(req, cpu, mem, devices)
        if head is None and lack is not None:
            head = _reserve(req, devices, cpu, mem, [*running, *started], clock, lack[0])
            reasons[req.uid] = waiting_reason(lack[0], lack[1], backfill.estimate_args(head.reservation, now))
            continue
        if head is not None:
            picked = None
            if lack is None:
                ends_at = _ends_at(req, now)
                if backfill.ends_in_time(head.reservation, ends_at):
                    picked = _pick(req, devices)
                elif req.cpu_m <= head.cpu_m and req.memory_bytes <= head.memory_bytes:
                    picked = _pick(req, [d for d in devices if d.index in head.spare])
                    if picked is not None:
                        head.spare -= {d.index for d in picked}
                        head.cpu_m -= req.cpu_m
                        head.memory_bytes -= req.memory_bytes
            if picked is None:
                reasons[req.uid] = queued_reason(len(reasons) + 1, head.request.uid, head.lacking,
                                                 backfill.estimate_args(head.reservation, now))
                continue
        else:
            picked = _pick(req, devices) or []
            started.append(Running(req.uid, req.cpu_m, req.memory_bytes, tuple(picked), _ends_at(req, now)))
        devices = [d for d in devices if d not in picked]
        cpu -= req.cpu_m
        mem -= req.memory_bytes
        placed[req.uid] = tuple(sorted(d.index for d in picked))
    return Decision(placed=placed, reasons=reasons)


def waiting_reason(request: dict[str, int], free: dict[str, int], estimate: dict) -> tuple[str, dict]:
    """``(code, args)`` of the first request that does not fit (the head): ``placement.waiting`` with ``request`` and
    ``free`` (resource lists of what it lacks) and the estimate (``expected_at``, ISO 8601 UTC, and ``wait``,
    seconds), or ``placement.waiting_unbounded`` (``expected_at`` ``None``) when no start can be estimated."""
    if estimate.get("expected_at"):
        return "placement.waiting", {"request": request, "free": free, "expected_at": estimate["expected_at"],
                                     "wait": estimate.get("wait")}
    return "placement.waiting_unbounded", {"request": request, "free": free, "expected_at": None}


def queued_reason(position: int, blocker: str, lacking: dict[str, int], estimate: dict) -> tuple[str, dict]:
    """``(code, args)`` of a request waiting behind the head: ``placement.queued`` with its ``position`` (1-based,
    among the waiting), the head's uid (``blocker``, named by its job later) and what the head lacks
    (``blocker_request``) and the head's estimate (``expected_at``, ``wait``), or ``placement.queued_unbounded``
    without one."""
    if estimate.get("expected_at"):
        return "placement.queued", {"position": position, "blocker": blocker, "blocker_request": lacking,
                                    "expected_at": estimate["expected_at"], "wait": estimate.get("wait")}
    return "placement.queued_unbounded", {"position": position, "blocker": blocker, "blocker_request": lacking,
                                          "expected_at": None}

