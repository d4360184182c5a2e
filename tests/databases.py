"""Test databases: a PostgreSQL server, one migrated template per run, and a copy of it for every test.

Which database a test runs on:

- By default SQLite only. A test (or a module, through ``pytestmark``) marked ``@pytest.mark.both_databases`` runs
  on SQLite and on PostgreSQL: mark what differs between the dialects (row locks and races, unique-constraint
  races, SQL functions, JSON and text the dialects store differently, migrations). ``--both-databases`` runs every
  database test on both (e.g. a nightly CI job). The PostgreSQL runs carry the ``postgres`` marker and the test id
  says which database ran (``test_x[sqlite]``, ``test_x[postgresql]``).
- ``db_url``: a database at Alembic head, copied from a template migrated once per run. SQLite: the template is
  migrated into a session folder, compacted into a single file without WAL (``VACUUM INTO``) and copied per test
  (~0.2 ms). PostgreSQL: ``CREATE DATABASE crater_t_<random> TEMPLATE crater_tpl_<random>`` (~25 ms; the template has
  no open connection, which ``CREATE DATABASE ... TEMPLATE`` requires; its name is new in every run, so concurrent
  runs on one server never share it), dropped after the test; the templates are dropped when the run ends.
- Seeds: a fixture registered with :func:`register_seed` (``world``: the admin and three accounts) is built once
  per run and database into a second template; a test using that fixture gets its database copied from it, and
  the fixture reads what the seed returned with :func:`seed_record` (instead of writing the same rows again, ~40 ms
  a test). Not while the clock is pinned (``crater_app.domain.times.set_clock``): the rows would carry the real
  time, so the fixture writes them itself under the pinned clock.
- ``empty_db_url``: a database without tables, for the migration tests, which migrate from empty themselves.

Servers: ``CRATER_TEST_DATABASE_URL`` (e.g. ``postgresql://postgres@127.0.0.1:5432/test``), or a throwaway cluster
started with ``initdb`` + ``pg_ctl`` in a temp dir for the session. When PostgreSQL cannot be reached or started,
the tests that need it FAIL (never skip).
"""

from __future__ import annotations

import copy
import glob
import os
import pwd
import shutil
import sqlite3
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from crater_app.db.engine import normalize_url
from crater_app.db.migrate import upgrade
from crater_app.domain import times
from tests.helpers import configured_service, free_port, retry

SQLITE, POSTGRESQL = "sqlite", "postgresql"
BOTH_DATABASES_MARKER = "both_databases"


# --------------------------------------------------------------------------------------------------
# Which databases a test runs on
# --------------------------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--both-databases", action="store_true", default=False,
        help="run every database test on SQLite and PostgreSQL, not only those marked both_databases",
    )


