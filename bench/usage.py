"""Benchmark: usage reports (GET /api/v1/usage) and the billing charge step with 100,000 jobs in the database.

Seeds a fresh database (SQLite in a temporary data dir, or ``--database-url``) with a year of history in the
spirit of ``bench/_seed.py``: 50 users in 5 projects (some project admins), 100,000 jobs spread over the last 365
days, runs of 30 s .. 10 h, 0-8 accelerators of three models (or any model), 20 jobs still running. Then times
``services.usage.usage`` (the service call: SQL filter + Python rollup) and the same report through the HTTP API
in process (FastAPI TestClient: + authentication + JSON), for a 30-day and a 365-day window, as a platform admin
(every job), a project admin (own + a project's) and a member (own), and ``services.billing.charge_running`` with
billing on (its scan of the jobs table).

    .venv/bin/python bench/usage.py [--jobs 100000] [--repeat 7] [--database-url postgresql://...]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crater_app.db.engine import make_engine  # noqa: E402
from crater_app.db.migrate import upgrade  # noqa: E402
from crater_app.db.models import Job, Project, ProjectMember, User  # noqa: E402
from crater_app.domain.policy import Actor  # noqa: E402
from crater_app.services import billing, identity, sign_in, usage, users  # noqa: E402
from crater_app.services.context import ServiceContext  # noqa: E402
from crater_app.settings import Settings  # noqa: E402

ADMIN_PASSWORD = "bench-admin-password"
PROJECTS = ["vision", "nlp", "speech", "rl", "default-lab"]
MODELS = ["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-L40S", None]
N_USERS = 50


def seed(ctx: ServiceContext, jobs: int, rng: random.Random) -> dict[str, int]:
    """Projects, users, memberships and ``jobs`` job rows (Core bulk inserts). Returns user name -> id."""
    users.ensure_admin(ctx, ADMIN_PASSWORD)
    now = datetime.now(timezone.utc)
    with ctx.session() as s:
        conn = s.connection()
        pids = [conn.execute(Project.__table__.insert().values(name=n, display_name=n.title(), description="",
                                                                created_at=now - timedelta(days=400),
                                                                guarantee={}, deserved={}, capability={},
                                                                member_allowance_points=0.0)).inserted_primary_key[0]
                for n in PROJECTS]
        ids: dict[str, int] = {}
        memberships: dict[int, list[int]] = {}
        for i in range(1, N_USERS + 1):
            name = f"u{i:03d}"
            uid = conn.execute(User.__table__.insert().values(
                username=name, display_name=name, email="", password_hash=None, role="user", status="active",
                default_project_id=pids[i % len(pids)], created_at=now - timedelta(days=400), extra_points=0.0,
            )).inserted_primary_key[0]
            ids[name] = uid
            mine = [pids[i % len(pids)]] + ([pids[(i + 1) % len(pids)]] if i % 7 == 0 else [])
            memberships[uid] = mine
            for pid in mine:
                role = "admin" if i % 10 == 1 else "member"
                conn.execute(ProjectMember.__table__.insert().values(project_id=pid, user_id=uid, role=role, share={}))
        user_ids = list(memberships)
        start = now - timedelta(days=365)
        step = timedelta(days=365) / jobs
        batch = []
        for j in range(jobs):
            uid = rng.choice(user_ids)
            gpus = rng.choice((0, 1, 1, 1, 2, 4, 8))
            started = start + step * j + timedelta(seconds=rng.randint(1, 600))
            running = j >= jobs - 20
            finished = None if running else min(now, started + timedelta(seconds=rng.randint(30, 36_000)))
            batch.append({
                "uid": str(uuid.UUID(int=rng.getrandbits(128))), "name": f"train-{j}",
                "project_id": rng.choice(memberships[uid]), "user_id": uid, "image": "pytorch/pytorch:2.4.0",
                "command": ["python", "train.py"], "env": {}, "working_dir": None,
                "resources": {"cpu": "4", "memory": "32Gi", **({"nvidia.com/gpu": str(gpus)} if gpus else {})},
                "cpu_m": 4000, "memory_bytes": 32 * 2**30, "gpus": gpus,
                "accelerator_model": rng.choice(MODELS) if gpus else None, "max_runtime_s": None, "priority": 0,
                "phase": "Running" if running else "Succeeded", "reason": "", "exit_code": None if running else 0,
                "devices": [], "created_at": started - timedelta(seconds=5), "started_at": started,
                "finished_at": finished, "resubmitted_from": None, "kind": "batch", "preemptible": False,
                "reclaim_lock": False, "reason_code": "", "reason_args": {}, "admitted_at": started,
                "charged_points": 0.0, "charged_until": finished,  # history before billing: already settled
            })
            if len(batch) == 10_000:
                conn.execute(Job.__table__.insert(), batch)
                batch = []
        if batch:
            conn.execute(Job.__table__.insert(), batch)
    return ids


def timed(fn, repeat: int) -> tuple[list[float], object]:
    out, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out, result


def line(label: str, ms: list[float], extra: str = "") -> None:
    ms = sorted(ms)
    print(f"  {label:<58} median {statistics.median(ms):7.1f} ms   min {ms[0]:7.1f}   max {ms[-1]:7.1f}   {extra}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--database-url", default="", help="default: SQLite in a temporary data dir")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="crater-bench-usage-"))
    url = args.database_url or f"sqlite:///{tmp / 'crater.db'}"
    upgrade(url)
    settings = Settings(data_dir=tmp, database_url=url, admin_password=ADMIN_PASSWORD)
    # The usage and billing services never touch the cluster backend.
    ctx = ServiceContext(engine=make_engine(url), backend=None, settings=settings)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    ids = seed(ctx, args.jobs, random.Random(7))
    print(f"seeded {args.jobs} jobs over 365 days, {N_USERS} users, {len(PROJECTS)} projects "
          f"in {time.perf_counter() - t0:.1f} s on {ctx.engine.dialect.name}; cpus={os.cpu_count()}, "
          f"load={os.getloadavg()[0]:.2f}")
    if ctx.engine.dialect.name == "postgresql":
        with ctx.engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE jobs")

    tokens = {"admin": sign_in.login(ctx, "admin", ADMIN_PASSWORD).access_token}
    actors = {"admin": identity.authenticate(ctx, tokens["admin"])}
    # u001 administers a project; u007 is a member (the identities as identity.authenticate would build them)
    with ctx.session(read_only=True) as s:
        roles = {}
        for name in ("u001", "u007"):
            rows = s.exec(ProjectMember.__table__.select().where(ProjectMember.user_id == ids[name])).all()
            roles[name] = {r.project_id: r.role for r in rows}
    actors["project admin"] = Actor(ids["u001"], "u001", "user", roles["u001"])
    actors["member"] = Actor(ids["u007"], "u007", "user", roles["u007"])

    now = datetime.now(timezone.utc)
    iso = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    windows = [("30 days", now - timedelta(days=30), "day"), ("365 days", now - timedelta(days=365), "day"),
               ("365 days", now - timedelta(days=365), "month")]
    print("\nservices.usage.usage (SQL overlap filter + Python rollup):")
    for who, actor in actors.items():
        for label, since, granularity in windows:
            for group_by in ("project", "user", "model"):
                ms, report = timed(lambda: usage.usage(ctx, actor, group_by, iso(since), iso(now), granularity),
                                   args.repeat)
                line(f"{label:>8} by {group_by:<7} per {granularity:<5} as {who}", ms,
                     f"jobs={report.totals.jobs:>6} rows={len(report.rows):>5}")

    from fastapi.testclient import TestClient

    from crater_app.api.app import build_api

    print("\nGET /api/v1/usage in process (TestClient: auth + service + JSON), as admin:")
    with TestClient(build_api(lambda: ctx)) as client:
        headers = {"Authorization": f"Bearer {tokens['admin']}"}
        for label, since, granularity in windows:
            for group_by in ("project", "user"):
                params = {"group_by": group_by, "from": iso(since), "to": iso(now), "granularity": granularity}
                ms, r = timed(lambda: client.get("/api/v1/usage", params=params, headers=headers), args.repeat)
                assert r.status_code == 200, r.text
                line(f"{label:>8} by {group_by:<7} per {granularity:<5}", ms, f"{len(r.content) / 1024:.0f} KiB")

    settings.billing_enabled = True
    billing.set_prices(ctx, actors["admin"], [{"resource": "nvidia.com/gpu", "points_per_hour": 10},
                                              {"resource": "cpu", "points_per_hour": 0.5}])
    ms, charged = timed(lambda: billing.charge_running(ctx, datetime.now(timezone.utc)), args.repeat)
    line("billing.charge_running (20 running of 100k jobs)", ms, f"charged={charged} jobs in the last round")


if __name__ == "__main__":
    main()
