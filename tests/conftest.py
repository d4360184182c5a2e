"""Shared test infrastructure: real PostgreSQL and Redis servers, per-test databases migrated with Alembic,
and a builder for :class:`~crater_app.services.context.ServiceContext` on the local backend.

- PostgreSQL: ``CRATER_TEST_DATABASE_URL`` (e.g. ``postgresql://postgres@127.0.0.1:5432/test``), or a
  throwaway cluster started with ``initdb`` + ``pg_ctl`` in a temp dir for the session. Every test that
  uses ``db_url`` gets its own database (``CREATE DATABASE crater_t_<random>``, dropped afterwards),
  migrated with ``crater_app.db.migrate.upgrade`` (never ``metadata.create_all``).
- Redis: ``CRATER_TEST_REDIS_URL``, or a throwaway ``redis-server --save ''`` on a free port.
- When PostgreSQL or Redis cannot be reached or started, the tests that need them FAIL (never skip).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import psutil
import pytest
from argon2 import PasswordHasher
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from crater_app.auth import passwords
from crater_app.cluster.base import Device
from crater_app.cluster.local import LocalBackend
from crater_app.db.engine import make_engine, normalize_url
from crater_app.db.migrate import upgrade
from crater_app.domain.policy import Actor
from crater_app.domain.resources import NVIDIA_GPU
from crater_app.services import identity, sign_in, users
from crater_app.services import jobs as jobs_service
from crater_app.services.context import ServiceContext
from crater_app.settings import Settings

A100 = "NVIDIA-A100-SXM4-80GB"
ADMIN_PASSWORD = "admin-password-1"
USER_PASSWORD = "user-password-1"


# --------------------------------------------------------------------------------------------------
# Speed: argon2 with the RFC 9106 defaults costs ~0.25 s per hash+verify on a 2-core CI box. The tests
# create and log in several users per test, so they use argon2id with minimal cost parameters; the
# algorithm, the hash format and the verify path stay the production ones.
# --------------------------------------------------------------------------------------------------
@pytest.fixture(autouse=True, scope="session")
def _cheap_argon2():
    original = passwords._hasher
    passwords._hasher = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    yield
    passwords._hasher = original


@pytest.fixture(autouse=True)
def _clear_process_caches():
    """Ids repeat across the per-test databases: drop the id->name cache around each test (resolved identities
    live on each test's own ServiceContext)."""
    jobs_service._names.clear()
    yield
    jobs_service._names.clear()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --------------------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------------------
def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return candidates[-1] if candidates else None


def _retry(probe, timeout: float, interval: float) -> str | None:
    """Call ``probe()`` until it returns without raising (-> None) or ``timeout`` seconds pass (-> last error)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            probe()
            return None
        except Exception as exc:  # noqa: BLE001 - reported in the failure message
            error = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
        if time.monotonic() > deadline:
            return error
        time.sleep(interval)


def _check_pg(url: str, timeout: float) -> str | None:
    """None when ``url`` answers ``SELECT 1`` within ``timeout`` seconds, else the last error."""
    engine = create_engine(normalize_url(url), connect_args={"connect_timeout": 3})

    def probe() -> None:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    try:
        return _retry(probe, timeout, 0.2)
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def pg_admin_url():
    """URL of a maintenance database on a PostgreSQL server the tests may create databases on."""
    url = os.environ.get("CRATER_TEST_DATABASE_URL", "").strip()
    if url:
        error = _check_pg(url, timeout=10)
        if error:
            pytest.fail(f"PostgreSQL at CRATER_TEST_DATABASE_URL={url} is not reachable: {error}", pytrace=False)
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
    engine = create_engine(normalize_url(pg_admin_url), isolation_level="AUTOCOMMIT", pool_size=2)
    yield engine
    engine.dispose()


def _new_pg_database(admin_engine, admin_url: str) -> tuple[str, Callable[[], None]]:
    name = f"crater_t_{uuid.uuid4().hex[:12]}"
    with admin_engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)

    def drop() -> None:
        with admin_engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    return url, drop


# --------------------------------------------------------------------------------------------------
# Databases: one fresh, empty database per test, on SQLite and on PostgreSQL
# --------------------------------------------------------------------------------------------------
@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty_db_url(request, tmp_path):
    """A fresh, empty database (no tables): a SQLite temp file, or a new PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'db' / 'crater.db'}"
        return
    admin_url = request.getfixturevalue("pg_admin_url")
    url, drop = _new_pg_database(request.getfixturevalue("pg_admin_engine"), admin_url)
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def db_url(empty_db_url):
    """A fresh database migrated to head with Alembic."""
    upgrade(empty_db_url)
    return empty_db_url


# --------------------------------------------------------------------------------------------------
# Redis
# --------------------------------------------------------------------------------------------------
def _check_redis(url: str, timeout: float) -> str | None:
    """None when the Redis at ``url`` answers PING within ``timeout`` seconds, else the last error."""
    import redis

    def probe() -> None:
        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        try:
            client.ping()
        finally:
            client.close()

    return _retry(probe, timeout, 0.1)