def databases_for(marked: bool, everywhere: bool) -> list:
    """The ``database`` parameters of a test: SQLite, plus PostgreSQL when the test is ``marked`` with
    ``both_databases`` or the run asked for ``everywhere`` (``--both-databases``)."""
    if marked or everywhere:
        return [SQLITE, pytest.param(POSTGRESQL, marks=pytest.mark.postgres)]
    return [SQLITE]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise ``database`` (and so ``db_url``, ``empty_db_url`` and everything built on them) per test."""
    if "database" not in metafunc.fixturenames:
        return
    marked = metafunc.definition.get_closest_marker(BOTH_DATABASES_MARKER) is not None
    everywhere = metafunc.config.getoption("both_databases")
    metafunc.parametrize("database", databases_for(marked, everywhere), indirect=True)


@pytest.fixture
def database(request: pytest.FixtureRequest) -> str:
    """``"sqlite"`` or ``"postgresql"``: the database this test runs on (chosen by ``pytest_generate_tests``)."""
    return request.param


# --------------------------------------------------------------------------------------------------
# PostgreSQL server
# --------------------------------------------------------------------------------------------------
def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return candidates[-1] if candidates else None


def _check_pg(url: str, timeout: float) -> str | None:
    """None when ``url`` answers ``SELECT 1`` within ``timeout`` seconds, else the last error."""
    engine = create_engine(normalize_url(url), connect_args={"connect_timeout": 3})

    def probe() -> None:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    try:
        return retry(probe, timeout, 0.2)
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def pg_admin_url():
    """URL of a maintenance database on a PostgreSQL server the tests may create databases on."""
    url = configured_service("CRATER_TEST_DATABASE_URL", "PostgreSQL", _check_pg)
    if url:
        yield url
        return

    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.fail(
            "PostgreSQL is needed: set CRATER_TEST_DATABASE_URL or install the server binaries (initdb, pg_ctl "
            "on PATH or in /usr/lib/postgresql/*/bin)", pytrace=False,
        )
    base = Path(tempfile.mkdtemp(prefix="crater-pg-"))
    data, port = base / "data", free_port()
    run_as: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root: use the postgres system account
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            pytest.fail("running as root and there is no 'postgres' account to run initdb as", pytrace=False)
        os.chown(base, account.pw_uid, account.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]

    def sh(*cmd: str) -> None:
        proc = subprocess.run([*run_as, *cmd], capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            log = (base / "server.log").read_text() if (base / "server.log").exists() else ""
            pytest.fail(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}\n{log[-800:]}",
                        pytrace=False)

    sh(initdb, "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
    options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
    sh(pg_ctl, "-D", str(data), "-o", options, "-l", str(base / "server.log"), "-w", "-t", "60", "start")
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        error = _check_pg(url, timeout=20)
        if error:
            pytest.fail(f"the throwaway PostgreSQL on port {port} does not answer: {error}", pytrace=False)
        yield url
    finally:
        subprocess.run([*run_as, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_admin_engine(pg_admin_url):
    """An AUTOCOMMIT engine on the maintenance database (``CREATE``/``DROP DATABASE``)."""
    engine = create_engine(normalize_url(pg_admin_url), isolation_level="AUTOCOMMIT", pool_size=2)
    yield engine
    engine.dispose()


def _pg_url(admin_url: str, name: str) -> str:
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def _create_pg_database(admin_engine, admin_url: str, template: str | None = None) -> tuple[str, Callable[[], None]]:
    """A new database ``crater_t_<random>`` (a copy of ``template`` when given): its URL and a function dropping it."""
    name = f"crater_t_{uuid.uuid4().hex[:12]}"
    clause = f' TEMPLATE "{template}"' if template else ""
    with admin_engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"{clause}'))

    def drop() -> None:
        with admin_engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    return _pg_url(admin_url, name), drop


# --------------------------------------------------------------------------------------------------
# Templates: migrated once per run, and seeded once per run and seed
# --------------------------------------------------------------------------------------------------
#: fixture name -> function writing its rows into the database at a URL and returning what the fixture needs
_SEEDS: dict[str, Callable[[str], object]] = {}
_SEED_RECORD = pytest.StashKey[object]()


def register_seed(fixture_name: str, seed: Callable[[str], object]) -> None:
    """Build the database of every test that uses ``fixture_name`` from a template that ``seed(url)`` wrote into
    once per run and database; ``seed`` must close every connection it opened (dispose its engine) and return
    what the fixture needs (read back, as a deep copy per test, with :func:`seed_record`). The fixture must be
    defined in the module that defines ``seed``: a test module overriding it gets the plain migrated template."""
    _SEEDS[fixture_name] = seed


def seed_record(request: pytest.FixtureRequest, fixture_name: str) -> object | None:
    """What the seed of ``fixture_name`` returned, when this test's database was copied from that seed's template;
    ``None`` when it was not (the fixture must then write its rows itself)."""
    found = request.node.stash.get(_SEED_RECORD, None)
    if found is None or found[0] != fixture_name:
        return None
    return copy.deepcopy(found[1])


@dataclass
class _Template:
    source: str  # SQLite: the template file; PostgreSQL: the template database's name
    record: object = None


class _SqliteTemplates:
    """SQLite templates of the run in ``folder``: ``get(seed)`` builds each on first use (``None``: migrated only)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.made: dict[str | None, _Template] = {}

    def get(self, seed: str | None) -> _Template:
        if seed not in self.made:
            name = seed or "migrated"
            work, template = self.folder / f"{name}-work.db", self.folder / f"{name}.db"
            record = None
            if seed is None:
                upgrade(f"sqlite:///{work}")
            else:
                shutil.copyfile(self.get(None).source, work)
                record = _SEEDS[seed](f"sqlite:///{work}")
            # One file in rollback-journal mode with the WAL folded in: a plain copy of it is a complete database.
            conn = sqlite3.connect(work)
            try:
                conn.execute("VACUUM INTO ?", (str(template),))
            finally:
                conn.close()
            self.made[seed] = _Template(str(template), record)
        return self.made[seed]


