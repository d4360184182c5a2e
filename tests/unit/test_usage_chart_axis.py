"""The usage chart's x axis: period labels as categories (YYYY-MM-DD / YYYY-MM), never a time of day or an
English month name; every period of the window has its place (crater_app.state.usage)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from crater_app.schemas import UsagePublic, UsageRowPublic
from crater_app.state.usage import chart_series, usage_figure, window_periods


def row(key, period, acc):
    return UsageRowPublic(key=key, period=period, accelerator_hours=acc, cpu_core_hours=0.0, memory_gib_hours=0.0,
                          jobs=1)


def report(granularity, start, end, rows):
    total = row("total", "total", sum(r.accelerator_hours for r in rows))
    keys = [row(k, "total", sum(r.accelerator_hours for r in rows if r.key == k)) for k in {r.key for r in rows}]
    return UsagePublic(group_by="project", granularity=granularity, start=start, end=end, rows=rows, keys=keys,
                       totals=total)


def utc(*args):
    return datetime(*args, tzinfo=timezone.utc)


def test_daily_chart_has_category_axis_of_dates_without_time_of_day():
    r = report("day", utc(2026, 11, 28, 14, 30), utc(2026, 12, 1, 9, 0),
               [row("nlp", "2026-11-28", 2), row("nlp", "2026-11-30", 1)])
    periods, series = chart_series(r, "others")
    assert periods == ["2026-11-28", "2026-11-29", "2026-11-30", "2026-12-01"]  # the empty day keeps its place
    assert series == [{"name": "nlp", "y": [2, 0, 1, 0]}]
    fig = usage_figure(periods, series, "accelerator-hours")
    assert fig.layout.xaxis.type == "category"
    assert list(fig.layout.xaxis.categoryarray) == periods
    assert list(fig.data[0].x) == periods
    text = json.dumps(fig.to_plotly_json(), default=str)
    for english in ("00:00", "Nov", "Dec"):
        assert english not in text


def test_monthly_chart_labels_are_year_and_month():
    r = report("month", utc(2025, 12, 5, 8), utc(2026, 3, 2), [row("cv", "2026-02", 4)])
    periods, series = chart_series(r, "others")
    assert periods == ["2025-12", "2026-01", "2026-02", "2026-03"]
    fig = usage_figure(periods, series, "h")
    assert fig.layout.xaxis.type == "category" and list(fig.data[0].x) == periods


def test_window_periods_edges():
    # an end exactly at midnight / the first of a month is exclusive
    assert window_periods(report("day", utc(2026, 11, 1), utc(2026, 11, 3), [])) == ["2026-11-01", "2026-11-02"]
    assert window_periods(report("month", utc(2026, 1, 1), utc(2026, 3, 1), [])) == ["2026-01", "2026-02"]
    assert len(window_periods(report("day", utc(2000, 1, 1), utc(2026, 1, 1), []))) == 400
