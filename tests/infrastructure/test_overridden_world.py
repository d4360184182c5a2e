"""A test module that defines a ``world`` fixture of its own gets the plain migrated database, not the rows of the
shared ``world`` seed (tests/databases.py)."""

from __future__ import annotations

import pytest
from sqlmodel import select

from crater_app.db.models import User
from crater_app.services import users
from tests.conftest import ADMIN_PASSWORD


@pytest.fixture
def world(make_ctx):
    """This module's world: the first admin only."""
    ctx = make_ctx()
    users.ensure_admin(ctx, ADMIN_PASSWORD)
    return ctx


def test_a_module_s_own_world_starts_from_the_migrated_template(world):
    with world.session() as s:
        assert [u.username for u in s.exec(select(User))] == ["admin"]
