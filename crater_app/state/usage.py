"""/usage: accelerator-hours per day (a stacked bar chart), totals per user/project/model, the caller's points
balance and, for platform admins, the price table. The services decide what each caller sees."""

from __future__ import annotations

import math
import re
from datetime import timedelta

import plotly.graph_objects as go
import reflex as rx

from crater_app.schemas import BalancePublic, BillingPricePublic, UsagePublic
from crater_app.domain.times import utcnow
from crater_app.domain.errors import CraterError, Unauthenticated
from crater_app.i18n.format import significant
from crater_app.services import billing, usage
from crater_app.state.base import AppState
from crater_app.state.field_errors import FieldErrors

GROUP_BYS = ("project", "user", "model")
GRANULARITIES = ("day", "month")
WINDOWS = ("7", "30", "90", "365")  # days
#: the chart shows this many keys (the largest); the rest are summed as "others"
MAX_SERIES = 10
#: the price editor's columns, as the service names a price's fields
PRICE_COLUMNS = ("resource", "model", "points_per_hour")
_PRICE_FIELD = re.compile(r"prices\[(\d+)\](?:\.(\w+))?")


def fmt_hours(value: float) -> str:
    """Hours with one decimal and thousands separators (``1,234.5``, ``7.0``, ``0.0``); an amount under 1 with two
    significant digits (``0.035``, ``0.5``, ``0.0012``), so that a short run never reads as ``0.0`` while the chart
    shows it. The same in both languages."""
    if value == 0 or abs(value) >= 0.995:  # 0.995 and up round to 1.0
        return f"{value:,.1f}"
    return significant(value)


def fmt_points(value: float) -> str:
    """Points with up to two decimals (``12.5``, ``-3``, ``1,000``)."""
    return f"{round(value, 2):,.2f}".rstrip("0").rstrip(".")


def chart_series(report: UsagePublic, others: str) -> tuple[list[str], list[dict]]:
    """``(periods, series)`` of the stacked chart: every period of the report (oldest first) and per key
    ``{"name", "y"}`` with its accelerator-hours per period; the :data:`MAX_SERIES` keys with the most hours, the
    rest summed under ``others``. Keys without accelerator-hours are left out."""
    periods = sorted({r.period for r in report.rows} | set(window_periods(report)))
    index = {p: i for i, p in enumerate(periods)}
    ranked = [k.key for k in sorted(report.keys, key=lambda k: -k.accelerator_hours) if k.accelerator_hours > 0]
    shown = set(ranked[:MAX_SERIES])
    values: dict[str, list[float]] = {k: [0.0] * len(periods) for k in ranked[:MAX_SERIES]}
    if len(ranked) > MAX_SERIES:
        values[others] = [0.0] * len(periods)
    for r in report.rows:
        if r.accelerator_hours <= 0:
            continue
        name = r.key if r.key in shown else others
        if name in values:
            values[name][index[r.period]] += r.accelerator_hours
    return periods, [{"name": name, "y": [float(f"{v:.4g}") for v in ys]} for name, ys in values.items()]


def window_periods(report: UsagePublic, limit: int = 400) -> list[str]:
    """Every period label of the report's window ``[start, end)`` in UTC, oldest first: ``YYYY-MM-DD`` per day
    (``granularity`` ``day``) or ``YYYY-MM`` per month, at most ``limit`` of them - so that days without usage
    still have their (empty) place on the chart."""
    start, end = report.start, report.end
    out: list[str] = []
    if report.granularity == "month":
        y, m = start.year, start.month
        while (y, m) < (end.year, end.month) or (
                (y, m) == (end.year, end.month) and end > end.replace(day=1, hour=0, minute=0, second=0, microsecond=0)):
            out.append(f"{y:04d}-{m:02d}")
            y, m = (y + 1, 1) if m == 12 else (y, m + 1)
            if len(out) >= limit:
                break
        return out
    day = start.date()
    last = end.date() if end.time() != end.time().min else end.date() - timedelta(days=1)
    while day <= last and len(out) < limit:
        out.append(day.isoformat())
        day += timedelta(days=1)
    return out


