"""Resource usage of jobs: accelerator-hours, CPU-core-hours and memory-GiB-hours, split into UTC days or months
and rolled up by a key (user, project, accelerator model). Pure; :mod:`crater_app.services.usage` reads the jobs.

A job's usage is its requested resources times its real run interval: from ``started_at`` to ``finished_at``
(a job runs once in Crater; a preempted or cancelled job stops at ``finished_at``), or to *now* while it still
runs. This is how Slurm's ``sreport``/``sacct`` count TRES-hours (allocated resources x elapsed time) and how
Kubeflow/Run:ai show GPU-hours: by allocation, not by measured utilisation.

Units: accelerator-hours = devices x hours; CPU-core-hours = cores (millicores / 1000) x hours;
memory-GiB-hours = GiB (bytes / 2**30) x hours. Times are timezone-aware UTC.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Iterable, Iterator

from crater_app.domain.errors import InvalidInput

GROUP_BYS = ("user", "project", "model")
GRANULARITIES = ("day", "month")
#: the longest window one usage query may cover, days (a year, leap years included)
MAX_WINDOW_DAYS = 366
#: the window when the caller gives no ``from``, days
DEFAULT_WINDOW_DAYS = 30
#: the ``model`` key of jobs that ask for no accelerator, and of those that accept any model
NO_ACCELERATOR = "(none)"
ANY_MODEL = "(any)"
GIB = 2**30


@dataclass(frozen=True)
class JobRun:
    """What usage needs of one job: ``job_id``, the rollup keys (``user``, ``project`` names, ``model``), the run
    interval ``started_at`` .. ``finished_at`` (``None``: still running) and the requested ``gpus`` (devices),
    ``cpu_m`` (millicores) and ``memory_bytes`` (bytes)."""

    job_id: int
    user: str
    project: str
    model: str
    started_at: datetime
    finished_at: datetime | None
    gpus: int
    cpu_m: int
    memory_bytes: int


@dataclass(frozen=True)
class Window:
    """A half-open UTC window ``[start, end)`` and the ``granularity`` (``day``/``month``) of its periods."""

    start: datetime
    end: datetime
    granularity: str = "day"


@dataclass
class UsageRow:
    """Usage of one ``key`` (user name, project name or accelerator model) in one ``period`` (``2026-11-30`` for a
    day, ``2026-11`` for a month): hours as described in the module docstring; ``jobs`` is how many jobs ran in it."""

    key: str
    period: str
    accelerator_hours: float = 0.0
    cpu_core_hours: float = 0.0
    memory_gib_hours: float = 0.0
    jobs: int = 0


@dataclass
class UsageReport:
    """Rows ordered by period then key; ``keys``: each key's totals over the window (``period`` ``"total"``), by
    key; ``totals`` over everything (``key``/``period`` ``"total"``). In ``keys`` and ``totals`` ``jobs`` counts
    each job once (a job running over several periods is in several rows)."""

    rows: list[UsageRow] = field(default_factory=list)
    keys: list[UsageRow] = field(default_factory=list)
    totals: UsageRow = field(default_factory=lambda: UsageRow(key="total", period="total"))


def model_key(gpus: int, accelerator_model: str | None) -> str:
    """The ``model`` rollup key of a job: its accelerator model, :data:`ANY_MODEL` when it accepts any, or
    :data:`NO_ACCELERATOR` when it asks for none."""
    if gpus <= 0:
        return NO_ACCELERATOR
    return accelerator_model or ANY_MODEL


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def period_start(at: datetime, granularity: str) -> datetime:
    """The UTC day (``day``) or month (``month``) that contains ``at``, as its first instant."""
    at = _utc(at)
    if granularity == "month":
        return datetime(at.year, at.month, 1, tzinfo=timezone.utc)
    return datetime(at.year, at.month, at.day, tzinfo=timezone.utc)


def next_period(start: datetime, granularity: str) -> datetime:
    """The first instant of the period after the one starting at ``start`` (a UTC day or calendar month)."""
    if granularity == "month":
        return datetime(start.year + (start.month == 12), start.month % 12 + 1, 1, tzinfo=timezone.utc)
    return start + timedelta(days=1)


def period_label(start: datetime, granularity: str) -> str:
    """``YYYY-MM-DD`` for a day, ``YYYY-MM`` for a month (four-digit years: ``0001-01``)."""
    if granularity == "month":
        return f"{start.year:04d}-{start.month:02d}"
    return f"{start.year:04d}-{start.month:02d}-{start.day:02d}"


#: the first instant Crater can represent (Python's ``datetime.min``, in UTC)
EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


def latest_end(granularity: str) -> datetime:
    """The latest ``to`` a window of ``granularity`` periods may have: the start of the last UTC day
    (``9999-12-31T00:00:00Z``) or month (``9999-12-01T00:00:00Z``) that Python's ``datetime`` can represent, since
    the period containing a later instant would end past the year 9999."""
    last = datetime.max.replace(tzinfo=timezone.utc)
    return period_start(last, granularity)


def split(start: datetime, end: datetime, granularity: str) -> Iterator[tuple[str, float]]:
    """The interval ``[start, end)`` cut at UTC day (``day``) or calendar month (``month``) boundaries:
    ``(period label, seconds in that period)`` in time order; nothing when ``end <= start``."""
    start, end = _utc(start), _utc(end)
    if end <= start:
        return
    cursor = period_start(start, granularity)
    while cursor < end:
        following = next_period(cursor, granularity)
        seconds = (min(end, following) - max(start, cursor)).total_seconds()
        if seconds > 0:
            yield period_label(cursor, granularity), seconds
        cursor = following


Span = tuple  # (key, start epoch s, end epoch s or None while running, gpus, cpu_m, memory_bytes)


def periods(window: Window) -> tuple[list[float], list[str]]:
    """The periods of ``window``: their start instants as POSIX seconds plus one sentinel (the end of the last),
    and their labels (``YYYY-MM-DD`` or ``YYYY-MM``)."""
    starts, labels = [], []
    cursor = period_start(window.start, window.granularity)
    while cursor < window.end:
        starts.append(cursor.timestamp())
        labels.append(period_label(cursor, window.granularity))
        cursor = next_period(cursor, window.granularity)
    starts.append(cursor.timestamp())
    return starts, labels


def aggregate(spans: Iterable[Span], window: Window, now: datetime) -> UsageReport:
    """Usage of ``spans`` inside ``window`` per key and period (the arithmetic of :func:`rollup`, on plain tuples).

    Args:
        spans: ``(key, start, end, gpus, cpu_m, memory_bytes)`` with ``start``/``end`` as POSIX seconds (UTC) and
            ``end`` ``None`` for a job still running (it runs until ``now``); ``key`` any hashable (names, ids).
        window: the half-open window and its granularity (checked by the caller).

    Returns:
        Rows ordered by period, then key (keys must be mutually comparable), and the totals.
    """
    bounds, labels = periods(window)
    first, last, now_s = window.start.timestamp(), window.end.timestamp(), _utc(now).timestamp()
    count = len(labels)
    cells: dict[tuple, list] = {}
    per_key: dict = {}
    for key, start, end, gpus, cpu_m, memory_bytes in spans:
        if end is None:
            end = now_s
        if start < first:
            start = first
        if end > last:
            end = last
        if end <= start:
            continue
        cores, gib = cpu_m / 1000.0, memory_bytes / GIB
        i = bisect_right(bounds, start) - 1
        while i < count and bounds[i] < end:
            lo, hi = bounds[i], bounds[i + 1]
            hours = ((hi if hi < end else end) - (lo if lo > start else start)) / 3600.0
            if hours > 0:
                cell = cells.get((i, key))
                if cell is None:
                    cell = cells[(i, key)] = [0.0, 0.0, 0.0, 0]
                cell[0] += gpus * hours
                cell[1] += cores * hours
                cell[2] += gib * hours
                cell[3] += 1
            i += 1
        hours = (end - start) / 3600.0
        total = per_key.get(key)
        if total is None:
            total = per_key[key] = [0.0, 0.0, 0.0, 0]
        total[0] += gpus * hours
        total[1] += cores * hours
        total[2] += gib * hours
        total[3] += 1
    rows = [UsageRow(key=k, period=labels[i], accelerator_hours=c[0], cpu_core_hours=c[1], memory_gib_hours=c[2],
                     jobs=c[3]) for (i, k), c in sorted(cells.items(), key=lambda item: item[0])]
    keys = [UsageRow(key=k, period="total", accelerator_hours=t[0], cpu_core_hours=t[1], memory_gib_hours=t[2],
                     jobs=t[3]) for k, t in sorted(per_key.items(), key=lambda item: item[0])]
    totals = UsageRow(key="total", period="total", accelerator_hours=sum(t[0] for t in per_key.values()),
                      cpu_core_hours=sum(t[1] for t in per_key.values()),
                      memory_gib_hours=sum(t[2] for t in per_key.values()), jobs=sum(t[3] for t in per_key.values()))
    return UsageReport(rows=rows, keys=keys, totals=totals)


def rollup(runs: Iterable[JobRun], window: Window, group_by: str, now: datetime) -> UsageReport:
    """Usage of ``runs`` inside ``window``, per ``group_by`` key (``user``/``project``/``model``) and period.

    Each run is clipped to the window (and to ``now`` while it runs), cut at period boundaries (UTC days or
    calendar months), and its requested resources multiplied by the hours of each piece; ``jobs`` of a row counts
    the runs with time in it. Rows with no time in the window are left out.

    Raises:
        InvalidInput: ``group_by`` or ``window.granularity`` unknown (field named).
    """
    check_choice(group_by, GROUP_BYS, "group_by")
    check_choice(window.granularity, GRANULARITIES, "granularity")
    spans = ((getattr(r, group_by), _utc(r.started_at).timestamp(),
              None if r.finished_at is None else _utc(r.finished_at).timestamp(), r.gpus, r.cpu_m, r.memory_bytes)
             for r in runs)
    return aggregate(spans, window, now)


def check_choice(value: object, choices: tuple[str, ...], field_name: str) -> str:
    """``value`` when it is one of ``choices``. Raises :class:`InvalidInput` ``usage.choice`` naming ``field_name``
    (arguments ``field_name`` and ``choices``) otherwise."""
    if not isinstance(value, str) or value not in choices:
        raise InvalidInput("usage.choice", field_name, field_name=field_name, choices=list(choices))
    return value


def window_of(start: datetime | None, end: datetime | None, granularity: str, now: datetime) -> Window:
    """The query window: ``end`` defaults to ``now``, ``start`` to :data:`DEFAULT_WINDOW_DAYS` before ``end`` (or
    :data:`EARLIEST` when that is before the year 1).

    Raises:
        InvalidInput: ``usage.window_order`` (``to`` not after ``from``; field ``to``, ``start``/``end`` ISO UTC);
        ``usage.window_too_long`` (longer than :data:`MAX_WINDOW_DAYS` days; field ``from``, ``days``, ``max``);
        ``usage.window_out_of_range`` (``to`` after :func:`latest_end`, so that the last period would end past the
        year 9999; field ``to``, ``end`` and ``latest`` ISO UTC, ``granularity``); ``usage.choice`` (``granularity``
        unknown).
    """
    check_choice(granularity, GRANULARITIES, "granularity")
    end = _utc(end) if end is not None else _utc(now)
    if start is not None:
        start = _utc(start)
    else:
        start = end - timedelta(days=DEFAULT_WINDOW_DAYS) if end - EARLIEST > timedelta(days=DEFAULT_WINDOW_DAYS) \
            else EARLIEST
    latest = latest_end(granularity)
    if end > latest:
        raise InvalidInput("usage.window_out_of_range", "to", end=end.isoformat(), latest=latest.isoformat(),
                           granularity=granularity)
    if end <= start:
        raise InvalidInput("usage.window_order", "to", start=start.isoformat(), end=end.isoformat())
    if end - start > timedelta(days=MAX_WINDOW_DAYS):
        days = round((end - start).total_seconds() / 86400, 1)
        raise InvalidInput("usage.window_too_long", "from", days=days, max=MAX_WINDOW_DAYS)
    return Window(start=start, end=end, granularity=granularity)
