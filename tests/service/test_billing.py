"""services.billing: prices, grants, allowances, charging running jobs, settling finished ones (idempotent),
allowance before extra, the monthly rollover, and refusing submissions when both balances are used up, on SQLite
and PostgreSQL."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest
from sqlmodel import select

from crater_app.db.models import Job, OperationLog, PointLedger, Project, User
from crater_app.domain.errors import Forbidden, InvalidInput, NotFound, PaymentRequired
from crater_app.domain.policy import Actor
from crater_app.services import billing, identity, jobs, oplog, projects, sign_in, users
from crater_app.services.reconcile import LeaderLoop
from tests.conftest import USER_PASSWORD, World
from tests.helpers import counts, ran_job

pytestmark = pytest.mark.both_databases  # float balances, charge windows and row locks

GIB = 2**30
A100 = "NVIDIA-A100-SXM4-80GB"


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


@dataclass
class Shop:
    world: World
    alice: Actor  # member of vision
    pat: Actor  # admin of vision
    vision: int

    @property
    def ctx(self):
        return self.world.ctx


@pytest.fixture
def shop(world) -> Shop:
    ctx, admin = world.ctx, world.admin
    users.create_user(ctx, admin, "pat", USER_PASSWORD)
    projects.create_project(ctx, admin, "vision")
    projects.set_member(ctx, admin, "vision", "alice", "member")
    projects.set_member(ctx, admin, "vision", "pat", "admin")
    with ctx.session() as s:
        vision = s.exec(select(Project).where(Project.name == "vision")).one().id
    alice = identity.authenticate(ctx, sign_in.login(ctx, "alice", USER_PASSWORD).access_token)
    pat = identity.authenticate(ctx, sign_in.login(ctx, "pat", USER_PASSWORD).access_token)
    # one GPU: 10 points/h generic, 20 points/h for an A100; CPU and memory are free
    billing.set_prices(ctx, admin, [{"resource": "nvidia.com/gpu", "points_per_hour": 10},
                                    {"resource": "nvidia.com/gpu", "model": A100, "points_per_hour": 20}])
    ctx.settings.billing_enabled = True
    return Shop(world, alice, pat, vision)


def ledger(ctx, user_id: int) -> list[PointLedger]:
    with ctx.session() as s:
        return list(s.exec(select(PointLedger).where(PointLedger.user_id == user_id).order_by(PointLedger.id)))


def extra_of(ctx, user_id: int) -> float:
    with ctx.session() as s:
        return s.get(User, user_id).extra_points


def job(ctx, job_id: int) -> Job:
    with ctx.session() as s:
        return s.get(Job, job_id)


def finish(ctx, job_id: int, at: datetime, phase: str = "Succeeded") -> None:
    with ctx.session() as s:
        row = s.get(Job, job_id)
        row.phase, row.finished_at = phase, at
        s.add(row)


def test_running_job_is_charged_up_to_now_then_settled_once(shop):
    ctx = shop.ctx
    billing.set_project_billing(ctx, shop.world.admin, "vision", 1000)
    t0 = utc(2026, 11, 10, 8)
    job_id = ran_job(ctx, shop.alice.user_id, shop.vision, t0, None, gpus=2, model=A100)
    assert billing.charge_running(ctx, t0 + timedelta(hours=1)) == 1
    row = job(ctx, job_id)
    assert row.charged_points == pytest.approx(40) and row.charged_until == t0 + timedelta(hours=1)
    assert billing.charge_running(ctx, t0 + timedelta(hours=1)) == 0  # same instant: nothing more
    billing.charge_running(ctx, t0 + timedelta(hours=2, minutes=30))
    assert job(ctx, job_id).charged_points == pytest.approx(100)
    # the job ends at 3 h; the next charge (later) settles up to the end, not to "now"
    finish(ctx, job_id, t0 + timedelta(hours=3))
    assert billing.charge_running(ctx, t0 + timedelta(hours=5)) == 1
    row = job(ctx, job_id)
    assert row.charged_points == pytest.approx(120) and row.charged_until == t0 + timedelta(hours=3)
    assert billing.charge_running(ctx, t0 + timedelta(hours=6)) == 0
    assert billing.charge_running(ctx, t0 + timedelta(hours=6)) == 0
    rows = ledger(ctx, shop.alice.user_id)
    assert sum(r.points for r in rows) == pytest.approx(-120)
    assert {(r.source, r.period, r.project_id, r.job_id) for r in rows} == {("allowance", "2026-11", shop.vision, job_id)}


def test_short_job_between_two_charges_is_settled(clock, shop):
    ctx = shop.ctx
    billing.set_project_billing(ctx, shop.world.admin, "vision", 1000)
    now = clock.now
    job_id = ran_job(ctx, shop.alice.user_id, shop.vision, now - timedelta(minutes=30), now - timedelta(minutes=15),
                     gpus=1, phase="Failed")
    assert billing.charge_running(ctx, now) == 1
    assert job(ctx, job_id).charged_points == pytest.approx(10 * 0.25)
    assert billing.charge_running(ctx, now) == 0
    # finished long ago (before billing was watching): not charged after the fact
    old = ran_job(ctx, shop.alice.user_id, shop.vision, now - timedelta(days=3), now - timedelta(days=2), gpus=1)
    billing.charge_running(ctx, now)
    assert job(ctx, old).charged_points == 0


def test_allowance_is_used_first_then_extra(shop):
    ctx, admin = shop.ctx, shop.world.admin
    billing.set_project_billing(ctx, admin, "vision", 15)
    billing.grant_points(ctx, admin, "alice", 50, "course credit")
    t0 = utc(2026, 11, 10, 8)
    ran_job(ctx, shop.alice.user_id, shop.vision, t0, t0 + timedelta(hours=3), gpus=1)  # 30 points, generic price
    billing.charge_running(ctx, t0 + timedelta(hours=4))
    charges = [(r.source, r.points) for r in ledger(ctx, shop.alice.user_id) if r.points < 0]
    assert charges == [("allowance", pytest.approx(-15)), ("extra", pytest.approx(-15))]
    assert extra_of(ctx, shop.alice.user_id) == pytest.approx(35)
    bal = billing.balance(ctx, shop.alice, "vision", now=t0)
    assert (bal.extra_points, bal.projects[0].used_points, bal.projects[0].left_points) == (35, 15, 0)


def test_extra_balance_may_go_negative_while_a_job_runs(shop):
    ctx = shop.ctx
    t0 = utc(2026, 11, 10, 8)
    ran_job(ctx, shop.alice.user_id, shop.vision, t0, None, gpus=1)
    billing.charge_running(ctx, t0 + timedelta(hours=2))
    assert extra_of(ctx, shop.alice.user_id) == pytest.approx(-20)


def test_month_rollover_charges_each_month_s_allowance(shop):
    ctx = shop.ctx
    billing.set_project_billing(ctx, shop.world.admin, "vision", 10)
    start = utc(2026, 11, 30, 22)
    job_id = ran_job(ctx, shop.alice.user_id, shop.vision, start, None, gpus=1)
    billing.charge_running(ctx, utc(2026, 11, 30, 23))  # 10 points: November's allowance is used up
    billing.charge_running(ctx, utc(2026, 12, 1, 1))  # 1 h of November (extra), 1 h of December (allowance)
    rows = [(r.source, r.period, round(r.points, 6)) for r in ledger(ctx, shop.alice.user_id)]
    assert rows == [("allowance", "2026-11", -10), ("extra", "2026-11", -10), ("allowance", "2026-12", -10)]
    assert job(ctx, job_id).charged_points == pytest.approx(30)
    dec = billing.balance(ctx, shop.alice, "vision", now=utc(2026, 12, 1, 2))
    assert dec.period == "2026-12" and dec.projects[0].used_points == pytest.approx(10)
    nov = billing.balance(ctx, shop.alice, "vision", now=utc(2026, 11, 30, 23, 30))
    assert nov.period == "2026-11" and nov.projects[0].left_points == 0


def test_submission_refused_when_both_balances_are_used_up(clock, shop):
    """The 10 hours lie in the current month (the pinned clock is mid-month): on the first day of a month they would
    straddle its start, and the new month's allowance would cover the next job."""
    ctx, admin = shop.ctx, shop.world.admin
    billing.set_project_billing(ctx, admin, "vision", 100)
    t0 = clock.now - timedelta(hours=10)
    ran_job(ctx, shop.alice.user_id, shop.vision, t0, t0 + timedelta(hours=10), gpus=1)  # 100 points
    billing.charge_running(ctx, clock.now)
    before = counts(ctx)
    with pytest.raises(PaymentRequired) as exc:
        jobs.submit_job(ctx, shop.alice, {"name": "train", "project": "vision", "command": ["true"]})
    assert exc.value.message.startswith("billing: your free allowance in project vision (100 points this month) and "
                                        "your extra balance (0 points) are used up")
    assert exc.value.field == "project" and exc.value.http_status == 402
    assert counts(ctx) == before
    # pat (another member) still has the allowance; an extra grant lets alice submit again
    assert jobs.submit_job(ctx, shop.pat, {"name": "train", "project": "vision", "command": ["true"]}).id
    billing.grant_points(ctx, admin, "alice", 5)
    assert jobs.submit_job(ctx, shop.alice, {"name": "train", "project": "vision", "command": ["true"]}).id