def usage_figure(periods: list[str], series: list[dict], y_title: str) -> go.Figure:
    """The stacked bar chart of :func:`chart_series`'s ``(periods, series)``, ``y_title`` on the y axis.

    The x axis is a *category* axis of the period labels themselves (``YYYY-MM-DD`` or ``YYYY-MM``, UTC), in
    order: plotly would otherwise read them as dates and label ticks with a time of day and an English month
    name ("00:00 / Nov 30, 2026"), whatever the console's language."""
    fig = go.Figure([go.Bar(name=s["name"], x=list(periods), y=s["y"]) for s in series])
    fig.update_layout(
        barmode="stack", height=360, margin={"l": 48, "r": 16, "t": 16, "b": 40},
        yaxis_title=y_title, legend={"orientation": "h", "y": -0.18},
        paper_bgcolor="rgba(0,0,0,0)", plot_bgcolor="rgba(0,0,0,0)",
        xaxis={"type": "category", "categoryorder": "array", "categoryarray": list(periods), "tickangle": -45
               if len(periods) > 14 else 0, "automargin": True},
    )
    return fig


def total_rows(report: UsagePublic) -> list[dict[str, str]]:
    """The totals table: one row per key, most accelerator-hours first, with formatted figures."""
    return [
        {"key": k.key, "accelerator_hours": fmt_hours(k.accelerator_hours), "cpu_core_hours": fmt_hours(k.cpu_core_hours),
         "memory_gib_hours": fmt_hours(k.memory_gib_hours), "jobs": f"{k.jobs:,}"}
        for k in sorted(report.keys, key=lambda k: (-k.accelerator_hours, k.key))
    ]


def balance_rows(balance: BalancePublic) -> list[dict[str, str]]:
    """The allowance table: per project the allowance, what is used of it and what is left this period."""
    return [{"project": p.project, "allowance": fmt_points(p.allowance_points), "used": fmt_points(p.used_points),
             "left": fmt_points(p.left_points)} for p in balance.projects]


def price_rows(prices: list[BillingPricePublic]) -> list[dict[str, str]]:
    """The price editor's rows: resource, model and points per hour as the inputs show them."""
    return [{"resource": p.resource, "model": p.model, "points_per_hour": f"{p.points_per_hour:g}"} for p in prices]


def _blank(row: dict[str, str]) -> bool:
    return not any(row.get(k, "").strip() for k in PRICE_COLUMNS)


def price_cell(field: str | None, rows: list[dict[str, str]]) -> str | None:
    """The editor cell (``"<row>.<column>"``) of the service's error field ``prices[<i>].<column>``: ``i`` counts the
    rows :func:`parse_price_rows` sent (blank rows are not sent); ``None`` for an error of no row."""
    found = _PRICE_FIELD.fullmatch(field or "")
    sent = [i for i, row in enumerate(rows) if not _blank(row)]
    if found is None or int(found[1]) >= len(sent):
        return None
    column = found[2] if found[2] in PRICE_COLUMNS else "resource"
    return f"{sent[int(found[1])]}.{column}"


def parse_price_rows(rows: list[dict[str, str]]) -> list[dict]:
    """The editor's rows as the body of ``billing.set_prices``: blank rows dropped, points read as numbers (text
    that is not a number is passed on as text, so that the service names the field)."""
    out = []
    for row in rows:
        if _blank(row):
            continue
        resource, model, points = (row.get(k, "").strip() for k in PRICE_COLUMNS)
        try:
            value: object = float(points)
            if not math.isfinite(value):  # type: ignore[arg-type]
                value = points
        except ValueError:
            value = points
        out.append({"resource": resource, "model": model, "points_per_hour": value})
    return out


