"""services.usage: rollups per user, project and accelerator model over real job rows, and who sees what (platform
admins everything, project admins their projects, members their own), on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import pytest

from crater_app.db.models import Project
from crater_app.domain.errors import InvalidInput
from crater_app.domain.policy import Actor
from crater_app.services import identity, projects, sign_in, usage, users
from sqlmodel import select
from tests.conftest import USER_PASSWORD, World
from tests.helpers import ran_job

pytestmark = pytest.mark.both_databases  # usage rollups use dialect-specific SQL (epoch seconds)

NOW = datetime(2026, 11, 20, 12, tzinfo=timezone.utc)
GIB = 2**30


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


@dataclass
class Lab:
    world: World
    pat: Actor  # admin of project nlp
    alice: Actor  # member of vision
    bob: Actor  # member of vision and nlp


@pytest.fixture
def lab(world) -> Lab:
    ctx, admin = world.ctx, world.admin
    users.create_user(ctx, admin, "pat", USER_PASSWORD)
    projects.create_project(ctx, admin, "vision")
    projects.create_project(ctx, admin, "nlp")
    for project, name, role in (("vision", "alice", "member"), ("vision", "bob", "member"), ("nlp", "bob", "member"),
                                ("nlp", "pat", "admin")):
        projects.set_member(ctx, admin, project, name, role)
    with ctx.session() as s:
        ids = {p.name: p.id for p in s.exec(select(Project))}
    actors = {n: identity.authenticate(ctx, sign_in.login(ctx, n, USER_PASSWORD).access_token) for n in ("pat", "alice", "bob")}
    a, b, p = actors["alice"], actors["bob"], actors["pat"]
    # alice: 2 A100 x 10 h in vision on Nov 10 (CPU 4 cores, 16 GiB)
    ran_job(ctx, a.user_id, ids["vision"], utc(2026, 11, 10, 8), utc(2026, 11, 10, 18), gpus=2, cpu_m=4000,
            memory_bytes=16 * GIB, model="A100")
    # bob: 1 H100 across midnight in nlp (Nov 11 22:00 .. Nov 12 04:00), and a CPU job in vision (3 h)
    ran_job(ctx, b.user_id, ids["nlp"], utc(2026, 11, 11, 22), utc(2026, 11, 12, 4), gpus=1, cpu_m=2000,
            memory_bytes=8 * GIB, model="H100")
    ran_job(ctx, b.user_id, ids["vision"], utc(2026, 11, 13, 0), utc(2026, 11, 13, 3), gpus=0, cpu_m=1000,
            memory_bytes=GIB)
    # pat: 4 accelerators of any model in nlp, still running since Nov 20 06:00 (6 h before NOW)
    ran_job(ctx, p.user_id, ids["nlp"], utc(2026, 11, 20, 6), None, gpus=4, cpu_m=8000, memory_bytes=32 * GIB)
    # queued (never started) and long finished jobs count nowhere in the window
    ran_job(ctx, a.user_id, ids["vision"], None, None, gpus=8, phase="Queued")
    ran_job(ctx, a.user_id, ids["vision"], utc(2026, 9, 1), utc(2026, 9, 2), gpus=8)
    return Lab(world, p, a, b)


def cells(report) -> dict[tuple[str, str], float]:
    return {(r.key, r.period): pytest.approx(r.accelerator_hours) for r in report.rows}


def test_admin_rolls_up_per_project_and_day(lab):
    report = usage.usage(lab.world.ctx, lab.world.admin, "project", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z",
                         "day", now=NOW)
    assert cells(report) == {("vision", "2026-11-10"): 20, ("nlp", "2026-11-11"): 2, ("nlp", "2026-11-12"): 4,
                             ("vision", "2026-11-13"): 0, ("nlp", "2026-11-20"): 24}
    assert report.totals.accelerator_hours == pytest.approx(50)
    assert report.totals.cpu_core_hours == pytest.approx(4 * 10 + 2 * 6 + 1 * 3 + 8 * 6)
    assert report.totals.memory_gib_hours == pytest.approx(16 * 10 + 8 * 6 + 1 * 3 + 32 * 6)
    assert report.totals.jobs == 4
    assert (report.start, report.end, report.group_by, report.granularity) == (
        utc(2026, 11, 1), utc(2026, 12, 1), "project", "day")


def test_rollup_per_user_and_month(lab):
    report = usage.usage(lab.world.ctx, lab.world.admin, "user", "2026-09-01T00:00:00Z", "2026-12-01T00:00:00Z",
                         "month", now=NOW)
    assert cells(report) == {("alice", "2026-09"): 8 * 24, ("alice", "2026-11"): 20, ("bob", "2026-11"): 6,
                             ("pat", "2026-11"): 24}
    bob = next(r for r in report.rows if r.key == "bob")
    assert bob.jobs == 2 and bob.cpu_core_hours == pytest.approx(2 * 6 + 3)


def test_rollup_per_model(lab):
    report = usage.usage(lab.world.ctx, lab.world.admin, "model", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z",
                         "month", now=NOW)
    assert cells(report) == {("A100", "2026-11"): 20, ("H100", "2026-11"): 6, ("(any)", "2026-11"): 24,
                             ("(none)", "2026-11"): 0}


def test_members_see_their_own_usage_only(lab):
    report = usage.usage(lab.world.ctx, lab.alice, "user", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", now=NOW)
    assert {r.key for r in report.rows} == {"alice"}
    assert report.totals.accelerator_hours == pytest.approx(20)
    bob = usage.usage(lab.world.ctx, lab.bob, "project", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", now=NOW)
    assert report.totals.jobs == 1 and bob.totals.jobs == 2
    assert {r.key for r in bob.rows} == {"vision", "nlp"}
    guest = usage.usage(lab.world.ctx, lab.world.guest, "user", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", now=NOW)
    assert guest.rows == [] and guest.totals.jobs == 0


def test_project_admins_see_their_projects(lab):
    report = usage.usage(lab.world.ctx, lab.pat, "user", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", now=NOW)
    # nlp's jobs (bob's H100 job, pat's running job), not bob's vision job nor alice's
    assert {(r.key, r.period) for r in report.rows} == {("bob", "2026-11-11"), ("bob", "2026-11-12"),
                                                        ("pat", "2026-11-20")}
    assert report.totals.accelerator_hours == pytest.approx(30)


def test_running_job_counts_until_now_and_window_clips(lab):
    ctx, admin = lab.world.ctx, lab.world.admin
    report = usage.usage(ctx, admin, "user", "2026-11-20T09:00:00Z", "2026-11-21T00:00:00Z", now=NOW)
    assert cells(report) == {("pat", "2026-11-20"): 4 * 3}
    later = usage.usage(ctx, admin, "user", "2026-11-20T09:00:00Z", "2026-11-21T00:00:00Z",
                        now=utc(2026, 11, 20, 15))
    assert cells(later) == {("pat", "2026-11-20"): 4 * 6}
    # +01:00 offsets are read as UTC instants
    shifted = usage.usage(ctx, admin, "user", "2026-11-12T02:00:00+01:00", "2026-11-12T04:00:00+01:00", now=NOW)
    assert cells(shifted) == {("bob", "2026-11-12"): 2}


def test_default_window_is_the_last_30_days(lab):
    report = usage.usage(lab.world.ctx, lab.world.admin, now=utc(2026, 12, 11, 0))
    # from Nov 11 00:00: alice's Nov 10 job is out; bob's and pat's (running until now) are in
    assert report.start == utc(2026, 11, 11) and report.end == utc(2026, 12, 11)
    assert {r.key for r in report.rows} == {"nlp", "vision"}
    assert report.totals.accelerator_hours == pytest.approx(6 + 4 * (24 * 21 - 6))


@pytest.mark.parametrize("kwargs, field", [
    ({"group_by": "team"}, "group_by"),
    ({"granularity": "week"}, "granularity"),
    ({"since": "yesterday"}, "from"),
    ({"until": "2026-11-01T00:00:00"}, "to"),
    ({"since": "2026-11-02T00:00:00Z", "until": "2026-11-01T00:00:00Z"}, "to"),
    ({"since": "2024-01-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "from"),
    ({"until": "9999-12-31T23:59:59Z"}, "to"),  # the day it ends in would end in the year 10000
    ({"since": "9999-11-01T00:00:00Z", "until": "9999-12-15T00:00:00Z", "granularity": "month"}, "to"),
])
def test_bad_input_names_the_field(lab, kwargs, field):
    with pytest.raises(InvalidInput) as exc:
        usage.usage(lab.world.ctx, lab.world.admin, **kwargs)
    assert exc.value.field == field


def test_windows_at_the_ends_of_the_calendar(lab):
    """The last representable periods and the first ones read like any other (no overflow, four-digit years)."""
    ctx, admin = lab.world.ctx, lab.world.admin
    late = usage.usage(ctx, admin, since="9999-12-01T00:00:00Z", until="9999-12-31T00:00:00Z", now=NOW)
    assert late.totals.jobs == 0 and late.end == utc(9999, 12, 31)
    monthly = usage.usage(ctx, admin, since="9999-01-01T00:00:00Z", until="9999-12-01T00:00:00Z",
                          granularity="month", now=NOW)
    assert monthly.end == utc(9999, 12, 1)
    early = usage.usage(ctx, admin, until="0001-01-05T00:00:00Z", now=NOW)  # 30 days before: clamped to year 1
    assert early.start == utc(1, 1, 1)


def test_default_group_by_follows_the_role(lab):
    ctx = lab.world.ctx
    assert usage.usage(ctx, lab.world.admin, now=NOW).group_by == "project"
    assert usage.usage(ctx, lab.pat, now=NOW).group_by == "user"
    assert usage.usage(ctx, lab.alice, now=NOW).group_by == "project"
