"""What admission decides about: jobs as demands, project quotas and user limits (units in the package docstring)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

Usage = dict[str, int]


@dataclass(frozen=True)
class Demand:
    """One job as admission sees it. ``key``: the job id (or any hashable) ; ``usage``: what it holds/asks for;
    ``admitted``: already Queued/Running/Stopping (holds its usage) vs Held (asks).

    Backfill (:mod:`crater_app.domain.backfill`) needs when capacity comes back: ``ends_at`` (UTC) is the latest
    instant an *admitted* demand still holds its usage (its start, or now when it has not started, plus its
    runtime bound; ``None``: unbounded); ``bound_s`` is a *held* demand's runtime bound in seconds (its
    ``max_runtime``, else the user's or the platform's default maximum; ``None``: unbounded)."""

    key: object
    project_id: int
    user_id: int
    priority: int
    created_at: datetime
    usage: Usage
    kind: str = "batch"  # "interactive" jobs count towards the user's max_sessions
    preemptible: bool = False
    reclaim_lock: bool = False
    admitted: bool = False
    approval_pending: bool = False  # a large job waiting for approval: never admitted, explained as such
    # An *admitted* demand may stand for ``count`` jobs of the same project, user and kind, ``usage`` being their
    # total (the caller groups identical admitted jobs to pass fewer demands). Such a group is never a preemption
    # victim: pass preemptible jobs one by one. Held demands are one job each.
    count: int = 1
    ends_at: datetime | None = None
    bound_s: int | None = None


@dataclass(frozen=True)
class ProjectQuota:
    """A project's quota (Volcano Queue spec): ``guarantee`` reserved for it, ``deserved`` its fair share when the
    machine is contended, ``capability`` the hard ceiling (a key absent from ``capability`` = no ceiling)."""

    project_id: int
    name: str
    guarantee: Usage = field(default_factory=dict)
    deserved: Usage = field(default_factory=dict)
    capability: Usage = field(default_factory=dict)


@dataclass(frozen=True)
class UserLimits:
    """Per-user limits (``None`` = none): concurrent interactive sessions, devices per job, max_runtime seconds."""

    max_sessions: int | None = None
    max_accelerators_per_job: int | None = None
    max_runtime_s: int | None = None


def key_order(key: object) -> tuple:
    """A total order over job keys of mixed types (ints by value, anything else by its text)."""
    return (0, key, "") if isinstance(key, int) else (1, 0, str(key))


def queue_order(d: Demand) -> tuple:
    """The order of a project's queue: higher priority first, then older, then by key."""
    return (-d.priority, d.created_at, key_order(d.key))


def share_ratio(used: int, deserved: int) -> float:
    """Volcano ``api.Share``-like ratio: 0/0 = 0, x/0 = infinity, else used/deserved."""
    if deserved <= 0:
        return 0.0 if used <= 0 else math.inf
    return used / deserved
