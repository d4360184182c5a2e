"""Approvals: the leader loop's per-round cost of ``approvals.close_orphans`` and the approvals list, in process.

Seeds a fresh, migrated SQLite database (or ``--database-url``) with ``--jobs`` jobs and ``--approvals`` requests
(2 % pending, on live jobs), then measures:

- ``close_orphans`` when there is nothing to close (what every round of the leader loop pays), median/p95;
- one ``close_orphans`` call that closes ``--orphans`` requests whose jobs just ended;
- ``list_approvals`` pages: admin pending / all, project admin, a member's own.

Prints figures; not a pass/fail test. ``.venv/bin/python bench/approvals.py --jobs 100000 --approvals 100000``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from crater_app.cluster.base import Device  # noqa: E402
from crater_app.cluster.local import LocalBackend  # noqa: E402
from crater_app.db.engine import make_engine  # noqa: E402
from crater_app.db.migrate import upgrade  # noqa: E402
from crater_app.db.models import Approval, Job, Project, ProjectMember, User  # noqa: E402
from crater_app.db.types import utcnow  # noqa: E402
from crater_app.services import approvals, identity, sign_in, users  # noqa: E402
from crater_app.services.context import ServiceContext  # noqa: E402
from crater_app.settings import Settings  # noqa: E402
from sqlmodel import select  # noqa: E402


def timed(fn, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def fmt(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    return f"median {statistics.median(ms):.2f} ms, p95 {ms[int(len(ms) * 0.95) - 1]:.2f} ms ({len(ms)} calls)"


def seed(ctx: ServiceContext, jobs: int, requests: int) -> tuple[list[int], dict[str, int]]:
    """Users, projects, jobs and approval requests by bulk inserts; returns the ids of live jobs with a pending
    request and the user ids by role."""
    now = utcnow()
    with ctx.session() as s:
        conn = s.connection()
        conn.execute(Project.__table__.insert(), [{"name": f"p{i}", "display_name": "", "description": "",
                                                   "created_at": now, "guarantee": {}, "deserved": {},
                                                   "capability": {}, "member_allowance_points": 0.0}
                                                  for i in range(20)])
        pids = [r[0] for r in conn.execute(Project.__table__.select().with_only_columns(Project.__table__.c.id))]
        conn.execute(User.__table__.insert(), [{"username": f"u{i}", "display_name": "", "email": "", "role": "user",
                                                "status": "active", "created_at": now, "extra_points": 0.0,
                                                "default_project_id": pids[i % 20]} for i in range(200)])
        uids = [r[0] for r in conn.execute(User.__table__.select().with_only_columns(User.__table__.c.id)
                                           .where(User.__table__.c.username.like("u%")))]
        conn.execute(ProjectMember.__table__.insert(), [
            {"project_id": pids[i % 20], "user_id": uid, "role": "admin" if i < 20 else "member", "share": {}}
            for i, uid in enumerate(uids)])
        rows = []
        for i in range(jobs):
            live = i % 50 == 0
            rows.append({"uid": f"bench-{i}", "name": f"job-{i}", "project_id": pids[i % 20],
                         "user_id": uids[i % 200], "image": "local/host", "command": ["true"], "env": {},
                         "resources": {}, "cpu_m": 0, "memory_bytes": 0, "gpus": 0, "max_runtime_s": 3600,
                         "priority": 0, "phase": "Running" if live else "Succeeded", "reason": "", "devices": [],
                         "created_at": now, "kind": "batch", "preemptible": False, "reclaim_lock": False,
                         "reason_code": "", "reason_args": {}, "charged_points": 0.0})
        for i in range(0, len(rows), 5000):
            conn.execute(Job.__table__.insert(), rows[i:i + 5000])
        job_ids = [r[0] for r in conn.execute(Job.__table__.select().with_only_columns(Job.__table__.c.id)
                                              .order_by(Job.__table__.c.id))]
        live_ids = job_ids[::50]
        arows = []
        for i in range(requests):
            pending = i % 50 == 0
            job_id = live_ids[(i // 50) % len(live_ids)] if pending else job_ids[i % len(job_ids)]
            arows.append({"kind": "extend_runtime" if i % 3 else "reclaim_lock",
                          "status": "pending" if pending else ("approved" if i % 2 else "rejected"),
                          "requester_id": uids[(job_id - job_ids[0]) % 200], "project_id": pids[(job_id - job_ids[0]) % 20],
                          "job_id": job_id, "payload": {"max_runtime": 7200}, "reason": "bench", "auto": False,
                          "decision_note": "", "created_at": now - timedelta(seconds=requests - i),
                          "decided_at": None if pending else now})
        for i in range(0, len(arows), 5000):
            conn.execute(Approval.__table__.insert(), arows[i:i + 5000])
    return live_ids, {"padmin": uids[0], "member": uids[40]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--approvals", type=int, default=100_000)
    parser.add_argument("--orphans", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="crater-bench-approvals-"))
    url = args.database_url or f"sqlite:///{data / 'crater.db'}"
    upgrade(url)
    settings = Settings(data_dir=data, database_url=url)
    backend = LocalBackend(data, devices=[Device(0, "nvidia.com/gpu", "bench", 0, "virtual-0", True)])
    ctx = ServiceContext(engine=make_engine(url), backend=backend, settings=settings)
    users.ensure_admin(ctx, "bench-password-1")
    t0 = time.perf_counter()
    live, who = seed(ctx, args.jobs, args.approvals)
    print(f"database: {ctx.engine.dialect.name}; seeded {args.jobs} jobs, {args.approvals} requests "
          f"({args.approvals // 50} pending) in {time.perf_counter() - t0:.1f} s; load average "
          f"{os.getloadavg()[0]:.2f}")

    assert approvals.close_orphans(ctx) == 0
    print("close_orphans, nothing to close (every leader-loop round):", fmt(timed(lambda: approvals.close_orphans(ctx),
                                                                                   args.rounds)))
    ended = live[: args.orphans]
    with ctx.session() as s:
        s.connection().execute(Job.__table__.update().where(Job.__table__.c.id.in_(ended)).values(phase="Succeeded"))
    t0 = time.perf_counter()
    closed = approvals.close_orphans(ctx)
    print(f"close_orphans closing {closed} requests (notification + operation-log row each): "
          f"{(time.perf_counter() - t0) * 1000:.1f} ms")

    actors = {"admin": identity.authenticate(ctx, sign_in.login(ctx, "admin", "bench-password-1").access_token)}
    from crater_app.domain.policy import Actor
    with ctx.session() as s:
        for role, uid in who.items():
            user = s.get(User, uid)
            roles = dict(s.exec(select(ProjectMember.project_id, ProjectMember.role).where(ProjectMember.user_id == uid)).all())
            actors[role] = Actor(user_id=uid, username=user.username, role="user", project_roles=roles,
                                 default_project_id=user.default_project_id)
    for label, actor, kwargs in (
        ("admin, pending", actors["admin"], {"status": "pending"}),
        ("admin, all", actors["admin"], {}),
        ("project admin, all", actors["padmin"], {}),
        ("member, own", actors["member"], {}),
    ):
        page = approvals.list_approvals(ctx, actor, **kwargs)
        samples = timed(lambda: approvals.list_approvals(ctx, actor, **kwargs), max(20, args.rounds // 5))
        print(f"list_approvals {label} (total {page.total}): {fmt(samples)}")
    ctx.engine.dispose()


if __name__ == "__main__":
    main()
