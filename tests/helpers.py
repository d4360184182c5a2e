"""Small helpers shared by the service and API tests."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import os
import socket
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import Callable, TypeVar

import psutil
import pytest
from sqlalchemy import func
from sqlmodel import select

from crater_app.cluster.base import Task, Workload
from crater_app.db.models import Job, JobEvent, OperationLog
from crater_app.domain.policy import Actor
from crater_app.domain.resources import parse_resources
from crater_app.services import identity, projects, quotas
from crater_app.services.context import ServiceContext
from crater_app.services.reconcile import LeaderLoop

T = TypeVar("T")
T0 = datetime.now(timezone.utc)

#: Multiplier for every timeout and time bound the tests wait for (``CRATER_TEST_TIMEOUT_SCALE``, default 3). The
#: figures written at the call sites are what an idle machine needs; a loaded one (two suites on two cores, a busy CI
#: runner) needs more. A wait that succeeds returns as soon as its condition holds, so the scale costs nothing while
#: the tests pass; it only makes a real failure take longer to report.
TIMEOUT_SCALE = float(os.environ.get("CRATER_TEST_TIMEOUT_SCALE", "3"))


def within(seconds: float) -> float:
    """A time bound of ``seconds`` on an idle machine, scaled by :data:`TIMEOUT_SCALE` for a loaded one. For
    assertions that something happens promptly (e.g. a cancelled job ends long before its ``sleep 60``)."""
    return seconds * TIMEOUT_SCALE


def wait_for(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.02,
              step: Callable[[], object] | None = None, what: str = "condition") -> T:
    """Call ``step`` (if any) then ``predicate`` until it returns something truthy, every ``interval`` s, and return
    that; raise AssertionError after ``within(timeout)`` seconds (``timeout`` is what an idle machine needs)."""
    timeout = within(timeout)
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        if step is not None:
            step()
        last = predicate()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what} (last value: {last!r})")
        time.sleep(interval)


class PinnedClock:
    """A clock for :func:`crater_app.domain.times.set_clock` that stands still at ``now`` (aware UTC) until moved."""

    def __init__(self, now: datetime) -> None:
        if now.tzinfo is None:
            raise ValueError("PinnedClock needs an aware datetime (UTC)")
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float = 0.0, **delta: float) -> datetime:
        """Move forward by ``seconds`` (and ``timedelta`` keywords such as ``hours=2``); return the new time."""
        self.now += timedelta(seconds=seconds, **delta)
        return self.now

    def set(self, now: datetime) -> datetime:
        """Jump to ``now`` (aware UTC); return it."""
        if now.tzinfo is None:
            raise ValueError("PinnedClock needs an aware datetime (UTC)")
        self.now = now
        return now


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def retry(probe: Callable[[], object], timeout: float, interval: float) -> str | None:
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


def job_row(ctx: ServiceContext, job_id: int) -> Job:
    with ctx.session() as s:
        return s.get(Job, job_id)


def events(ctx: ServiceContext, job_id: int) -> list[JobEvent]:
    with ctx.session() as s:
        return list(s.exec(select(JobEvent).where(JobEvent.job_id == job_id).order_by(JobEvent.id)).all())


def drive_until(loop: LeaderLoop, job_id: int, phases: set[str] | str, timeout: float = 10.0) -> Job:
    """Step ``loop`` until job ``job_id`` is in one of ``phases``; return the row (fails as :func:`wait_for` does)."""
    wanted = {phases} if isinstance(phases, str) else set(phases)

    def check():
        row = job_row(loop.ctx, job_id)
        return row if row.phase in wanted else None

    return wait_for(check, timeout, step=loop.step, what=f"job {job_id} to reach {sorted(wanted)}")


def counts(ctx: ServiceContext) -> dict[str, int]:
    """Rows in the tables a request could write, plus workloads the backend knows (via ``changes``)."""
    with ctx.session() as s:
        out = {
            "jobs": s.exec(select(func.count()).select_from(Job)).one(),
            "job_events": s.exec(select(func.count()).select_from(JobEvent)).one(),
            "operation_logs": s.exec(select(func.count()).select_from(OperationLog)).one(),
        }
    out["backend_workloads"] = len(ctx.backend.list_workloads())
    return out


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (a zombie counts as gone: it holds no resources)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def group_gone(pgid: int) -> bool:
    """True when no live (non-zombie) process is left in process group ``pgid``."""
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.info["pid"]) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                return False
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return True


def spec(name: str = "train", command: list[str] | None = None, **fields) -> dict:
    """A raw job spec as a client sends it."""
    raw = {"name": name, "command": command or ["sh", "-c", "echo hello"]}
    raw.update(fields)
    return raw


def signed_in(world, name: str) -> Actor:
    """User ``name`` of a populated world as a new request resolves it (its project roles as they are now)."""
    world.ctx.identities.clear()
    return identity.authenticate(world.ctx, world.tokens[name])


def configured_service(variable: str, what: str, check: Callable[[str, float], str | None]) -> str | None:
    """The URL in environment variable ``variable``, checked by ``check(url, timeout_s)`` (an error text or
    ``None``); ``None`` when it is unset (the caller starts a throwaway server). An unreachable one fails the run:
    a required service is never skipped."""
    url = os.environ.get(variable, "").strip()
    if not url:
        return None
    error = check(url, 10)
    if error:
        pytest.fail(f"{what} at {variable}={url} is not reachable: {error}", pytrace=False)
    return url


def two_teams(world, deserved_gpus: int | tuple[int, int],
              names: tuple[str, str] = ("team-a", "team-b")) -> tuple[Actor, Actor]:
    """Projects ``names`` (default ``team-a`` with member alice, ``team-b`` with member bob) deserving
    ``deserved_gpus`` devices of ``nvidia.com/gpu`` each (or the pair's own numbers; 0: no quota) under fair share;
    returns (alice, bob) as they sign in now."""
    ctx, admin = world.ctx, world.admin
    deserved = deserved_gpus if isinstance(deserved_gpus, tuple) else (deserved_gpus, deserved_gpus)
    for name, user, gpus in zip(names, ("alice", "bob"), deserved):
        projects.create_project(ctx, admin, name)
        projects.set_member(ctx, admin, name, user, "member")
        if gpus:
            quotas.set_quota(ctx, admin, name, {"deserved": {"nvidia.com/gpu": gpus}})
    return signed_in(world, "alice"), signed_in(world, "bob")


def workload(command: list[str] | str = "exit 0", gpus: int = 0, priority: int = 0, at: int = 0,
             max_runtime: int | None = None, model: str | None = None, uid: str | None = None) -> Workload:
    argv = ["sh", "-c", command] if isinstance(command, str) else command
    resources = {"nvidia.com/gpu": gpus} if gpus else {}
    return Workload.single(
        uid=uid or str(uuid.uuid4()), name="w", project="default", user="alice", image="local/host",
        command=tuple(argv), env={}, working_dir=None, resources=parse_resources(resources), accelerator_model=model,
        max_runtime_s=max_runtime, priority=priority, created_at=T0 + timedelta(seconds=at),
    )


def gang(*tasks: tuple, kind: str = "batch", at: int = 0, **fields) -> Workload:
    """A workload of ``tasks``, each ``(name, replicas, shell command, gpus per replica[, ends_job])``; ``fields``
    other :class:`Workload` fields (``restart_policy``, ``max_retry``, ``min_available``, ``max_runtime_s``)."""
    return Workload(
        uid=str(uuid.uuid4()), name="g", project="default", user="alice", kind=kind,
        tasks=tuple(Task(name=t[0], replicas=t[1], image="local/host", command=("sh", "-c", t[2]),
                         resources=parse_resources({"nvidia.com/gpu": t[3]} if t[3] else {}),
                         ends_job=bool(t[4]) if len(t) > 4 else False) for t in tasks),
        created_at=T0 + timedelta(seconds=at), **fields)


def with_task(w: Workload, **changes) -> Workload:
    """``w`` with ``changes`` made to its first task (``command``, ``env``, ``working_dir``, ``resources``, ...)."""
    return dataclasses.replace(w, tasks=(dataclasses.replace(w.tasks[0], **changes), *w.tasks[1:]))


def backend_pid(backend, uid: str) -> int:
    """Pid of the local backend's runner for ``uid`` (the leader of the job's process group)."""
    with backend._lock:
        return backend._conn.execute("SELECT pid FROM workloads WHERE uid = ?", (uid,)).fetchone()[0]


def ran_job(ctx: ServiceContext, user_id: int, project_id: int, started_at: datetime | None,
            finished_at: datetime | None = None, gpus: int = 1, cpu_m: int = 1000, memory_bytes: int = 2**30,
            model: str | None = None, phase: str | None = None, resource: str = "nvidia.com/gpu") -> int:
    """Write a job row that ran from ``started_at`` to ``finished_at`` (``None``: still Running) with the given
    request, as the reconciler leaves it; no backend workload. For usage and billing tests. Returns its id."""
    resources = {"cpu": f"{cpu_m}m", "memory": str(memory_bytes)}
    if gpus:
        resources[resource] = str(gpus)
    job = Job(uid=str(uuid.uuid4()), name="ran", project_id=project_id, user_id=user_id, image="python:3.11",
              command=["true"], resources=resources, cpu_m=cpu_m, memory_bytes=memory_bytes, gpus=gpus,
              accelerator_model=model, phase=phase or ("Running" if finished_at is None else "Succeeded"),
              created_at=started_at or T0, started_at=started_at, finished_at=finished_at)
    with ctx.session() as s:
        s.add(job)
        s.flush()
        return job.id  # type: ignore[return-value]


def run_handler(fn, state, *args):
    """Call a Reflex event handler's function ``fn(state, *args)`` and return its last answer: a coroutine is
    awaited and an async generator drained (its last non-``None`` item). The coroutine runs on its own event loop
    in a worker thread, so this works even where the calling thread has a loop running (Playwright's sync API
    keeps one running in the main thread once the browser tests have started)."""
    result = fn(state, *args)
    if hasattr(result, "__anext__"):
        generator = result

        async def drain():
            last = None
            async for item in generator:
                last = item if item is not None else last
            return last

        result = drain()
    if not asyncio.iscoroutine(result):
        return result
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, result).result()