def test_billing_off_charges_and_refuses_nothing(clock, shop):
    ctx = shop.ctx
    ctx.settings.billing_enabled = False
    t0 = clock.now - timedelta(hours=2)
    job_id = ran_job(ctx, shop.alice.user_id, shop.vision, t0, None, gpus=1)
    assert billing.charge_running(ctx, clock.now) == 0
    assert billing.charge_if_due(ctx) == 0
    assert ledger(ctx, shop.alice.user_id) == [] and job(ctx, job_id).charged_points == 0
    # no allowance, no extra balance: still allowed
    assert jobs.submit_job(ctx, shop.alice, {"name": "train", "project": "vision", "command": ["true"]}).id
    assert billing.balance(ctx, shop.alice).billing_enabled is False


def test_leader_loop_charges_at_most_every_interval(clock, shop):
    ctx = shop.ctx
    ctx.settings.billing_charge_interval_s = 3600
    job_id = ran_job(ctx, shop.alice.user_id, shop.vision, clock.now - timedelta(hours=1), None, gpus=1)
    loop = LeaderLoop(ctx)
    loop.step()
    first = job(ctx, job_id)
    assert first.charged_points == pytest.approx(10) and first.charged_until == clock.now
    clock.advance(minutes=30)
    loop.step()  # within the interval: no second charge
    assert job(ctx, job_id).charged_until == first.charged_until


