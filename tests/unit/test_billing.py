"""Pricing in points: per-model versus generic prices, the rate of a job, how a charge is paid, and the
validation of price tables, grants and allowances (crater_app.domain.billing)."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest

from crater_app.domain.billing import (
    Price,
    cost,
    exhausted,
    hourly_rate,
    period_of,
    price_table,
    split_charge,
    unit_price,
    validate_allowance,
    validate_grant,
    validate_prices,
)
from crater_app.domain.errors import InvalidInput, PaymentRequired

GIB = 2**30
TABLE = price_table([
    Price("cpu", "", 0.5), Price("memory", "", 0.1), Price("nvidia.com/gpu", "", 10.0),
    Price("nvidia.com/gpu", "NVIDIA-H100-80GB-HBM3", 25.0), Price("huawei.com/Ascend910", "", 8.0),
])


def test_model_price_wins_over_generic():
    assert unit_price(TABLE, "nvidia.com/gpu", "NVIDIA-H100-80GB-HBM3") == 25.0
    assert unit_price(TABLE, "nvidia.com/gpu", "NVIDIA-A100-SXM4-80GB") == 10.0  # no price for it: generic
    assert unit_price(TABLE, "nvidia.com/gpu", None) == 10.0  # any model: generic
    assert unit_price(TABLE, "amd.com/gpu", None) == 0.0  # no price at all: free


def test_model_price_without_generic_price():
    table = price_table([Price("nvidia.com/gpu", "H100", 30.0)])
    assert unit_price(table, "nvidia.com/gpu", "H100") == 30.0
    assert unit_price(table, "nvidia.com/gpu", "A100") == 0.0


def test_hourly_rate_sums_every_resource():
    rate = hourly_rate(TABLE, cpu_m=8000, memory_bytes=64 * GIB, accelerators={"nvidia.com/gpu": 2},
                       model="NVIDIA-H100-80GB-HBM3")
    assert rate == pytest.approx(8 * 0.5 + 64 * 0.1 + 2 * 25.0)
    generic = hourly_rate(TABLE, cpu_m=500, memory_bytes=GIB // 2, accelerators={"nvidia.com/gpu": 1}, model=None)
    assert generic == pytest.approx(0.25 + 0.05 + 10.0)
    ascend = hourly_rate(TABLE, 0, 0, {"huawei.com/Ascend910": 4}, "Ascend910B")
    assert ascend == pytest.approx(32.0)


def test_cost_is_rate_times_hours():
    assert cost(12.0, 1800) == pytest.approx(6.0)
    assert cost(12.0, -5) == 0.0


def test_allowance_pays_first_then_extra():
    assert split_charge(30.0, allowance_left=100.0) == (30.0, 0.0)
    assert split_charge(30.0, allowance_left=10.0) == (10.0, 20.0)
    assert split_charge(30.0, allowance_left=0.0) == (0.0, 30.0)
    assert split_charge(30.0, allowance_left=-5.0) == (0.0, 30.0)


def test_exhausted_needs_both_balances_used_up():
    assert exhausted(0.0, 0.0)
    assert exhausted(0.0, -3.0)
    assert not exhausted(0.01, 0.0)
    assert not exhausted(0.0, 0.01)


def test_period_is_the_utc_month():
    assert period_of(datetime(2026, 11, 30, 23, 59, tzinfo=timezone.utc)) == "2026-11"
    assert period_of(datetime(2026, 12, 1, 0, 30, tzinfo=timezone.utc)) == "2026-12"


def test_refusal_names_project_and_balances_in_both_languages():
    refused = PaymentRequired("billing.exhausted", "project", project="vision", allowance=100.0, extra=0.0)
    assert refused.message.startswith("billing: your free allowance in project vision (100 points this month) and "
                                      "your extra balance (0 points) are used up")
    assert refused.message_in("zh-CN").startswith("计费：你在项目 vision 中的免费额度（本月 100 点）")


def test_validate_prices_accepts_a_table():
    prices = validate_prices([
        {"resource": "cpu", "points_per_hour": 1},
        {"resource": "nvidia.com/gpu", "model": "H100", "points_per_hour": 20.5},
        {"resource": "nvidia.com/gpu", "points_per_hour": 10},
    ])
    assert prices[1] == Price("nvidia.com/gpu", "H100", 20.5)
    assert prices[2].model == ""
    assert validate_prices([]) == []


@pytest.mark.parametrize("body, field", [
    ({"resource": "cpu"}, "prices"),  # not a list
    ([{"resource": "gpu", "points_per_hour": 1}], "prices[0].resource"),
    ([{"resource": "cpu", "points_per_hour": -1}], "prices[0].points_per_hour"),
    ([{"resource": "cpu", "points_per_hour": math.inf}], "prices[0].points_per_hour"),
    ([{"resource": "cpu", "points_per_hour": "1"}], "prices[0].points_per_hour"),
    ([{"resource": "cpu", "points_per_hour": 2e6}], "prices[0].points_per_hour"),
    ([{"resource": "cpu"}], "prices[0].points_per_hour"),
    ([{"resource": "cpu", "model": "H100", "points_per_hour": 1}], "prices[0].model"),
    ([{"resource": "nvidia.com/gpu", "model": "x" * 129, "points_per_hour": 1}], "prices[0].model"),
    ([{"resource": "nvidia.com/gpu", "model": "=cmd|' /C calc'!A0", "points_per_hour": 1}], "prices[0].model"),
    ([{"resource": "nvidia.com/gpu", "model": "<img src=x onerror=alert(1)>", "points_per_hour": 1}], "prices[0].model"),
    ([{"resource": "cpu", "points_per_hour": 1, "currency": "eur"}], "prices[0].currency"),
    ([{"resource": "cpu", "points_per_hour": 1}, {"resource": "cpu", "points_per_hour": 2}], "prices[1].resource"),
    (["cpu"], "prices[0]"),
])
def test_validate_prices_names_the_field(body, field):
    with pytest.raises(InvalidInput) as exc:
        validate_prices(body)
    assert exc.value.field == field


def test_validate_grant_and_allowance():
    assert validate_grant(50, "course") == (50.0, "course")
    assert validate_grant(-5.5, None) == (-5.5, "")
    for points in (0, True, "5", 2e9, math.nan):
        with pytest.raises(InvalidInput) as exc:
            validate_grant(points, "")
        assert exc.value.field == "points"
    with pytest.raises(InvalidInput) as exc:
        validate_grant(5, "n" * 256)
    assert exc.value.field == "note"
    assert validate_allowance(100) == 100.0
    with pytest.raises(InvalidInput) as exc:
        validate_allowance(-1)
    assert exc.value.field == "member_allowance_points"


@pytest.mark.parametrize(("points", "stored"), [
    (0.01, 0.01), (-0.01, -0.01), (2.345, 2.35), (0.005, 0.01), (12.5, 12.5), (1e9, 1e9),
])
def test_grants_are_counted_in_hundredths(points, stored):
    assert validate_grant(points, "")[0] == stored


@pytest.mark.parametrize(("points", "code"), [
    (0, "billing.points_zero"), (0.0, "billing.points_zero"), (-0.0, "billing.points_zero"),
    (1e-9, "billing.points_below_step"), (0.004, "billing.points_below_step"), (-0.004, "billing.points_below_step"),
])
def test_grants_of_no_points_once_rounded_are_refused_with_the_precision(points, code):
    """1e-9 points were written and logged as "0 points" although the API refuses 0."""
    with pytest.raises(InvalidInput) as exc:
        validate_grant(points, "")
    assert (exc.value.code, exc.value.field, exc.value.params["step"]) == (code, "points", 0.01)
    assert "0.01" in exc.value.message and "0.01" in exc.value.message_in("zh-CN")


def test_allowances_are_counted_in_hundredths():
    assert validate_allowance(0.001) == 0.0 and validate_allowance(10.125) == 10.12


def test_billing_permissions():
    from crater_app.domain.policy import Actor, can_manage_billing, can_read_balance, can_read_prices

    admin, user, guest = Actor(1, "admin", "admin"), Actor(2, "alice", "user", {5: "admin"}), Actor(3, "gus", "guest")
    assert can_manage_billing(admin) and not can_manage_billing(user) and not can_manage_billing(guest)
    assert all(can_read_prices(a) and can_read_balance(a) for a in (admin, user, guest))
    assert not can_read_prices(Actor(4, "x", "nobody"))
