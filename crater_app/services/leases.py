"""Leader leases: a row per loop group in ``leases``; the holder renews it, others take over once it expires.

The loops (placement, reconcile) must run once per deployment, not once per web worker (DESIGN.md §3).
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from crater_app.db.models import Lease
from crater_app.db.types import utcnow
from crater_app.services.context import ServiceContext


def try_acquire(ctx: ServiceContext, name: str, holder: str, ttl_s: float, renew_within_s: float | None = None) -> bool:
    """Take or renew lease ``name`` for ``holder`` for ``ttl_s`` seconds.

    The lease row is read first (a read-only transaction, which neither waits for nor blocks writers): while
    another holder's lease has not expired the answer is False without a write, and with ``renew_within_s`` a
    lease of ``holder``'s own that still runs for more than ``renew_within_s`` seconds is kept as it is (True
    without a write). Only a free, expired or due lease costs a write transaction - so that the followers' and the
    leader's rounds do not queue for the database's single write lock behind submissions.

    Returns:
        True when ``holder`` holds the lease now (it was free, expired, or already its own).
    """
    now = utcnow()
    with ctx.session(read_only=True) as s:
        row = s.execute(select(Lease.holder, Lease.expires_at).where(Lease.name == name)).first()
    if row is not None:
        current, until = row
        if current != holder and until >= now:
            return False
        if current == holder and renew_within_s is not None and (until - now).total_seconds() > renew_within_s:
            return True
    expires = now + timedelta(seconds=ttl_s)
    with ctx.session() as s:
        result = s.exec(  # type: ignore[call-overload]
            update(Lease)
            .where(Lease.name == name)
            .where((Lease.holder == holder) | (Lease.expires_at < now))
            .values(holder=holder, expires_at=expires)
        )
        if result.rowcount:
            return True
    try:
        with ctx.session() as s:
            s.add(Lease(name=name, holder=holder, expires_at=expires))
        return True
    except IntegrityError:
        return False


def release(ctx: ServiceContext, name: str, holder: str) -> None:
    """Give lease ``name`` up if ``holder`` holds it (on clean shutdown)."""
    with ctx.session() as s:
        s.exec(update(Lease).where(Lease.name == name, Lease.holder == holder).values(expires_at=utcnow()))  # type: ignore[call-overload]
