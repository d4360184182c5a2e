"""GET /api/v1/usage and the billing routes over HTTP: answers, and bad input named in the error envelope."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlmodel import select

from crater_app.db.models import Project
from crater_app.services import projects
from tests.api.conftest import assert_error
from tests.helpers import counts, ran_job

pytestmark = pytest.mark.both_databases  # usage rollups use dialect-specific SQL (epoch seconds)


@pytest.fixture
def vision(api) -> int:
    ctx, admin = api.world.ctx, api.world.admin
    projects.create_project(ctx, admin, "vision")
    projects.set_member(ctx, admin, "vision", "alice", "member")
    with ctx.session() as s:
        return s.exec(select(Project).where(Project.name == "vision")).one().id


def test_usage_rows_and_totals(api, vision):
    start = datetime(2026, 11, 10, 20, tzinfo=timezone.utc)
    ran_job(api.world.ctx, api.world.alice.user_id, vision, start, start + timedelta(hours=6), gpus=2, cpu_m=500,
            memory_bytes=2 * 2**30, model="A100")
    r = api.client.get("/api/v1/usage", params={"group_by": "model", "from": "2026-11-01T00:00:00Z",
                                                "to": "2026-12-01T00:00:00Z", "granularity": "day"},
                       headers=api.auth("admin"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["from"], body["to"], body["group_by"], body["granularity"]) == (
        "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", "model", "day")
    assert body["rows"] == [
        {"key": "A100", "period": "2026-11-10", "accelerator_hours": 8.0, "cpu_core_hours": 2.0,
         "memory_gib_hours": 8.0, "jobs": 1},
        {"key": "A100", "period": "2026-11-11", "accelerator_hours": 4.0, "cpu_core_hours": 1.0,
         "memory_gib_hours": 4.0, "jobs": 1},
    ]
    assert body["keys"] == [{"key": "A100", "period": "total", "accelerator_hours": 12.0, "cpu_core_hours": 3.0,
                             "memory_gib_hours": 12.0, "jobs": 1}]
    assert body["totals"] == {"key": "total", "period": "total", "accelerator_hours": 12.0, "cpu_core_hours": 3.0,
                              "memory_gib_hours": 12.0, "jobs": 1}
    bob = api.client.get("/api/v1/usage", params={"from": "2026-11-01T00:00:00Z", "to": "2026-12-01T00:00:00Z"},
                         headers=api.auth("bob")).json()
    assert bob["rows"] == [] and bob["totals"]["jobs"] == 0


@pytest.mark.parametrize("params, field, words", [
    ({"group_by": "team"}, "group_by", ("user", "project", "model")),
    ({"granularity": "hour"}, "granularity", ("day", "month")),
    ({"from": "last week"}, "from", ("ISO 8601",)),
    ({"from": "2026-11-01T00:00:00"}, "from", ("offset",)),
    ({"to": "2026-13-01T00:00:00Z"}, "to", ("ISO 8601",)),
    ({"from": "2026-11-02T00:00:00Z", "to": "2026-11-01T00:00:00Z"}, "to", ("after",)),
    ({"from": "2025-01-01T00:00:00Z", "to": "2026-11-01T00:00:00Z"}, "from", ("366",)),
    ({"to": "2026-11-01T00:00:00Z"}, None, ()),  # the default 30-day window ending there: fine
])
def test_usage_bad_input_names_the_field(api, params, field, words):
    r = api.client.get("/api/v1/usage", params=params, headers=api.auth("alice"))
    if field is None:
        assert r.status_code == 200, r.text
        return
    assert_error(r, 422, "invalid", field, *words)


def test_billing_routes(api, vision):
    admin = api.auth("admin")
    r = api.client.put("/api/v1/billing/prices", json=[{"resource": "nvidia.com/gpu", "points_per_hour": 12},
                                                        {"resource": "memory", "points_per_hour": 0.25}],
                       headers=admin)
    assert r.status_code == 200, r.text
    assert [(p["resource"], p["model"], p["points_per_hour"]) for p in r.json()] == [
        ("memory", "", 0.25), ("nvidia.com/gpu", "", 12.0)]
    assert api.client.get("/api/v1/billing/prices", headers=api.auth("gus")).json() == r.json()
    before = counts(api.world.ctx)
    bad = api.client.put("/api/v1/billing/prices", json=[{"resource": "gpu", "points_per_hour": 1}], headers=admin)
    assert_error(bad, 422, "invalid", "prices[0].resource")
    bad = api.client.put("/api/v1/billing/prices", json={"resource": "cpu"}, headers=admin)
    assert_error(bad, 422, "invalid", "prices")
    bad = api.client.post("/api/v1/billing/grants", json={"username": "alice", "points": 0}, headers=admin)
    assert_error(bad, 422, "invalid", "points")
    bad = api.client.post("/api/v1/billing/grants", json={"username": "alice", "points": 1, "why": "x"}, headers=admin)
    assert_error(bad, 422, "invalid", "why")
    bad = api.client.put("/api/v1/projects/vision/billing", json={"member_allowance_points": -3}, headers=admin)
    assert_error(bad, 422, "invalid", "member_allowance_points")
    assert counts(api.world.ctx) == before
    r = api.client.put("/api/v1/projects/vision/billing", json={"member_allowance_points": 100}, headers=admin)
    assert r.json() == {"project": "vision", "member_allowance_points": 100.0}
    r = api.client.post("/api/v1/billing/grants", json={"username": "alice", "points": 7.5, "note": "lab"},
                        headers=admin)
    assert r.status_code == 201 and r.json()["extra_points"] == 7.5
    bal = api.client.get("/api/v1/billing/balance", params={"project": "vision"}, headers=api.auth("alice")).json()
    assert bal["extra_points"] == 7.5 and bal["projects"] == [
        {"project": "vision", "allowance_points": 100.0, "used_points": 0.0, "left_points": 100.0}]
    assert_error(api.client.get("/api/v1/billing/balance", params={"project": "vision"}, headers=api.auth("bob")),
                 404, "not_found", "project")


def test_submission_refused_with_402_when_points_are_used_up(api, vision):
    api.world.ctx.settings.billing_enabled = True
    r = api.submit("alice", project="vision")
    err = assert_error(r, 402, "payment_required", "project", "billing: your free allowance in project vision")
    assert "(0 points this month)" in err["message"] and "extra balance (0 points)" in err["message"]
    api.client.put("/api/v1/projects/vision/billing", json={"member_allowance_points": 10}, headers=api.auth("admin"))
    assert api.submit("alice", project="vision").status_code == 201