def test_grants_prices_and_allowance_are_admin_only_and_logged(shop):
    ctx, admin = shop.ctx, shop.world.admin
    for who in (shop.alice, shop.pat, shop.world.guest):
        with pytest.raises(Forbidden):
            billing.grant_points(ctx, who, "alice", 5)
        with pytest.raises(Forbidden):
            billing.set_prices(ctx, who, [])
    with pytest.raises(Forbidden):
        billing.set_project_billing(ctx, shop.pat, "vision", 5)
    with pytest.raises(NotFound):
        billing.set_project_billing(ctx, shop.world.bob, "vision", 5)  # not a member: the project is hidden
    with pytest.raises(NotFound):
        billing.grant_points(ctx, admin, "nobody", 5)
    granted = billing.grant_points(ctx, admin, "alice", 40, "course")
    taken = billing.grant_points(ctx, admin, "alice", -15, "correction")
    assert (granted.extra_points, taken.extra_points) == (40, 25)
    assert [(r.source, r.points, r.note) for r in ledger(ctx, shop.alice.user_id)] == [
        ("extra", 40, "course"), ("extra", -15, "correction")]
    assert billing.set_project_billing(ctx, admin, "vision", 250).member_allowance_points == 250
    with ctx.session() as s:
        logs = [(r.action, r.target, r.code, r.args, r.details) for r in s.exec(select(OperationLog).where(
            OperationLog.action.in_(["billing:grant", "project:billing:set", "billing:prices:set"])).order_by(OperationLog.id))]
    assert logs[0][:3] == ("billing:prices:set", "billing-prices", "billing.prices_set")
    assert "nvidia.com/gpu (NVIDIA-A100-SXM4-80GB): 20" in logs[0][3]["prices"]
    assert [row[:4] for row in logs[1:]] == [
        ("billing:grant", "alice", "billing.granted_note", {"points": 40, "note": "course"}),
        ("billing:grant", "alice", "billing.granted_note", {"points": -15, "note": "correction"}),
        ("project:billing:set", "vision", "billing.allowance_set", {"before": 0, "after": 250})]
    assert [row[4] for row in logs[1:]] == ["40 points; note: course", "-15 points; note: correction",
                                            "free allowance per member: 0 → 250 points a month"]
    assert oplog.details_text("zh-CN", logs[3][2], logs[3][3]) == "每位成员的免费额度：0 → 250 点/月"


