"""EASY backfill: may a job start ahead of an earlier job that is blocked, without delaying it?

The rule is the "EASY" (Extensible Argonne Scheduling sYstem) backfill of D. Lifka, *The ANL/IBM SP scheduling
system* (JSSPP 1995, LNCS 949), as analysed by A. Mu'alem and D. Feitelson, *Utilization, predictability,
workloads, and user runtime estimates in scheduling the IBM SP2 with backfilling* (IEEE TPDS 12(6), 2001), and as
Slurm's ``sched/backfill`` plugin applies it: only the first blocked job (the *head*) gets a reservation. Its
*shadow time* is the earliest instant at which enough of the jobs holding capacity now will have ended, by their
runtime bounds, for the head to fit; the capacity left over at that instant, beyond what the head needs, is the
*extra* capacity. A later job that fits the free capacity now may start if it will have ended by the shadow time,
or if it uses only extra capacity (which it then takes). Either way the head's earliest start does not move.

A job's end is bounded by its ``max_runtime`` counted from its start (Slurm: the job's time limit); a job without
one never ends as far as the estimate goes. So:

- a head that waits for capacity only unbounded jobs hold has no shadow time (``start_at`` ``None``: "no
  estimate", as Slurm's jobs with an ``INFINITE`` limit push reservations out of its window); a bounded job may
  then start ahead of it, because it ends at some known time, while an unbounded one may take only what the head
  does not need even once every bounded job has ended;
- a job with no bound can never "end before the shadow time": it may start ahead only onto extra capacity.

Pure: no I/O, no clock (the caller passes ``now``). A *usage* is a dict resource key -> integer amount in Crater's
units (cpu millicores, memory bytes, devices; keys as in :mod:`crater_app.domain.quota`, where
``nvidia.com/gpu:<model>`` counts the devices of one model). Times are timezone-aware UTC instants.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Iterable

Usage = dict[str, int]


@dataclass(frozen=True)
class Holding:
    """What a running (or admitted) job holds (``usage``) and ``ends_at``, the latest instant it can still hold it
    (its start plus its ``max_runtime``; ``None``: unbounded); ``key`` names the job (optional)."""

    usage: Usage
    ends_at: datetime | None
    key: object = None


@dataclass(frozen=True)
class Reservation:
    """The blocked head's reservation.

    ``start_at``: its shadow time (``None``: no estimate - it waits for capacity that jobs without a runtime bound
    hold); ``extra``: per key, what is left over at ``start_at`` beyond the head's need (for ``None``: once every
    bounded job has ended; a key the head still lacks then has none); ``released``: the keys' amounts the head
    gets back from ending jobs by then (for its reason)."""

    start_at: datetime | None
    extra: Usage = field(default_factory=dict)
    released: Usage = field(default_factory=dict)


def effective_bound(max_runtime_s: int | None, *defaults: int | None) -> int | None:
    """A job's runtime bound in seconds: its own ``max_runtime_s``, else the first default that is set (the user's
    ``max_runtime_s`` limit, then the platform's ``default_max_runtime_s`` setting); ``None``: unbounded."""
    if max_runtime_s is not None:
        return max_runtime_s
    for value in defaults:
        if value is not None:
            return value
    return None


def expected_end(started_at: datetime | None, bound_s: int | None, now: datetime) -> datetime | None:
    """The latest instant a job can still run: ``started_at`` (or ``now`` for a job not started yet) plus
    ``bound_s`` seconds, but never before ``now`` (a job past its bound is being stopped: it ends any moment).
    ``None`` when the job has no bound."""
    if bound_s is None:
        return None
    end = (started_at or now) + timedelta(seconds=bound_s)
    return end if end > now else now


def _lacking(need: Usage, free: Usage) -> set[str]:
    return {key for key, amount in need.items() if amount > 0 and free.get(key, 0) < amount}


def reserve(need: Usage, free: Usage, holdings: Iterable[Holding], now: datetime) -> Reservation:
    """The reservation of a blocked head that needs ``need`` while ``free`` is free now and ``holdings`` hold the
    rest (only bounded holdings ever come back).

    Returns:
        :class:`Reservation`: ``start_at`` the first ``ends_at`` (taken in order, each ending job giving back its
        usage) at which ``need`` fits, ``now`` when it fits already, ``None`` when it never does by bounded ends;
        ``extra`` per key ``free + released - need`` (never negative) at that instant.
    """
    pool = dict(free)
    released: Usage = {}
    lacking = _lacking(need, pool)
    start_at: datetime | None = now if not lacking else None
    if lacking:
        for holding in sorted((h for h in holdings if h.ends_at is not None), key=lambda h: h.ends_at):
            for key, amount in holding.usage.items():
                pool[key] = pool.get(key, 0) + amount
                released[key] = released.get(key, 0) + amount
            lacking = {key for key in lacking if pool.get(key, 0) < need[key]}
            if not lacking:
                start_at = holding.ends_at if holding.ends_at > now else now
                break
    extra = {key: amount - need.get(key, 0) for key, amount in pool.items()}
    extra = {key: amount for key, amount in extra.items() if amount > 0}
    return Reservation(start_at=start_at, extra=extra, released=released)


def ends_in_time(reservation: Reservation, ends_at: datetime | None) -> bool:
    """Whether a job that ends at ``ends_at`` (``None``: unbounded) is gone by the head's shadow time, so that it
    may use any capacity that is free now (a head with no estimate waits for an unbounded job: every bounded job
    ends "before" it)."""
    if ends_at is None:
        return False
    return reservation.start_at is None or ends_at <= reservation.start_at


def within_extra(reservation: Reservation, usage: Usage) -> bool:
    """Whether ``usage`` fits the head's extra capacity on every key it asks for."""
    return all(amount <= 0 or reservation.extra.get(key, 0) >= amount for key, amount in usage.items())


def may_start(reservation: Reservation, usage: Usage, ends_at: datetime | None) -> bool:
    """EASY's test for a job that fits the free capacity now: it ends by the shadow time, or it uses only extra
    capacity. (Whether it fits *now* is the caller's check.)"""
    return ends_in_time(reservation, ends_at) or within_extra(reservation, usage)


def admit(reservation: Reservation, usage: Usage, ends_at: datetime | None) -> Reservation:
    """The reservation after a job passed :func:`may_start` has started: a job that ends in time leaves it as it
    is; one that runs past the shadow time takes its usage out of the extra capacity."""
    if ends_in_time(reservation, ends_at):
        return reservation
    extra = dict(reservation.extra)
    for key, amount in usage.items():
        if amount > 0:
            extra[key] = extra.get(key, 0) - amount
    return replace(reservation, extra={k: v for k, v in extra.items() if v > 0})


def wait_s(start_at: datetime, now: datetime) -> int:
    """Seconds from ``now`` to an expected start, in whole minutes rounded up and at least one (a reason says
    "expected start within 14m", never "within 0s")."""
    seconds = (start_at - now).total_seconds()
    return max(60, -(-int(seconds) // 60) * 60)


def estimate_args(reservation: Reservation, now: datetime | None) -> dict:
    """A reason's estimate arguments: ``expected_at`` (ISO 8601 UTC, or ``None``: no estimate) and ``wait``
    (seconds from ``now``, see :func:`wait_s`; only with an estimate)."""
    if reservation.start_at is None or now is None:
        return {"expected_at": None}
    return {"expected_at": reservation.start_at.isoformat(), "wait": wait_s(reservation.start_at, now)}