class UsageState(FieldErrors, AppState):
    """The usage report (chart + totals), the caller's balance and the price table (an error of a price beside
    its cell: ``field_errors["<row>.<column>"]``; others in ``form_error``)."""

    group_by: str = ""  # "" until the first answer: the service picks by role
    granularity: str = "day"
    window_days: str = "30"
    periods: list[str] = []
    series: list[dict] = []
    totals: list[dict[str, str]] = []
    total_accelerator_hours: str = "0.0"
    total_cpu_core_hours: str = "0.0"
    total_memory_gib_hours: str = "0.0"
    total_jobs: str = "0"
    billing_enabled: bool = False
    period: str = ""
    extra_points: str = "0"
    allowances: list[dict[str, str]] = []
    prices: list[dict[str, str]] = []
    error: str = ""
    loaded: bool = False

    @rx.var
    def figure(self) -> go.Figure:
        """Accelerator-hours per period, stacked by key."""
        return usage_figure(self.periods, self.series, self.msg("usage.chart.y"))

    @rx.event
    async def load(self):
        """Read the report, the balance and the prices."""
        self.error = ""
        self._clear_errors()
        since = (utcnow() - timedelta(days=int(self.window_days))).strftime("%Y-%m-%dT%H:%M:%SZ")
        report, stop = await self.guarded(usage.usage, self.group_by or None, since, None, self.granularity)
        if report is None:
            return stop
        self.group_by = report.group_by
        self.periods, self.series = chart_series(report, self.msg("usage.chart.others"))
        self.totals = total_rows(report)
        t = report.totals
        self.total_accelerator_hours, self.total_cpu_core_hours = fmt_hours(t.accelerator_hours), fmt_hours(t.cpu_core_hours)
        self.total_memory_gib_hours, self.total_jobs = fmt_hours(t.memory_gib_hours), f"{t.jobs:,}"
        balance, stop = await self.guarded(billing.balance)
        if balance is None:
            return stop
        self.billing_enabled, self.period = balance.billing_enabled, balance.period
        self.extra_points, self.allowances = fmt_points(balance.extra_points), balance_rows(balance)
        prices, stop = await self.guarded(billing.list_prices)
        if prices is None:
            return stop
        self.prices = price_rows(prices)
        self.loaded = True
        return None

    @rx.event
    def set_group_by(self, value: str):
        """Group the report by ``project``, ``user`` or ``model``."""
        if value in GROUP_BYS:
            self.group_by = value
        return UsageState.load

    @rx.event
    def set_granularity(self, value: str):
        """Periods of a ``day`` or a ``month``."""
        if value in GRANULARITIES:
            self.granularity = value
        return UsageState.load

    @rx.event
    def set_window_days(self, value: str):
        """The last 7, 30, 90 or 365 days."""
        if value in WINDOWS:
            self.window_days = value
            if value == "365":
                self.granularity = "month"
        return UsageState.load

    # ---- price editor (platform admins; the service refuses everyone else) ---------------------------------

    @rx.event
    def set_price_field(self, index: int, name: str, value: str) -> None:
        """Edit one cell of the price editor."""
        if 0 <= index < len(self.prices) and name in PRICE_COLUMNS:
            row = dict(self.prices[index])
            row[name] = value[:253]
            self.prices[index] = row
            self._forget_field_error(f"{index}.{name}")

    @rx.event
    def add_price(self) -> None:
        """Add an empty row to the price editor."""
        self.prices.append({"resource": "", "model": "", "points_per_hour": ""})

    @rx.event
    def remove_price(self, index: int) -> None:
        """Drop a row of the price editor (saved with the rest)."""
        if 0 <= index < len(self.prices):
            self.prices.pop(index)
            self._clear_errors()  # the rows below moved up: their errors would name the wrong row

    @rx.event
    async def save_prices(self):
        """Replace the price table with the editor's rows; an error is shown under the cell it names."""
        self._clear_errors()
        try:
            saved = await self.call(billing.set_prices, parse_price_rows(self.prices))
        except Unauthenticated:
            return self.signed_out()
        except CraterError as exc:
            cell = price_cell(exc.field, self.prices)
            if cell is None:
                self.form_error = exc.message_in(self.lang)
            else:
                self.field_errors = {cell: exc.message_in(self.lang)}
            return None
        self.prices = price_rows(saved)
        return rx.toast.success(self.msg("billing.prices.saved"))
