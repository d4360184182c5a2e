"""Pure helpers of the console's usage page: the stacked chart's series, the totals table, the balance table and
the price editor's rows (crater_app.state.usage)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from crater_app.schemas import BalancePublic, BillingPricePublic, ProjectBalancePublic, UsagePublic, UsageRowPublic
from crater_app.state.usage import (
    MAX_SERIES,
    balance_rows,
    chart_series,
    fmt_hours,
    fmt_points,
    parse_price_rows,
    price_rows,
    total_rows,
)

T = datetime(2026, 11, 1, tzinfo=timezone.utc)


def row(key, period, acc, jobs=1, cpu=0.0, mem=0.0):
    return UsageRowPublic(key=key, period=period, accelerator_hours=acc, cpu_core_hours=cpu, memory_gib_hours=mem,
                          jobs=jobs)


def report(rows, keys):
    total = row("total", "total", sum(k.accelerator_hours for k in keys), sum(k.jobs for k in keys))
    return UsagePublic(group_by="project", granularity="day", start=T, end=T, rows=rows, keys=keys, totals=total)


def test_chart_series_stacks_keys_per_period():
    r = report([row("nlp", "2026-11-01", 2), row("vision", "2026-11-01", 5), row("nlp", "2026-11-03", 1),
                row("cpu-only", "2026-11-02", 0)],
               [row("nlp", "total", 3), row("vision", "total", 5), row("cpu-only", "total", 0)])
    periods, series = chart_series(r, "others")
    assert periods == ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert series == [{"name": "vision", "y": [5, 0, 0]}, {"name": "nlp", "y": [2, 0, 1]}]


def test_chart_series_sums_small_keys_as_others():
    keys = [row(f"u{i:02d}", "total", 100 - i) for i in range(MAX_SERIES + 3)]
    rows = [row(k.key, "2026-11-01", k.accelerator_hours) for k in keys]
    _, series = chart_series(report(rows, keys), "others")
    assert len(series) == MAX_SERIES + 1
    assert series[-1] == {"name": "others", "y": [sum(100 - i for i in range(MAX_SERIES, MAX_SERIES + 3))]}


def test_total_rows_most_hours_first():
    r = report([], [row("a", "total", 1.25, 2, cpu=1000.0, mem=3.0), row("b", "total", 7.0, 1)])
    assert total_rows(r) == [
        {"key": "b", "accelerator_hours": "7.0", "cpu_core_hours": "0.0", "memory_gib_hours": "0.0", "jobs": "1"},
        {"key": "a", "accelerator_hours": "1.2", "cpu_core_hours": "1,000.0", "memory_gib_hours": "3.0", "jobs": "2"},
    ]


def test_balance_and_price_rows():
    bal = BalancePublic(username="alice", billing_enabled=True, period="2026-11", extra_points=-2.5,
                        projects=[ProjectBalancePublic(project="vision", allowance_points=100, used_points=12.345,
                                                       left_points=87.655)])
    assert balance_rows(bal) == [{"project": "vision", "allowance": "100", "used": "12.35", "left": "87.66"}]
    assert fmt_points(-2.5) == "-2.5" and fmt_points(1000) == "1,000"
    prices = [BillingPricePublic(resource="nvidia.com/gpu", model="H100", points_per_hour=12.5, updated_at=T)]
    assert price_rows(prices) == [{"resource": "nvidia.com/gpu", "model": "H100", "points_per_hour": "12.5"}]


def test_parse_price_rows_drops_blank_rows_and_keeps_bad_numbers_for_the_service():
    rows = [{"resource": " cpu ", "model": "", "points_per_hour": "0.5"},
            {"resource": "", "model": "", "points_per_hour": ""},
            {"resource": "memory", "model": "", "points_per_hour": "a lot"},
            {"resource": "memory", "model": "", "points_per_hour": "inf"}]
    assert parse_price_rows(rows) == [{"resource": "cpu", "model": "", "points_per_hour": 0.5},
                                      {"resource": "memory", "model": "", "points_per_hour": "a lot"},
                                      {"resource": "memory", "model": "", "points_per_hour": "inf"}]


@pytest.mark.parametrize(("hours", "shown"), [
    (0.0, "0.0"), (0.035, "0.035"), (0.0351, "0.035"), (0.0012, "0.0012"), (0.5, "0.5"), (0.96, "0.96"),
    (0.995, "1.0"), (1.0, "1.0"), (7.04, "7.0"), (1234.56, "1,234.6"),
])
def test_small_totals_keep_two_significant_digits(hours, shown):
    """A 2-minute job on one GPU (0.035 accelerator-hours) read 0.0 in the totals while the chart showed 0.035."""
    assert fmt_hours(hours) == shown


def test_the_chart_keeps_small_amounts_too():
    r = report([row("vision", "2026-11-01", 0.00042)], [row("vision", "total", 0.00042)])
    assert chart_series(r, "others")[1] == [{"name": "vision", "y": [0.00042]}]
