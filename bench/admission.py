"""Benchmark: end-to-end job submissions per second with quotas on (POST /api/v1/jobs), plus the pure decision.

The database is seeded like a platform that has run for a while: 1,000 projects, each with a quota
(capability 8/16/24/32 GPUs, 64 CPUs, 512 GiB, or ``--capability`` GPUs with 4 CPUs and 16 GiB each; with ``--fair-share`` also a guarantee and a deserved share),
10,000 users (10 members per project), 100,000 finished jobs and ``--held`` jobs waiting for an approval. A 4-GPU
job holds every (virtual) GPU, so admitted benchmark jobs wait in the backend's queue: what is measured is the
control plane - validation, authorisation, admission (project row lock, active usage of the involved projects and
users, held jobs ahead, ``decide``), the write and the hand-over to the backend - not process start-up.

The clients sign in as ``--users`` members of as many projects and submit 1-GPU jobs; as a project fills its
capability, its further jobs are ``Held`` (both paths are exercised; the mix is printed). Without
``--fair-share`` the machine's capacity is left to the backend's queue; with it, jobs are held for capacity and
fair share too (every submission then reads the whole admitted usage and every held job).

Target: >= 1,000 submissions/s end to end, >= 2,000 decisions/s for the pure decision (the figures of
``bench/admission_pure.py`` are printed at the end).

    .venv/bin/python bench/admission.py [--jobs 3000] [--clients 16] [--users 32] [--mode reflex|standalone]
                                        [--fair-share] [--held 300] [--capability N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _load import encode_request, run_load  # noqa: E402
from _seed import FAMILIES, _fmt  # noqa: E402
from _server import CraterServer, MachineMeter, describe_machine, http_json, pct, wait_phase  # noqa: E402

PROJECTS = 1000
USERS = 10_000
JOBS = 100_000
PASSWORD = "bench-password-1"
GPU = "nvidia.com/gpu"


def seed(data_dir: Path, fair_share: bool, held: int, capability: int | None = None, rng_seed: int = 11) -> dict:
    """Projects with quotas, users and memberships, finished jobs and approval-held jobs (sqlite3, one
    transaction). Returns a summary."""
    from crater_app.auth.passwords import hash_password

    rng = random.Random(rng_seed)
    t0 = time.perf_counter()
    db = sqlite3.connect(Path(data_dir) / "crater.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("BEGIN")
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    project_ids = []
    for i in range(PROJECTS):
        gpus = capability if capability is not None else 8 * (1 + i % 4)
        capability_ = {GPU: str(gpus), "cpu": str(max(64, 4 * gpus)), "memory": str(max(512, 16 * gpus) * 2**30)}
        deserved = {GPU: "4"} if fair_share else {}
        guarantee = {GPU: "1"} if fair_share and i % 10 == 0 else {}
        cur = db.execute(
            "INSERT INTO projects (name, display_name, description, created_at, guarantee, deserved, capability)"
            " VALUES (?,?,?,?,?,?,?)",
            (f"p{i:04d}", f"Project {i}", "", _fmt(now - timedelta(days=200)), json.dumps(guarantee),
             json.dumps(deserved), json.dumps(capability_)),
        )
        project_ids.append(cur.lastrowid)
    pw_hash = hash_password(PASSWORD)
    members: list[tuple[int, int]] = []
    for i in range(1, USERS + 1):
        pid = project_ids[(i - 1) % PROJECTS]
        cur = db.execute(
            "INSERT INTO users (username, username_key, display_name, email, password_hash, role, status,"
            " default_project_id, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (f"u{i:05d}", f"u{i:05d}", f"User {i}", f"u{i:05d}@example.org", pw_hash, "user", "active", pid,
             _fmt(now - timedelta(days=150))),
        )
        members.append((cur.lastrowid, pid))
        db.execute("INSERT INTO project_members (project_id, user_id, role, share) VALUES (?,?,?,?)",
                   (pid, cur.lastrowid, "admin" if i <= PROJECTS else "member", "{}"))
    start = now - timedelta(days=90)
    step = timedelta(days=90) / JOBS
    rows = []
    for j in range(JOBS + held):
        uid, pid = rng.choice(members)
        gpus = rng.choice((0, 1, 1, 2, 4, 8))
        created = start + step * min(j, JOBS - 1)
        finished = j < JOBS
        phase = rng.choice(("Succeeded", "Succeeded", "Failed", "Cancelled")) if finished else "Held"
        resources = {GPU: str(gpus), "cpu": "4", "memory": "32Gi"} if gpus else {"cpu": "2", "memory": "8Gi"}
        if not finished:  # large jobs waiting for an approval (never admitted by the loop)
            gpus, resources = 16, {GPU: "16"}
        rows.append((
            str(uuid.UUID(int=rng.getrandbits(128))), f"{rng.choice(FAMILIES)}-{j}", pid, uid, "pytorch/pytorch:2.4.0",
            json.dumps(["python", "train.py"]), "{}", None, json.dumps(resources), 4000 if gpus else 2000,
            32 * 2**30 if gpus else 8 * 2**30, gpus, None, None, 0, phase,
            "exited" if finished else "waiting for approval", 0 if finished else None, "[]", _fmt(created),
            _fmt(created + timedelta(seconds=30)) if finished else None,
            _fmt(created + timedelta(seconds=600)) if finished else None,
            "" if finished else "approval",
            "{}" if finished else json.dumps({"requested": 16, "threshold": 8}),
        ))
    db.executemany(
        "INSERT INTO jobs (uid, name, project_id, user_id, image, command, env, working_dir, resources, cpu_m,"
        " memory_bytes, gpus, accelerator_model, max_runtime_s, priority, phase, reason, exit_code, devices,"
        " created_at, started_at, finished_at, reason_code, reason_args)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        rows,
    )
    db.execute("COMMIT")
    db.close()
    return {"projects": PROJECTS, "users": USERS, "jobs": JOBS, "held": held, "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--users", type=int, default=32, help="members (of as many projects) the clients sign in as")
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--held", type=int, default=300, help="seeded jobs held for an approval")
    ap.add_argument("--fair-share", action="store_true", help="also set guarantee/deserved (capacity admission)")
    ap.add_argument("--capability", type=int, default=None,
                    help="GPU capability of every project (default 8/16/24/32: projects fill up, jobs are held)")
    ap.add_argument("--mode", choices=("reflex", "standalone"), default="reflex")
    ap.add_argument("--pure-rounds", type=int, default=20, help="rounds of bench/admission_pure.py (0: skip)")
    args = ap.parse_args()

    print(f"machine: {describe_machine()}")
    summary: dict = {}

    def prepare(data_dir: Path) -> None:
        summary.update(seed(data_dir, args.fair_share, args.held, args.capability))

    with CraterServer(mode=args.mode, prepare=prepare) as server:
        print(f"seeded: {summary['projects']:,} projects with quotas{' (fair share on)' if args.fair_share else ''}, "
              f"{summary['users']:,} users, {summary['jobs']:,} finished jobs, {summary['held']} held for approval "
              f"in {summary['seconds']:.1f} s")
        print(f"server: {args.mode} on {server.url} (up in {server.startup_s:.1f} s), data {server.data_dir}")
        admin = server.login()
        tokens = [server.login(f"u{i:05d}", PASSWORD) for i in range(1, args.users + 1)]
        status, blocker = http_json("POST", server.url + "/api/v1/jobs", {
            "name": "occupy-all-gpus", "command": ["sleep", "3600"], "resources": {GPU: 4},
        }, token=admin)
        assert status == 201, blocker
        if blocker["phase"] == "Queued":
            wait_phase(server, admin, blocker["id"], "Running")

        def requests(prefix: str, n: int) -> list[bytes]:
            return [
                encode_request("POST", "/api/v1/jobs", server.port, tokens[i % len(tokens)], {
                    "name": f"{prefix}-{i}", "command": ["python", "train.py", "--epochs", "10"],
                    "resources": {GPU: 1, "cpu": "2", "memory": "8Gi"}, "env": {"SEED": str(i)},
                })
                for i in range(n)
            ]

        if args.warmup:
            run_load(server.port, requests("warm", args.warmup), args.warmup, args.clients)
        reqs = requests("bench", args.jobs)
        cpu0 = server.cpu_seconds()
        meter = MachineMeter().start()
        result = run_load(server.port, reqs, args.jobs, args.clients, keep_bodies=args.jobs)
        server_cpu = server.cpu_seconds() - cpu0
        machine = meter.stop(server_cpu + result.client_cpu_s)

        phases: dict[str, int] = {}
        codes: dict[str, int] = {}
        for body in result.sample_bodies:
            try:
                job = json.loads(body)
            except ValueError:
                continue
            phases[job.get("phase", "?")] = phases.get(job.get("phase", "?"), 0) + 1
            if job.get("reason_code"):
                codes[job["reason_code"]] = codes.get(job["reason_code"], 0) + 1
        ms = [x * 1000 for x in result.latencies]
        print(f"submissions: {result.count} with {args.clients} clients as {args.users} users in {args.users} "
              f"projects (after {args.warmup} warm-up), statuses {result.statuses}")
        for err in result.errors:
            print(f"  error sample: {err}")
        print(f"admission outcome: {phases} held by {codes}")
        print(f"throughput: {result.rate:,.0f} submissions/s over {result.elapsed_s:.2f} s   (target >= 1,000/s)")
        print(f"latency ms: p50 {pct(ms, 50):.1f}  p95 {pct(ms, 95):.1f}  p99 {pct(ms, 99):.1f}  max {max(ms):.1f}")
        print(f"cpu: server {server_cpu:.2f} s ({server_cpu / result.elapsed_s * 100:.0f}% of one core, "
              f"{server_cpu / result.count * 1000:.2f} ms/submission), client {result.client_cpu_s:.2f} s")
        print(machine)
        _, quota = http_json("GET", server.url + "/api/v1/projects/p0000/quota", token=admin)
        print(f"project p0000 after the run: used {quota.get('used')}, admitted {quota.get('admitted_jobs')}, "
              f"held {quota.get('held_jobs')} (capability {quota.get('capability', {}).get(GPU)} GPUs)")

    if args.pure_rounds:
        try:
            from admission_pure import pure_decisions
        except ImportError:
            print("pure decision: bench/admission_pure.py not present")
            return
        figures = pure_decisions(rounds=args.pure_rounds)
        print("pure decision (bench/admission_pure.py; target >= 2,000 decisions/s):")
        for name, f in figures.items():
            if isinstance(f, dict) and "decisions_per_s" in f:
                print(f"  {name}: {f['decisions_per_s']:,.0f} decisions/s ({f.get('decisions_per_call')} per call, "
                      f"median {f.get('per_call_ms_median', 0):.2f} ms per call; admitted {f.get('admitted')}, "
                      f"held {f.get('held')}, preempted {f.get('preempted')})")
            else:
                print(f"  {name}: {f}")


if __name__ == "__main__":
    main()