def test_a_grant_that_rounds_to_nothing_writes_nothing(shop):
    ctx, admin = shop.ctx, shop.world.admin
    before = counts(ctx)
    with pytest.raises(InvalidInput) as exc:
        billing.grant_points(ctx, admin, "alice", 1e-9)
    assert (exc.value.code, exc.value.field) == ("billing.points_below_step", "points")
    assert counts(ctx) == before and extra_of(ctx, shop.alice.user_id) == 0
    granted = billing.grant_points(ctx, admin, "alice", 2.345)
    assert granted.points == 2.35 and [r.points for r in ledger(ctx, shop.alice.user_id)] == [2.35]


def test_set_prices_replaces_the_table(shop):
    ctx, admin = shop.ctx, shop.world.admin
    before = {(p.resource, p.model): p for p in billing.list_prices(ctx, shop.alice)}
    assert {k: p.points_per_hour for k, p in before.items()} == {("nvidia.com/gpu", ""): 10, ("nvidia.com/gpu", A100): 20}
    after = billing.set_prices(ctx, admin, [{"resource": "nvidia.com/gpu", "points_per_hour": 10},
                                            {"resource": "cpu", "points_per_hour": 0.5}])
    assert [(p.resource, p.model, p.points_per_hour) for p in after] == [("cpu", "", 0.5), ("nvidia.com/gpu", "", 10)]
    kept = next(p for p in after if p.resource == "nvidia.com/gpu")
    assert kept.updated_at == before[("nvidia.com/gpu", "")].updated_at  # unchanged row keeps its time
    logged = counts(ctx)
    with pytest.raises(InvalidInput) as exc:
        billing.set_prices(ctx, admin, [{"resource": "cpu", "points_per_hour": -1}])
    assert exc.value.field == "prices[0].points_per_hour"
    assert counts(ctx) == logged


def test_balance_lists_own_projects(shop):
    ctx, admin = shop.ctx, shop.world.admin
    billing.set_project_billing(ctx, admin, "vision", 100)
    bal = billing.balance(ctx, shop.alice)
    assert bal.username == "alice" and bal.billing_enabled
    assert {p.project: p.left_points for p in bal.projects} == {"default": 0, "vision": 100}
    with pytest.raises(NotFound):
        billing.balance(ctx, shop.world.bob, "vision")
    with pytest.raises(InvalidInput) as exc:
        billing.balance(ctx, shop.alice, "Vision!")
    assert exc.value.field == "project"
