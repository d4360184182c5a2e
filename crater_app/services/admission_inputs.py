"""What an admission decision reads beyond the job rows: user limits and member shares (cached per process for a
few seconds), whether fair share is configured, the machine's capacity from the backend's inventory, and the
admitted jobs' holdings for backfill (read only for the scopes a blocked job needs). Also the two signals other
services send to the admission loop (:func:`nudge`, :func:`invalidate`)."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Iterable

from crater_app.db.queries import admission as queries
from crater_app.db.queries.admission import Snapshot
from crater_app.domain import backfill
from crater_app.domain import quota as q
from crater_app.domain.admission import UserLimits
from crater_app.services.context import ServiceContext
from crater_app.services.doorbell import INVALIDATE, NUDGE
from crater_app.services.nodes import capacity

#: how long a process trusts its view of "is fair share configured" (any guarantee/deserved set)
FAIRSHARE_FLAG_TTL_S = 2.0
#: how long a submission trusts user limits and member shares this process read (changes made here drop them at
#: once; the project's capability is always read under the row lock)
LIMITS_TTL_S = 2.0


def _cache(ctx: ServiceContext | None, name: str) -> dict | None:
    """The context's cache ``name`` (a dict of key -> (value, monotonic time read)), or ``None`` without a context."""
    if ctx is None:
        return None
    return ctx.cache.setdefault(name, {})


def read_limits(s, ctx: ServiceContext, user_ids: Iterable[int], snap: Snapshot, cached: bool = False) -> None:
    """Per-user limits of ``user_ids`` into ``snap.limits`` (a user's own, else the platform default from
    settings). ``cached``: values read by this process less than :data:`LIMITS_TTL_S` ago are used as they are
    (submissions)."""
    wanted = set(user_ids) - set(snap.limits)
    cache = _cache(ctx, "admission-limits") if cached else None
    now = time.monotonic()
    if cache is not None:
        for uid in list(wanted):
            hit = cache.get(uid)
            if hit is not None and now - hit[1] < LIMITS_TTL_S:
                snap.limits[uid] = hit[0]
                wanted.discard(uid)
    st = ctx.settings
    for uid, sessions, per_job, runtime in queries.limit_rows(s, sorted(wanted)):
        snap.limits[uid] = UserLimits(
            max_sessions=sessions if sessions is not None else st.default_max_sessions,
            max_accelerators_per_job=per_job if per_job is not None else st.default_max_accelerators_per_job,
            max_runtime_s=runtime if runtime is not None else st.default_max_runtime_s,
        )
        if cache is not None:
            cache[uid] = (snap.limits[uid], now)


def read_shares(s, pairs: Iterable[tuple[int, int]], snap: Snapshot, ctx: ServiceContext | None = None) -> None:
    """Member shares of the ``(project id, user id)`` ``pairs`` into ``snap.shares`` (only non-empty shares: ``{}``
    is no per-member limit). With ``ctx``: shares read by this process less than :data:`LIMITS_TTL_S` ago are
    used as they are."""
    wanted = set(pairs) - snap.shares_read
    if not wanted:
        return
    snap.shares_read |= wanted
    cache = _cache(ctx, "admission-shares")
    now = time.monotonic()
    if cache is not None:
        for pair in list(wanted):
            hit = cache.get(pair)
            if hit is not None and now - hit[1] < LIMITS_TTL_S:
                if hit[0]:
                    snap.shares[pair] = hit[0]
                wanted.discard(pair)
        if not wanted:
            return
    found = queries.share_rows(s, wanted)
    for pair in wanted:
        share = found.get(pair, {})
        if share:
            snap.shares[pair] = share
        if cache is not None:
            cache[pair] = (share, now)


class Holdings(dict):
    """The admitted jobs' backfill holdings, read on first use per scope (a project id, or ``None`` for the whole
    machine) in the decision's transaction: a mapping for ``domain.admission.decide(holdings=...)``.

    A job's bound is its ``max_runtime``, else its user's ``max_runtime_s`` limit, else the platform's
    ``default_max_runtime_s`` (the limits of users not in ``snap.limits`` are read on the way)."""

    def __init__(self, s, ctx: ServiceContext, snap: Snapshot, now: datetime) -> None:
        super().__init__()
        self.s, self.ctx, self.snap, self.now = s, ctx, snap, now

    def _bound(self, user_id: int, max_runtime_s: int | None) -> int | None:
        limits = self.snap.limits.get(user_id)
        return backfill.effective_bound(max_runtime_s, limits.max_runtime_s if limits else None,
                                        self.ctx.settings.default_max_runtime_s)

    def __missing__(self, scope: object) -> list[backfill.Holding]:
        rows = queries.holding_rows(self.s, scope)  # type: ignore[arg-type]
        read_limits(self.s, self.ctx, {row[1] for row in rows}, self.snap, cached=True)
        found = self[scope] = queries.holdings_of(rows, self._bound, self.now)
        return found

    def get(self, scope, default=None):  # dict.get does not call __missing__
        """The holdings of ``scope`` (a project id or ``MACHINE``), read on first use (``default`` is never used)."""
        return self[scope]


def bound_of(ctx: ServiceContext, limits: UserLimits | None, max_runtime_s: int | None) -> int | None:
    """A job's runtime bound (see :class:`Holdings`)."""
    return backfill.effective_bound(max_runtime_s, limits.max_runtime_s if limits else None,
                                    ctx.settings.default_max_runtime_s)


def machine_capacity(ctx: ServiceContext) -> q.Usage:
    """The machine's total: the sum over the backend's nodes (``services.nodes.capacity``) of cpu (millicores),
    memory (bytes) and devices per resource name and per ``name:model``."""
    total: q.Usage = {}
    for node in capacity(ctx):
        total["cpu"] = total.get("cpu", 0) + node.cpu_m
        total["memory"] = total.get("memory", 0) + node.memory_bytes
        for d in node.devices:
            for key in (d.resource, q.model_key(d.resource, d.model)):
                total[key] = total.get(key, 0) + 1
    return total


def fair_share_configured(ctx: ServiceContext, s=None) -> bool:
    """Whether some project has a non-empty ``guarantee`` or ``deserved`` (then the machine's capacity and fair
    share take part in admission). Cached per context for :data:`FAIRSHARE_FLAG_TTL_S` seconds;
    :func:`invalidate` drops the cache (quota changes)."""
    cached = ctx.cache.get("admission-fairshare")
    now = time.monotonic()
    if cached is not None and now - cached[1] < FAIRSHARE_FLAG_TTL_S:
        return cached[0]
    if s is None:
        with ctx.session(read_only=True) as rs:
            flag = queries.fair_share_flag(rs)
    else:
        flag = queries.fair_share_flag(s)
    ctx.cache["admission-fairshare"] = (flag, now)
    return flag


def nudge(ctx: ServiceContext) -> None:
    """Ask this process's loop for a full admission pass at its next round (e.g. a held job was cancelled: the
    jobs behind it may start); in a process that is not the leader, the leader's (``services.doorbell``)."""
    ctx.cache["admission-dirty"] = True
    ctx.kick.set(NUDGE)


def invalidate(ctx: ServiceContext) -> None:
    """Forget the cached fair-share flag, user limits and member shares, and ask the loop for a full admission
    pass (after a quota, share or limit change); a process that is not the leader asks the leader to do the same
    (``services.doorbell``; the other followers' caches expire within their TTL)."""
    for name in ("admission-fairshare", "admission-limits", "admission-shares"):
        ctx.cache.pop(name, None)
    ctx.cache["admission-dirty"] = True
    ctx.kick.set(INVALIDATE)
