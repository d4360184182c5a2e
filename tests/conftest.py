"""Shared test infrastructure: databases, Redis, and service contexts on a cluster backend.

- Databases (``tests/databases.py``, loaded as a plugin): ``db_url`` is a per-test copy of a template migrated
  once per run; SQLite unless the test is marked ``both_databases`` (then SQLite and PostgreSQL); ``empty_db_url``
  is a database without tables (migration tests).
- Backends: ``make_ctx`` builds contexts on the in-memory fake (``tests/fakes.py``, the ``ClusterBackend`` boundary
  mock) unless the test is marked ``local_backend`` (real processes on this machine) or passes a backend.
- Redis: ``CRATER_TEST_REDIS_URL``, or a throwaway ``redis-server --save ''`` on a free port.
- When PostgreSQL or Redis cannot be reached or started, the tests that need them FAIL (never skip).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import psutil
import pytest
from argon2 import PasswordHasher

from crater_app.auth import passwords
from crater_app.cluster.base import ClusterBackend, Device
from crater_app.cluster.local import LocalBackend
from crater_app.cluster.local.cgroups import JobCgroup
from crater_app.cluster.local.outcomes import Limits
from crater_app.db.engine import make_engine
from crater_app.domain import times
from crater_app.domain.policy import Actor
from crater_app.domain.resources import NVIDIA_GPU
from crater_app.services import identity, sign_in, users
from crater_app.services import job_reads
from crater_app.services.context import ServiceContext
from crater_app.settings import Settings
from tests.fakes import FakeBackend
from tests.helpers import PinnedClock, configured_service, free_port, retry

pytest_plugins = ["tests.databases", "tests.kube_api.fixtures", "pytester"]
pytest.register_assert_rewrite("tests.databases")  # a plugin (above) that this module also imports (below)
from tests.databases import register_seed, seed_record  # noqa: E402

LOCAL_BACKEND_MARKER = "local_backend"
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
    job_reads._names.clear()
    yield
    job_reads._names.clear()


# --------------------------------------------------------------------------------------------------
# Time: tests that reason about calendar time pin Crater's clock
# --------------------------------------------------------------------------------------------------
#: where the ``clock`` fixture starts: mid-month, mid-day, so that no day or month boundary is near
PINNED_AT = datetime(2026, 6, 15, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def clock():
    """Crater's clock (:func:`crater_app.domain.times.utcnow`) pinned at :data:`PINNED_AT`, a
    :class:`~tests.helpers.PinnedClock` the test moves with ``clock.advance(hours=1)``; the system clock again
    afterwards. Request it before ``world``/``make_ctx`` (``def test_x(clock, world)``) so that their rows carry the
    pinned time too."""
    pinned = PinnedClock(PINNED_AT)
    times.set_clock(pinned)
    try:
        yield pinned
    finally:
        times.set_clock(None)


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

    return retry(probe, timeout, 0.1)


@pytest.fixture(scope="session")
def redis_url():
    """URL of a Redis server (``CRATER_TEST_REDIS_URL`` or a throwaway one); fails when there is none."""
    url = configured_service("CRATER_TEST_REDIS_URL", "Redis", _check_redis)
    if url:
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
# Service contexts on a cluster backend
# --------------------------------------------------------------------------------------------------
def gpu_devices(count: int = 4, model: str = A100, resource: str = NVIDIA_GPU, start: int = 0) -> list[Device]:
    """Virtual devices as ``CRATER_LOCAL_GPUS=count:model`` declares them (explicit, so NVML never interferes)."""
    return [
        Device(index=i, resource=resource, model=model, memory_bytes=0, uuid=f"virtual-{i}", virtual=True)
        for i in range(start, start + count)
    ]


def kill_backend_processes(data_dir: Path) -> None:
    """SIGKILL the process group of every workload still running in the local backend at ``data_dir``, then
    everything in its cgroups, and remove those cgroups."""
    db = Path(data_dir) / "local" / "backend.db"
    if not db.exists():
        return
    conn = sqlite3.connect(db, timeout=30)
    try:
        found = conn.execute("SELECT pid, pid_start, limits, replicas FROM workloads WHERE pid IS NOT NULL").fetchall()
    finally:
        conn.close()
    rows, limits = [], []
    for pid, pid_start, row_limits, replicas in found:  # every replica's runner and cgroups, and the row's own
        rows.append((pid, pid_start))
        limits.append(row_limits)
        for record in (json.loads(replicas) if replicas else []):
            if record.get("pid"):
                rows.append((record["pid"], record.get("pid_start")))
                limits.append(record.get("limits") or "{}")
    remove_cgroups(limits)
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


def remove_cgroups(limits_columns: list[str], timeout: float = 5.0) -> None:
    """Kill the processes in the cgroups named by local-backend ``limits`` columns and remove the cgroups."""
    groups = [g for g in (JobCgroup.from_json(Limits.from_json(text).cgroup) for text in limits_columns) if g]
    for group in groups:
        group.kill()
    deadline = time.monotonic() + timeout
    while groups and time.monotonic() < deadline:
        groups = [g for g in groups if not g.remove()]
        if groups:
            time.sleep(0.02)
def test_settings(data_dir: Path, url: str, gpus: int = 4, cancel_grace_s: float = 0.5,
                  lease_ttl_s: float = 10.0) -> Settings:
    """The settings of a test context: data in ``data_dir``, the database at ``url``, ``gpus`` virtual A100s,
    loop rounds every 50 ms."""
    return Settings(
        data_dir=data_dir, database_url=url, local_gpus=f"{gpus}:{A100}", cancel_grace_s=cancel_grace_s,
        loop_interval_s=0.05, lease_ttl_s=lease_ttl_s, admin_password=ADMIN_PASSWORD,
    )


@pytest.fixture
def make_ctx(request, db_url, tmp_path):
    """Build :class:`ServiceContext` objects on the test database and a cluster backend.

    ``make_ctx(data_dir=None, gpus=4, devices=None, cancel_grace_s=0.5, lease_ttl_s=10.0, backend=None,
    url=None)``. ``backend``: a :class:`ClusterBackend` instance, ``"fake"`` (the in-memory
    :class:`~tests.fakes.FakeBackend`) or ``"local"`` (:class:`LocalBackend`, real processes); ``None`` is the fake,
    or the local backend when the test (or its module) is marked ``local_backend``. The backend has ``gpus`` virtual
    A100s, or ``devices``. Several calls with the same ``data_dir`` model several processes of one deployment (or a
    restart): local backends share the state in that folder, and the same fake is returned for it (one cluster).
    Every job process left running is killed at teardown.
    """
    made: list[ServiceContext] = []
    data_dirs: set[Path] = set()
    fakes: dict[Path, FakeBackend] = {}
    default = "local" if request.node.get_closest_marker(LOCAL_BACKEND_MARKER) else "fake"

    def build(
        data_dir: Path | None = None, gpus: int = 4, devices: list[Device] | None = None,
        cancel_grace_s: float = 0.5, lease_ttl_s: float = 10.0, backend: ClusterBackend | str | None = None,
        url: str | None = None,
    ) -> ServiceContext:
        data_dir = Path(data_dir or tmp_path / "data")
        data_dir.mkdir(parents=True, exist_ok=True)
        data_dirs.add(data_dir)
        settings = test_settings(data_dir, url or db_url, gpus, cancel_grace_s, lease_ttl_s)
        kind = backend or default
        if kind == "local":
            backend = LocalBackend(
                data_dir, devices=devices if devices is not None else gpu_devices(gpus), cancel_grace_s=cancel_grace_s
            )
        elif kind == "fake":
            if data_dir not in fakes:
                fakes[data_dir] = FakeBackend(devices if devices is not None else gpu_devices(gpus))
            backend = fakes[data_dir]
        elif isinstance(kind, str):
            raise ValueError(f"make_ctx: backend must be a ClusterBackend, 'fake' or 'local', not {kind!r}")
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


def _seed_world(url: str) -> World:
    """The ``world`` rows, written once per run and database into a template (see tests/databases.py)."""
    folder = Path(tempfile.mkdtemp(prefix="crater-world-seed-"))
    ctx = ServiceContext(engine=make_engine(url), backend=FakeBackend(gpu_devices()), settings=test_settings(folder, url))
    try:
        seeded = populate(ctx)
    finally:
        ctx.engine.dispose()
        shutil.rmtree(folder, ignore_errors=True)
    seeded.ctx = None  # type: ignore[assignment] - each test gets a context of its own
    return seeded


register_seed("world", _seed_world)


@pytest.fixture
def world(request, make_ctx) -> World:
    """:class:`World` on ``make_ctx()``: its rows copied with the database from a template seeded once per run (or
    written now, while the clock is pinned)."""
    seeded = seed_record(request, "world")
    if seeded is None:
        return populate(make_ctx())
    seeded.ctx = make_ctx()
    return seeded
