"""Values at the edges: a -0.0 allowance is stored as 0; a job-name filter with control characters or over 63
characters says which."""

from __future__ import annotations

import math

import pytest
from sqlmodel import select

from crater_app.db.models import Project
from crater_app.services import projects
from tests.api.conftest import assert_error


def test_negative_zero_allowance_is_stored_as_zero(api):
    projects.create_project(api.world.ctx, api.world.admin, "vision")
    r = api.client.put("/api/v1/projects/vision/billing", content=b'{"member_allowance_points": -0.0}',
                       headers={**api.auth("admin"), "Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    assert math.copysign(1.0, r.json()["member_allowance_points"]) == 1.0
    assert "-0" not in r.text
    with api.world.ctx.session(read_only=True) as s:
        stored = s.exec(select(Project.member_allowance_points).where(Project.name == "vision")).one()
    assert stored == 0.0 and math.copysign(1.0, stored) == 1.0


@pytest.mark.both_databases
@pytest.mark.parametrize("q", ["\x00", "a\x00b", "\x07", "x\ty", "\x7f"])
def test_q_with_control_characters_says_so(api, q):
    r = api.client.get("/api/v1/jobs", params={"q": q}, headers=api.auth("alice"))
    err = assert_error(r, 422, "invalid", "q", "control characters")
    assert "63" not in err["message"]


def test_q_too_long_still_names_the_limit(api):
    r = api.client.get("/api/v1/jobs", params={"q": "a" * 64}, headers=api.auth("alice"))
    assert_error(r, 422, "invalid", "q", "63 characters")
    assert api.client.get("/api/v1/jobs", params={"q": "ä" * 63}, headers=api.auth("alice")).status_code == 200
