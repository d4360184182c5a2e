"""Leader leases: a row per loop group in ``leases``; the holder renews it, others take over once it expires.

The loops (placement, reconcile) must run once per deployment, not once per web worker (DESIGN.md §3).
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError

from crater_app.db.models import Lease
from crater_app.db.types import utcnow
from crater_app.services.context import ServiceContext


def try_acquire(ctx: ServiceContext, name: str, holder: str, ttl_s: float) -> bool:
    """Take or renew lease ``name`` for ``holder`` for ``ttl_s`` seconds.

    Returns:
        True when ``holder`` holds the lease now (it was free, expired, or already its own).
    """
    now = utcnow()
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