class _PostgresqlTemplates:
    """PostgreSQL template databases of the run (``crater_tpl_<random>``): ``get(seed)`` builds each on first use."""

    def __init__(self, admin_url: str, admin_engine) -> None:
        self.admin_url, self.admin_engine = admin_url, admin_engine
        self.made: dict[str | None, _Template] = {}
        self.created: list[str] = []

    def get(self, seed: str | None) -> _Template:
        if seed not in self.made:
            name = f"crater_tpl_{uuid.uuid4().hex[:12]}"
            clause = "" if seed is None else f' TEMPLATE "{self.get(None).source}"'
            with self.admin_engine.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"{clause}'))
            self.created.append(name)  # dropped at the end even if migrating or seeding it fails
            url = _pg_url(self.admin_url, name)
            record = None
            if seed is None:
                upgrade(url)  # disposes its engine: nothing stays connected to the template
            else:
                record = _SEEDS[seed](url)
            self.made[seed] = _Template(name, record)
        return self.made[seed]

    def drop(self) -> None:
        with self.admin_engine.connect() as conn:
            for name in reversed(self.created):
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def sqlite_templates(tmp_path_factory) -> _SqliteTemplates:
    """The run's SQLite templates (files in a session folder), built on first use."""
    return _SqliteTemplates(tmp_path_factory.mktemp("db-templates"))


@pytest.fixture(scope="session")
def pg_templates(pg_admin_url, pg_admin_engine):
    """The run's PostgreSQL templates, built on first use: databases named anew in every run (so concurrent runs on
    one server never share one), with no connection left open (as ``CREATE DATABASE ... TEMPLATE`` requires),
    dropped when the run ends."""
    store = _PostgresqlTemplates(pg_admin_url, pg_admin_engine)
    try:
        yield store
    finally:
        store.drop()


def _seed_of(request: pytest.FixtureRequest) -> str | None:
    """The seed whose fixture this test uses, if any: not while the clock is pinned (the fixture writes its rows at
    the pinned time itself), nor where a test module overrides the fixture with one of its own."""
    if times._clock is not None:
        return None
    definitions = getattr(getattr(request.node, "_fixtureinfo", None), "name2fixturedefs", {})
    for name, seed in _SEEDS.items():
        closest = definitions.get(name)
        if closest and getattr(closest[-1].func, "__module__", None) == seed.__module__:
            return name
    return None


# --------------------------------------------------------------------------------------------------
# Per-test databases
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def empty_db_url(request, database, tmp_path):
    """A fresh, empty database (no tables): a SQLite temp file, or a new PostgreSQL database."""
    if database == SQLITE:
        yield f"sqlite:///{tmp_path / 'db' / 'crater.db'}"
        return
    url, drop = _create_pg_database(request.getfixturevalue("pg_admin_engine"),
                                    request.getfixturevalue("pg_admin_url"))
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def db_url(request, database, tmp_path):
    """A fresh database at Alembic head of its own: a copy of the run's migrated template, or of a seed's template
    when the test uses a seeded fixture (see :func:`register_seed`)."""
    seed = _seed_of(request)
    templates = request.getfixturevalue("sqlite_templates" if database == SQLITE else "pg_templates")
    template = templates.get(seed)
    if seed is not None:
        request.node.stash[_SEED_RECORD] = (seed, template.record)
    if database == SQLITE:
        path = tmp_path / "db" / "crater.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template.source, path)
        yield f"sqlite:///{path}"
        return
    url, drop = _create_pg_database(request.getfixturevalue("pg_admin_engine"),
                                    request.getfixturevalue("pg_admin_url"), template=template.source)
    try:
        yield url
    finally:
        drop()
