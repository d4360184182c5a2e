"""Usage arithmetic: splitting run intervals at UTC day and month boundaries, clipping to the window, running jobs,
and the rollup per key and period (crater_app.domain.usage)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from crater_app.domain.errors import InvalidInput
from crater_app.domain.usage import (
    ANY_MODEL,
    NO_ACCELERATOR,
    JobRun,
    Window,
    model_key,
    periods,
    rollup,
    split,
    window_of,
)

GIB = 2**30


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


def run(job_id=1, user="alice", project="vision", model="A100", start=None, end=None, gpus=2, cpu_m=4000,
        memory_bytes=16 * GIB) -> JobRun:
    return JobRun(job_id=job_id, user=user, project=project, model=model, started_at=start, finished_at=end,
                  gpus=gpus, cpu_m=cpu_m, memory_bytes=memory_bytes)


def test_split_at_day_boundaries():
    pieces = list(split(utc(2026, 11, 1, 22), utc(2026, 11, 3, 1, 30), "day"))
    assert pieces == [("2026-11-01", 2 * 3600), ("2026-11-02", 24 * 3600), ("2026-11-03", 1.5 * 3600)]


def test_split_at_month_and_year_boundaries():
    pieces = list(split(utc(2026, 11, 30, 23), utc(2027, 1, 1, 2), "month"))
    assert pieces == [("2026-11", 3600), ("2026-12", 31 * 86400), ("2027-01", 2 * 3600)]
    days = list(split(utc(2026, 12, 31, 23), utc(2027, 1, 1, 1), "day"))
    assert days == [("2026-12-31", 3600), ("2027-01-01", 3600)]


def test_split_empty_and_within_one_day():
    assert list(split(utc(2026, 11, 1, 5), utc(2026, 11, 1, 5), "day")) == []
    assert list(split(utc(2026, 11, 1, 6), utc(2026, 11, 1, 5), "day")) == []
    assert list(split(utc(2026, 11, 1, 5), utc(2026, 11, 1, 5, 30), "day")) == [("2026-11-01", 1800)]


def test_split_normalises_other_offsets_to_utc():
    cet = timezone(timedelta(hours=1))
    # 00:30 CET on Nov 2 is 23:30 UTC on Nov 1
    pieces = list(split(datetime(2026, 11, 2, 0, 30, tzinfo=cet), datetime(2026, 11, 2, 2, 0, tzinfo=cet), "day"))
    assert pieces == [("2026-11-01", 1800), ("2026-11-02", 3600)]


def test_rollup_clips_to_the_window_and_multiplies_resources():
    window = Window(utc(2026, 11, 2), utc(2026, 11, 3), "day")
    report = rollup([run(start=utc(2026, 11, 1, 12), end=utc(2026, 11, 2, 6))], window, "user", now=utc(2026, 12, 1))
    assert len(report.rows) == 1
    row = report.rows[0]
    assert (row.key, row.period, row.jobs) == ("alice", "2026-11-02", 1)
    assert row.accelerator_hours == pytest.approx(2 * 6)
    assert row.cpu_core_hours == pytest.approx(4 * 6)
    assert row.memory_gib_hours == pytest.approx(16 * 6)
    assert report.totals.accelerator_hours == pytest.approx(12) and report.totals.jobs == 1


def test_rollup_leaves_out_jobs_outside_the_window():
    window = Window(utc(2026, 11, 2), utc(2026, 11, 3), "day")
    runs = [run(start=utc(2026, 11, 1), end=utc(2026, 11, 2)),  # ends exactly where the window starts
            run(job_id=2, start=utc(2026, 11, 3), end=utc(2026, 11, 4))]  # starts where it ends
    report = rollup(runs, window, "user", now=utc(2026, 12, 1))
    assert report.rows == [] and report.totals.jobs == 0


def test_running_job_counts_until_now():
    now = utc(2026, 11, 2, 3)
    window = Window(utc(2026, 11, 1), utc(2026, 11, 8), "day")
    report = rollup([run(start=utc(2026, 11, 1, 22), end=None, gpus=1)], window, "project", now=now)
    assert [(r.key, r.period, r.accelerator_hours) for r in report.rows] == [
        ("vision", "2026-11-01", pytest.approx(2)), ("vision", "2026-11-02", pytest.approx(3))]
    assert report.totals.accelerator_hours == pytest.approx(5)


def test_rollup_by_month_splits_at_the_first():
    window = Window(utc(2026, 10, 1), utc(2026, 12, 1), "month")
    report = rollup([run(start=utc(2026, 10, 31, 20), end=utc(2026, 11, 1, 4), gpus=1)], window, "model",
                    now=utc(2026, 12, 1))
    assert [(r.key, r.period, r.accelerator_hours) for r in report.rows] == [
        ("A100", "2026-10", pytest.approx(4)), ("A100", "2026-11", pytest.approx(4))]


def test_rollup_groups_keys_and_counts_jobs_per_cell():
    window = Window(utc(2026, 11, 1), utc(2026, 11, 3), "day")
    runs = [
        run(1, user="alice", start=utc(2026, 11, 1, 10), end=utc(2026, 11, 1, 11), gpus=1),
        run(2, user="alice", start=utc(2026, 11, 1, 12), end=utc(2026, 11, 2, 1), gpus=2),
        run(3, user="bob", start=utc(2026, 11, 2, 5), end=utc(2026, 11, 2, 7), gpus=4),
    ]
    report = rollup(runs, window, "user", now=utc(2026, 12, 1))
    cells = {(r.key, r.period): (r.accelerator_hours, r.jobs) for r in report.rows}
    assert cells == {("alice", "2026-11-01"): (pytest.approx(1 + 24), 2), ("alice", "2026-11-02"): (pytest.approx(2), 1),
                     ("bob", "2026-11-02"): (pytest.approx(8), 1)}
    assert [r.period for r in report.rows] == sorted(r.period for r in report.rows)
    assert report.totals.jobs == 3 and report.totals.accelerator_hours == pytest.approx(35)
    # per key over the window: alice's job 2 ran on both days but counts once
    assert [(k.key, k.period, k.accelerator_hours, k.jobs) for k in report.keys] == [
        ("alice", "total", pytest.approx(27), 2), ("bob", "total", pytest.approx(8), 1)]


def test_model_key():
    assert model_key(0, "A100") == NO_ACCELERATOR
    assert model_key(2, None) == ANY_MODEL
    assert model_key(1, "H100") == "H100"


def test_window_defaults_and_limits():
    now = utc(2026, 11, 30, 12)
    w = window_of(None, None, "day", now)
    assert (w.start, w.end) == (now - timedelta(days=30), now)
    with pytest.raises(InvalidInput) as exc:
        window_of(utc(2026, 11, 2), utc(2026, 11, 1), "day", now)
    assert exc.value.field == "to"
    with pytest.raises(InvalidInput) as exc:
        window_of(utc(2026, 11, 2), utc(2026, 11, 2), "day", now)
    assert exc.value.field == "to"
    with pytest.raises(InvalidInput) as exc:
        window_of(utc(2025, 1, 1), utc(2026, 1, 3), "day", now)
    assert exc.value.field == "from" and "366" in exc.value.message
    assert window_of(utc(2025, 1, 1), utc(2026, 1, 2), "month", now).granularity == "month"  # exactly 366 days
    with pytest.raises(InvalidInput) as exc:
        window_of(None, None, "week", now)
    assert exc.value.field == "granularity"


@pytest.mark.parametrize(("start", "end", "granularity", "latest"), [
    (None, utc(9999, 12, 31, 23, 59, 59), "day", "9999-12-31T00:00:00+00:00"),
    (utc(9999, 12, 30), utc(9999, 12, 31, 0, 0, 1), "day", "9999-12-31T00:00:00+00:00"),
    (utc(9999, 11, 1), utc(9999, 12, 31), "month", "9999-12-01T00:00:00+00:00"),
    (None, utc(9999, 12, 1, 0, 0, 1), "month", "9999-12-01T00:00:00+00:00"),
])
def test_windows_whose_last_period_ends_after_year_9999_are_refused(start, end, granularity, latest):
    with pytest.raises(InvalidInput) as exc:
        window_of(start, end, granularity, utc(2026, 11, 30))
    assert (exc.value.code, exc.value.field, exc.value.params["latest"]) == ("usage.window_out_of_range", "to", latest)
    assert "9999" in exc.value.message and "9999" in exc.value.message_in("zh-CN")


@pytest.mark.parametrize(("start", "end", "granularity", "first", "last"), [
    (utc(9999, 12, 1), utc(9999, 12, 31), "day", "9999-12-01", "9999-12-30"),
    (utc(9999, 1, 1), utc(9999, 12, 1), "month", "9999-01", "9999-11"),
    (None, utc(1, 1, 5), "day", "0001-01-01", "0001-01-04"),  # the default start is clamped to the year 1
    (utc(1, 1, 1), utc(1, 3, 1), "month", "0001-01", "0001-02"),
])
def test_windows_at_the_ends_of_the_calendar(start, end, granularity, first, last):
    window = window_of(start, end, granularity, utc(2026, 11, 30))
    labels = periods(window)[1]
    assert (labels[0], labels[-1]) == (first, last)
    assert rollup([run(start=window.start, end=window.end, gpus=1)], window, "user", now=utc(2026, 11, 30)).rows


def test_rollup_refuses_unknown_group_by():
    with pytest.raises(InvalidInput) as exc:
        rollup([], Window(utc(2026, 11, 1), utc(2026, 11, 2)), "team", now=utc(2026, 11, 2))
    assert exc.value.field == "group_by"


def test_usage_scope():
    from crater_app.domain.policy import Actor, usage_scope

    assert usage_scope(Actor(1, "admin", "admin")) == (True, [])
    assert usage_scope(Actor(2, "pat", "user", {3: "admin", 4: "member", 1: "admin"})) == (False, [1, 3])
    assert usage_scope(Actor(3, "vera", "user", {3: "viewer"})) == (False, [])
