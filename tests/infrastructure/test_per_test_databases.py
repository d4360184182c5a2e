"""The test databases themselves: every test gets a database of its own at Alembic head, copied from the run's
template (or the ``world`` seed's), whose rows the next test does not see; tests marked ``both_databases`` run on
SQLite and PostgreSQL, the others on SQLite (``--both-databases``: all on both)."""

from __future__ import annotations

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlmodel import Session, SQLModel, select

import crater_app.db.models  # noqa: F401 - registers the tables on SQLModel.metadata
from crater_app.db.engine import make_engine
from crater_app.db.migrate import alembic_config
from crater_app.db.models import Project, User
from crater_app.services import identity, projects, users
from tests.conftest import PINNED_AT, USER_PASSWORD
from tests.databases import seed_record

pytestmark = pytest.mark.both_databases

PROBE = "isolation-probe"
#: database URL -> what the first test of a pair saw, read by the second (tests in a module run in file order)
seen: dict[str, dict] = {}


def _project_names(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return set(conn.execute(text("SELECT name FROM projects")).scalars())
    finally:
        engine.dispose()


def test_the_template_is_at_alembic_head_with_every_table(db_url):
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
        tables = set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert version == ScriptDirectory.from_config(alembic_config(db_url)).get_current_head()
    assert set(SQLModel.metadata.tables) <= tables
    assert _project_names(db_url) == set(), "the migrated template holds the schema only"


def test_a_row_written_in_one_test(db_url, database):
    engine = make_engine(db_url)
    try:
        with Session(engine) as s:
            s.add(Project(name=PROBE))
            s.commit()
    finally:
        engine.dispose()
    assert PROBE in _project_names(db_url)
    seen[database] = {"url": db_url}


def test_is_not_in_the_next_test(db_url, database):
    assert database in seen, "runs after test_a_row_written_in_one_test"
    assert db_url != seen[database]["url"], "each test has a database of its own"
    assert PROBE not in _project_names(db_url)


def test_world_rows_come_with_the_database(request, world, database):
    assert seed_record(request, "world") is not None, "the database was copied from the world seed's template"
    ctx = world.ctx
    assert identity.authenticate(ctx, world.tokens["alice"]).user_id == world.alice.user_id
    assert {u.username for u in users.list_users(ctx, world.admin)} == {"admin", "alice", "bob", "gus"}
    projects.create_project(ctx, world.admin, PROBE)
    users.create_user(ctx, world.admin, "zoe", USER_PASSWORD)
    world.tokens["zoe"] = "changed by this test only"
    seen[f"world-{database}"] = {"url": str(ctx.engine.url)}


def test_world_rows_written_by_a_test_are_not_in_the_next(world, database):
    ctx = world.ctx
    assert f"world-{database}" in seen, "runs after test_world_rows_come_with_the_database"
    assert str(ctx.engine.url) != seen[f"world-{database}"]["url"]
    with ctx.session() as s:
        assert s.exec(select(Project).where(Project.name == PROBE)).first() is None
        assert s.exec(select(User).where(User.username == "zoe")).first() is None
    assert set(world.tokens) == {"admin", "alice", "bob", "gus"}


def test_with_a_pinned_clock_the_world_is_written_at_the_pinned_time(request, clock, world):
    assert seed_record(request, "world") is None, "written by the fixture, not copied"
    with world.ctx.session() as s:
        created = {u.username: u.created_at for u in s.exec(select(User)).all()}
    assert set(created) == {"admin", "alice", "bob", "gus"}
    assert all(at == PINNED_AT for at in created.values()), created


# -- which databases a test runs on ------------------------------------------------------------------------------
INNER_TESTS = '''
import pytest

def test_plain(db_url):
    pass

@pytest.mark.both_databases
def test_marked(db_url):
    pass

@pytest.mark.both_databases
@pytest.mark.parametrize("n", [1, 2])
def test_marked_and_parametrised(empty_db_url, n):
    pass

def test_without_a_database():
    pass
'''

INNER_MODULE_MARKED = '''
import pytest

pytestmark = pytest.mark.both_databases

def test_in_a_marked_module(db_url):
    pass
'''


def _collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    pytester.makeconftest('pytest_plugins = ["tests.databases"]')
    pytester.makepyfile(test_inner=INNER_TESTS, test_inner_module=INNER_MODULE_MARKED)
    result = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:asyncio", *args)
    return sorted(line.split("::", 1)[1] for line in result.outlines if "::" in line)


def test_marking_chooses_the_databases(pytester: pytest.Pytester):
    assert _collected(pytester) == sorted([
        "test_plain[sqlite]",
        "test_marked[sqlite]", "test_marked[postgresql]",
        "test_marked_and_parametrised[sqlite-1]", "test_marked_and_parametrised[sqlite-2]",
        "test_marked_and_parametrised[postgresql-1]", "test_marked_and_parametrised[postgresql-2]",
        "test_without_a_database",
        "test_in_a_marked_module[sqlite]", "test_in_a_marked_module[postgresql]",
    ])


def test_the_postgresql_runs_carry_the_postgres_marker(pytester: pytest.Pytester):
    assert _collected(pytester, "-m", "postgres") == sorted([
        "test_marked[postgresql]", "test_marked_and_parametrised[postgresql-1]",
        "test_marked_and_parametrised[postgresql-2]", "test_in_a_marked_module[postgresql]",
    ])


def test_the_option_runs_every_database_test_on_both(pytester: pytest.Pytester):
    collected = _collected(pytester, "--both-databases")
    assert "test_plain[sqlite]" in collected and "test_plain[postgresql]" in collected
    assert "test_without_a_database" in collected and len(collected) == 11
