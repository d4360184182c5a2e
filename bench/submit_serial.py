"""Benchmark: one submission at a time, in process (no HTTP, no other client): what a submission costs Crater's own
code and SQLite, and what of it runs under the write lock.

A fresh data dir with the local backend (4 virtual GPUs, held by one 4-GPU job), a project with a quota (every
submission goes through the quota rules) and ``--queued`` 1-GPU jobs queued behind the holder; then ``--rounds``
more submissions through ``services.jobs.submit_job``, timed one by one, and the admission's usage read
(``db.queries.admission.read_admitted``) alone. Figures: median and p90 in milliseconds.

    .venv/bin/python bench/submit_serial.py [--queued 2000] [--rounds 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PASSWORD = "bench-password-1"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queued", type=int, default=2000, help="jobs queued before the measured submissions")
    ap.add_argument("--rounds", type=int, default=300, help="measured submissions")
    args = ap.parse_args()
    os.environ.update(CRATER_DATA_DIR=tempfile.mkdtemp(prefix="crater-bench-serial-"),
                      CRATER_LOCAL_GPUS="4:NVIDIA-A100-SXM4-80GB", CRATER_ADMIN_PASSWORD=PASSWORD)

    from sqlalchemy import select

    from crater_app.bootstrap import build_context
    from crater_app.db.models import Project
    from crater_app.db.queries import admission as queries
    from crater_app.services import identity, jobs, projects, quotas, sign_in, users

    ctx = build_context()
    users.ensure_admin(ctx, PASSWORD)
    admin = identity.authenticate(ctx, sign_in.login(ctx, "admin", PASSWORD).access_token)
    users.create_user(ctx, admin, "bench-u1", PASSWORD, "user")
    projects.create_project(ctx, admin, "bench-quota")
    projects.set_member(ctx, admin, "bench-quota", "bench-u1", "member")
    quotas.set_quota(ctx, admin, "bench-quota", {"capability": {"nvidia.com/gpu": 100_000}})
    user = identity.authenticate(ctx, sign_in.login(ctx, "bench-u1", PASSWORD).access_token)
    jobs.submit_job(ctx, admin, {"name": "occupy-all-gpus", "command": ["sleep", "3600"],
                                 "resources": {"nvidia.com/gpu": 4}})

    def submit(i: int):
        return jobs.submit_job(ctx, user, {
            "name": f"bench-{i}", "project": "bench-quota", "command": ["python", "train.py", "--epochs", "10"],
            "resources": {"nvidia.com/gpu": 1, "cpu": "2", "memory": "8Gi"}, "env": {"SEED": str(i)}})

    for i in range(args.queued):
        submit(i)
    took = []
    for i in range(args.rounds):
        t0 = time.perf_counter()
        submit(args.queued + i)
        took.append((time.perf_counter() - t0) * 1000)
    reads = []
    with ctx.session() as s:
        project_id = s.execute(select(Project.id).where(Project.name == "bench-quota")).scalar_one()
        for _ in range(100):
            t0 = time.perf_counter()
            queries.read_admitted(s, queries.Snapshot(), [project_id], individual_preemptible=False)
            reads.append((time.perf_counter() - t0) * 1000)

    def figures(values: list[float]) -> str:
        return f"median {statistics.median(values):.2f} ms, p90 {statistics.quantiles(values, n=10)[-1]:.2f} ms"

    print(f"submit_job, one at a time, {args.queued:,} jobs queued ahead: {figures(took)}")
    print(f"admission's usage read (read_admitted) of that project: {figures(reads)}")


if __name__ == "__main__":
    main()
