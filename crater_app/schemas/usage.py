"""Usage reports and billing as the API shows them."""

from __future__ import annotations

from datetime import datetime

from pydantic import ConfigDict, Field

from crater_app.schemas.base import Public


class UsageRowPublic(Public):
    """Usage of one ``key`` in one ``period`` (``YYYY-MM-DD`` or ``YYYY-MM``, UTC; ``total`` for the totals):
    accelerator-hours (devices x hours), CPU-core-hours, memory-GiB-hours, and how many ``jobs`` ran in it."""

    key: str
    period: str
    accelerator_hours: float
    cpu_core_hours: float
    memory_gib_hours: float
    jobs: int


class UsagePublic(Public):
    """``GET /api/v1/usage`` answer: the window ``from`` .. ``to`` (UTC, half-open), ``group_by``,
    ``granularity``, ``rows`` (by period, then key), ``keys`` (each key's totals over the window, period ``total``)
    and ``totals``. In ``keys`` and ``totals`` a job counts once, in ``rows`` once per period it ran in."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)
    group_by: str
    granularity: str
    start: datetime = Field(serialization_alias="from")
    end: datetime = Field(serialization_alias="to")
    rows: list[UsageRowPublic]
    keys: list[UsageRowPublic]
    totals: UsageRowPublic


class BillingPricePublic(Public):
    """A price: ``points_per_hour`` for one unit of ``resource`` (``cpu``: a core, ``memory``: a GiB, an
    accelerator resource: a device), for accelerator ``model`` only, or for every model when ``model`` is ``""``."""

    resource: str
    model: str
    points_per_hour: float
    updated_at: datetime


class ProjectBalancePublic(Public):
    """The caller's free allowance in one project for the current period: ``allowance_points`` per member,
    ``used_points`` charged against it, ``left_points`` (never below 0)."""

    project: str
    allowance_points: float
    used_points: float
    left_points: float


class BalancePublic(Public):
    """``GET /api/v1/billing/balance``: ``billing_enabled``, the ``period`` (``YYYY-MM``, UTC), the caller's
    ``extra_points`` (may be negative after a run outlasted the balance) and the allowance per project."""

    username: str
    billing_enabled: bool
    period: str
    extra_points: float
    projects: list[ProjectBalancePublic]


class PointGrantPublic(Public):
    """``POST /api/v1/billing/grants`` answer: the user, the ``points`` granted (negative: taken back), the note
    and the user's ``extra_points`` after it."""

    username: str
    points: float
    note: str
    extra_points: float


class ProjectBillingPublic(Public):
    """``PUT /api/v1/projects/{name}/billing`` answer: the free points each member gets per billing period."""

    project: str
    member_allowance_points: float
