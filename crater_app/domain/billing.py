"""Billing in points: prices, the cost of a run, and which balance pays it. Pure; :mod:`crater_app.services.billing`
keeps the books.

Model (Crater's reference design bills in points with a free allowance per account member; the price
of a job is computed like Slurm's ``TRESBillingWeights``: a weight per resource, times the allocation, times time):

- A price is points per hour for one unit of a resource: ``cpu`` per core, ``memory`` per GiB, an accelerator
  resource (``nvidia.com/gpu``) per device. An accelerator price may name a ``model``; a job that asked for that
  model pays it, any other job the resource's generic price (``model == ""``). A resource without a price is free.
- Each member of a project gets ``member_allowance_points`` free points per billing period (UTC calendar month) in
  that project; each user holds an ``extra`` balance on top. A charge takes the allowance of the job's project
  first, then the extra balance. The extra balance may go below zero when a running job outlasts it (a job is not
  stopped for billing); new submissions are refused while both balances are used up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from crater_app.domain import field_paths
from crater_app.domain.errors import InvalidInput
from crater_app.domain.naming import MAX_MODEL_CHARS, is_model_name, is_text
from crater_app.domain.resources import CPU, MEMORY, is_resource_name
from crater_app.domain.usage import GIB, period_label, period_start

#: at most this many price rows
MAX_PRICES = 256
#: the largest price of one unit per hour, points
MAX_POINTS_PER_HOUR = 1_000_000.0
#: the largest grant (or take-back) in one request, points
MAX_GRANT_POINTS = 1_000_000_000.0
#: the largest free allowance per member and period, points
MAX_ALLOWANCE_POINTS = 1_000_000_000.0
MAX_NOTE_CHARS = 255
#: grants and allowances are counted in hundredths of a point: a given amount is rounded to this many decimals
#: (charges keep their full precision and are shown rounded the same way)
POINTS_DECIMALS = 2
#: the smallest grant, points (``10 ** -POINTS_DECIMALS``)
POINTS_STEP = 0.01
#: the fields of one price row
PRICE_FIELDS = ("model", "points_per_hour", "resource")


@dataclass(frozen=True)
class Price:
    """``points_per_hour`` for one unit of ``resource`` (a core, a GiB, a device), for accelerator ``model`` only
    or for every model (``model == ""``)."""

    resource: str
    model: str
    points_per_hour: float


PriceTable = dict[tuple[str, str], float]


def price_table(prices: list[Price]) -> PriceTable:
    """``{(resource, model): points_per_hour}`` of ``prices``."""
    return {(p.resource, p.model): p.points_per_hour for p in prices}


def unit_price(table: PriceTable, resource: str, model: str | None = None) -> float:
    """Points per hour of one unit of ``resource``: the price for ``model`` when there is one, else the generic
    price (``model == ""``), else 0 (free)."""
    if model:
        specific = table.get((resource, model))
        if specific is not None:
            return specific
    return table.get((resource, ""), 0.0)


def hourly_rate(table: PriceTable, cpu_m: int, memory_bytes: int, accelerators: dict[str, int],
                model: str | None) -> float:
    """Points per hour of a job holding ``cpu_m`` millicores, ``memory_bytes`` bytes and ``accelerators``
    (resource name -> devices) of accelerator ``model`` (``None``: any model; the generic prices apply)."""
    rate = cpu_m / 1000.0 * unit_price(table, CPU) + memory_bytes / GIB * unit_price(table, MEMORY)
    for resource, devices in accelerators.items():
        rate += devices * unit_price(table, resource, model)
    return rate


def cost(rate_per_hour: float, seconds: float) -> float:
    """Points for ``seconds`` of run time at ``rate_per_hour`` (0 for no time)."""
    return rate_per_hour * max(0.0, seconds) / 3600.0


def split_charge(points: float, allowance_left: float) -> tuple[float, float]:
    """How a charge of ``points`` (>= 0) is paid: ``(from the allowance, from the extra balance)``.

    The allowance pays what it has left (never below zero); the extra balance pays the rest, even when that
    takes it below zero (a running job is not stopped for billing).
    """
    from_allowance = min(points, max(0.0, allowance_left))
    return from_allowance, points - from_allowance


def exhausted(allowance_left: float, extra: float) -> bool:
    """Both balances are used up: nothing left of the allowance and no positive extra balance."""
    return allowance_left <= 0.0 and extra <= 0.0


def period_of(at: datetime) -> str:
    """The billing period containing ``at``: its UTC calendar month, ``YYYY-MM``."""
    return period_label(period_start(at, "month"), "month")


def _number(value: object, field: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInput("billing.number", field, field_name=field, low=low, high=high)
    if not low <= value <= high:
        raise InvalidInput("billing.number_range", field, field_name=field, low=low, high=high, value=value)
    return float(value) + 0.0  # -0.0 + 0.0 is 0.0: a negative zero is stored and shown as 0


def validate_prices(raw: object) -> list[Price]:
    """The price table of a ``PUT /billing/prices`` body: a list of ``{resource, model?, points_per_hour}``.

    ``resource`` is ``cpu``, ``memory`` or an accelerator resource name (``nvidia.com/gpu``); ``model`` (at most
    128 characters) only for accelerator resources; ``points_per_hour`` 0..1,000,000; each (resource, model) once;
    at most 256 rows.

    Raises:
        InvalidInput: ``billing.prices_list``/``billing.prices_too_many`` (field ``prices``), ``billing.price_*``
        naming the field (``prices[2].points_per_hour``) and the limit, ``billing.number``/``billing.number_range``
        (``low``, ``high``) for the points.
    """
    if not isinstance(raw, list):
        raise InvalidInput("billing.prices_list", "prices")
    if len(raw) > MAX_PRICES:
        raise InvalidInput("billing.prices_too_many", "prices", count=len(raw), max=MAX_PRICES)
    out: list[Price] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(raw):
        at = field_paths.item("prices", i)
        if not isinstance(item, dict):
            raise InvalidInput("billing.price_object", at, field_name=at)
        unknown = sorted(str(k) for k in set(item) - set(PRICE_FIELDS))
        if unknown:
            raise InvalidInput("billing.price_unknown_field", field_paths.key(at, unknown[0]), field_name=at,
                               name=field_paths.shown(unknown[0]),
                               allowed=list(PRICE_FIELDS))
        resource = item.get("resource")
        if not isinstance(resource, str) or not is_resource_name(resource):
            raise InvalidInput("billing.price_resource", f"{at}.resource", field_name=f"{at}.resource")
        model = item.get("model", "")
        if model is None:
            model = ""
        if not isinstance(model, str) or len(model) > MAX_MODEL_CHARS or not is_text(model):
            raise InvalidInput("billing.price_model_text", f"{at}.model", field_name=f"{at}.model",
                               max=MAX_MODEL_CHARS)
        model = model.strip()
        if model and not is_model_name(model):
            raise InvalidInput("billing.price_model_name", f"{at}.model", field_name=f"{at}.model",
                               max=MAX_MODEL_CHARS)
        if model and resource in (CPU, MEMORY):
            raise InvalidInput("billing.price_model_not_accelerator", f"{at}.model", field_name=f"{at}.model",
                               resource=resource)
        if "points_per_hour" not in item:
            raise InvalidInput("billing.price_points_required", f"{at}.points_per_hour",
                               field_name=f"{at}.points_per_hour")
        points = _number(item["points_per_hour"], f"{at}.points_per_hour", 0.0, MAX_POINTS_PER_HOUR)
        if (resource, model) in seen:
            raise InvalidInput("billing.price_twice", f"{at}.resource", field_name=at,
                               resource=f"{resource} ({model})" if model else resource)
        seen.add((resource, model))
        out.append(Price(resource=resource, model=model, points_per_hour=points))
    return out


def points_of(value: float) -> float:
    """``value`` rounded to :data:`POINTS_DECIMALS` decimals (``1e-9`` -> ``0.0``, ``2.345`` -> ``2.35``), without a
    negative zero."""
    return round(value, POINTS_DECIMALS) + 0.0


def validate_grant(points: object, note: object) -> tuple[float, str]:
    """``(points, note)`` of a grant: points within +-1,000,000,000 (negative takes points back), rounded to
    hundredths (:data:`POINTS_STEP`) and not 0 once rounded; note text of at most 255 characters.

    Raises:
        InvalidInput: ``billing.number``/``billing.number_range`` (field ``points``), ``billing.points_zero`` (0;
        ``step``), ``billing.points_below_step`` (not 0, but 0 once rounded: ``value``, ``step``) or
        ``billing.note`` (field ``note``, ``max``).
    """
    given = _number(points, "points", -MAX_GRANT_POINTS, MAX_GRANT_POINTS)
    if given == 0:
        raise InvalidInput("billing.points_zero", "points", step=POINTS_STEP)
    value = points_of(given)
    if value == 0:
        raise InvalidInput("billing.points_below_step", "points", value=given, step=POINTS_STEP)
    if note is None:
        note = ""
    if not isinstance(note, str) or len(note) > MAX_NOTE_CHARS or not is_text(note):
        raise InvalidInput("billing.note", "note", max=MAX_NOTE_CHARS)
    return value, note


def validate_allowance(points: object) -> float:
    """A project's ``member_allowance_points``: 0..1,000,000,000, rounded to hundredths (:data:`POINTS_STEP`;
    ``-0.0`` is taken as ``0.0``). Raises :class:`InvalidInput` naming it."""
    return points_of(_number(points, "member_allowance_points", 0.0, MAX_ALLOWANCE_POINTS))