@pytest.fixture(scope="session")
def redis_url():
    """URL of a Redis server (``CRATER_TEST_REDIS_URL`` or a throwaway one); fails when there is none."""
    url = os.environ.get("CRATER_TEST_REDIS_URL", "").strip()
    if url:
        error = _check_redis(url, timeout=10)
        if error:
            pytest.fail(f"Redis at CRATER_TEST_REDIS_URL={url} is not reachable: {error}", pytrace=False)
        yield url
        return
    server = shutil.which("redis-server")
    if not server:
        pytest.fail("Redis is needed: set CRATER_TEST_REDIS_URL or install redis-server", pytrace=False)
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="crater-redis-")
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        error = _check_redis(url, timeout=10)
        if error:
            pytest.fail(f"the throwaway redis-server on port {port} does not answer: {error}", pytrace=False)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(workdir, ignore_errors=True)


# --------------------------------------------------------------------------------------------------
# Service context on the local backend
# --------------------------------------------------------------------------------------------------
def gpu_devices(count: int = 4, model: str = A100, resource: str = NVIDIA_GPU, start: int = 0) -> list[Device]:
    """Virtual devices as ``CRATER_LOCAL_GPUS=count:model`` declares them (explicit, so NVML never interferes)."""
    return [
        Device(index=i, resource=resource, model=model, memory_bytes=0, uuid=f"virtual-{i}", virtual=True)
        for i in range(start, start + count)
    ]


def kill_backend_processes(data_dir: Path) -> None:
    """SIGKILL the process group of every workload still running in the local backend at ``data_dir``."""
    db = Path(data_dir) / "local" / "backend.db"
    if not db.exists():
        return
    conn = sqlite3.connect(db, timeout=30)
    try:
        rows = conn.execute("SELECT pid, pid_start FROM workloads WHERE pid IS NOT NULL").fetchall()
    finally:
        conn.close()
    for pid, pid_start in rows:
        try:
            proc = psutil.Process(pid)
            if pid_start is not None and abs(proc.create_time() - pid_start) > 1.0:
                continue  # pid reused by an unrelated process
        except psutil.NoSuchProcess:
            pass
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@pytest.fixture
def make_ctx(db_url, tmp_path):
    """Build :class:`ServiceContext` objects on the test database and a local backend.

    ``make_ctx(data_dir=None, gpus=4, devices=None, cancel_grace_s=0.5, lease_ttl_s=10.0, backend=None,
    url=None)``; several calls with the same ``data_dir`` model several processes (or a restart).
    Every job process left running is killed at teardown.
    """
    made: list[ServiceContext] = []
    data_dirs: set[Path] = set()

    def build(
        data_dir: Path | None = None, gpus: int = 4, devices: list[Device] | None = None,
        cancel_grace_s: float = 0.5, lease_ttl_s: float = 10.0, backend=None, url: str | None = None,
    ) -> ServiceContext:
        data_dir = Path(data_dir or tmp_path / "data")
        data_dir.mkdir(parents=True, exist_ok=True)
        data_dirs.add(data_dir)
        settings = Settings(
            data_dir=data_dir, database_url=url or db_url, local_gpus=f"{gpus}:{A100}", cancel_grace_s=cancel_grace_s,
            loop_interval_s=0.05, lease_ttl_s=lease_ttl_s, admin_password=ADMIN_PASSWORD,
        )
        if backend is None:
            backend = LocalBackend(
                data_dir, devices=devices if devices is not None else gpu_devices(gpus), cancel_grace_s=cancel_grace_s
            )
        ctx = ServiceContext(engine=make_engine(url or db_url), backend=backend, settings=settings)
        made.append(ctx)
        return ctx

    yield build
    for data_dir in data_dirs:
        kill_backend_processes(data_dir)
    for ctx in made:
        ctx.engine.dispose()
        conn = getattr(ctx.backend, "_conn", None)
        if conn is not None:
            conn.close()


@dataclass
class World:
    """A context with the first admin and three accounts: ``alice``/``bob`` (role user) and ``gus`` (guest)."""

    ctx: ServiceContext
    admin: Actor
    alice: Actor
    bob: Actor
    guest: Actor
    tokens: dict[str, str]


def populate(ctx: ServiceContext) -> World:
    """Create the admin (bootstrap path) and the users through the services; log each in for an actor."""
    users.ensure_admin(ctx, ADMIN_PASSWORD)
    tokens = {"admin": sign_in.login(ctx, "admin", ADMIN_PASSWORD).access_token}
    admin = identity.authenticate(ctx, tokens["admin"])
    for name, role in (("alice", "user"), ("bob", "user"), ("gus", "guest")):
        users.create_user(ctx, admin, name, USER_PASSWORD, role)
        tokens[name] = sign_in.login(ctx, name, USER_PASSWORD).access_token
    actors = {name: identity.authenticate(ctx, token) for name, token in tokens.items()}
    return World(ctx, actors["admin"], actors["alice"], actors["bob"], actors["gus"], tokens)


@pytest.fixture
def world(make_ctx) -> World:
    return populate(make_ctx())
