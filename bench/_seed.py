"""Bulk rows for the list benchmarks, written straight into a freshly initialised data dir with sqlite3.

A realistic history: 50 users in 5 projects (a few project admins and viewers, so that the visibility filter
has work to do), job names from a handful of families (``resnet50-sweep-123``, ``llama-7b-ft-44`` ...),
finished phases (Succeeded 65 %, Failed 20 %, Cancelled 15 %) spread over 90 days, and two events per job.
Only finished jobs are seeded: a Queued/Running row unknown to the local backend would be handed to it
again (or marked Lost) by the reconciler at start-up, which is not what a list benchmark should measure.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

USER_PASSWORD = "bench-password-1"
PROJECTS = ["vision", "nlp", "speech", "rl"]
FAMILIES = [
    "resnet50-sweep", "llama-7b-ft", "bert-base-pretrain", "whisper-asr-eval", "ppo-atari", "vit-l-finetune",
    "gpt2-distill", "unet-seg", "t5-summarize", "sd-lora", "yolo-det", "mixtral-infer-bench",
]
PHASES = [("Succeeded", 65), ("Failed", 20), ("Cancelled", 15)]
REASONS = {"Succeeded": "exited with code 0", "Failed": "exited with code 1", "Cancelled": "cancelled by owner"}
N_USERS = 50
# The non-admin users the benchmarks sign in as: a plain member, and a project admin (sees a whole project).
MEMBER_USER = "u007"
PROJECT_ADMIN_USER = "u001"


def _fmt(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S.%f")  # how SQLAlchemy's DateTime stores UTC on SQLite


def seed(data_dir: Path, jobs: int = 100_000, events_per_job: int = 2, rng_seed: int = 7) -> dict:
    """Write users, projects, memberships, ``jobs`` jobs and their events. Returns a summary dict."""
    from crater_app.auth.passwords import hash_password

    rng = random.Random(rng_seed)
    t0 = time.perf_counter()
    db = sqlite3.connect(Path(data_dir) / "crater.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("BEGIN")
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    pw_hash = hash_password(USER_PASSWORD)
    default_id = db.execute("SELECT id FROM projects WHERE name = 'default'").fetchone()[0]
    project_ids = {"default": default_id}
    for name in PROJECTS:
        cur = db.execute(
            "INSERT INTO projects (name, display_name, description, created_at) VALUES (?,?,?,?)",
            (name, name.title(), "", _fmt(now - timedelta(days=120))),
        )
        project_ids[name] = cur.lastrowid
    memberships: dict[int, list[int]] = {}
    for i in range(1, N_USERS + 1):
        cur = db.execute(
            "INSERT INTO users (username, username_key, display_name, email, password_hash, role, status,"
            " default_project_id, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (f"u{i:03d}", f"u{i:03d}", f"User {i}", f"u{i:03d}@example.org", pw_hash, "user", "active", default_id,
             _fmt(now - timedelta(days=100))),
        )
        uid = cur.lastrowid
        mine = [default_id, project_ids[PROJECTS[i % len(PROJECTS)]]]
        if i % 7 == 0:
            mine.append(project_ids[PROJECTS[(i + 1) % len(PROJECTS)]])
        memberships[uid] = mine
        for pid in mine:
            role = "member"
            if pid != default_id and i % 10 == 1:
                role = "admin"
            elif pid != default_id and i % 10 == 5:
                role = "viewer"
            db.execute("INSERT INTO project_members (project_id, user_id, role) VALUES (?,?,?)", (pid, uid, role))
    user_ids = list(memberships)
    weights = [w for _, w in PHASES]
    phases = [p for p, _ in PHASES]
    start = now - timedelta(days=90)
    step = timedelta(days=90) / jobs
    job_rows = []
    counters: dict[str, int] = {}
    for j in range(jobs):
        uid = rng.choice(user_ids)
        pid = rng.choice(memberships[uid])
        family = rng.choice(FAMILIES)
        counters[family] = counters.get(family, 0) + 1
        phase = rng.choices(phases, weights)[0]
        gpus = rng.choice((0, 1, 1, 1, 2, 4, 8))
        created = start + step * j
        started = created + timedelta(seconds=rng.randint(1, 600))
        finished = started + timedelta(seconds=rng.randint(30, 36_000))
        exit_code = 0 if phase == "Succeeded" else (1 if phase == "Failed" else 143)
        job_rows.append((
            str(uuid.UUID(int=rng.getrandbits(128))), f"{family}-{counters[family]}", pid, uid, "pytorch/pytorch:2.4.0",
            json.dumps(["python", "train.py", "--config", f"configs/{family}.yaml"]), json.dumps({"SEED": str(j)}), None,
            json.dumps({"nvidia.com/gpu": str(gpus), "cpu": "4", "memory": "32Gi"} if gpus else {"cpu": "2", "memory": "8Gi"}),
            4000 if gpus else 2000, (32 if gpus else 8) * 2**30, gpus, None, None, 0, phase, REASONS[phase], exit_code,
            json.dumps(list(range(gpus))), _fmt(created), _fmt(started), _fmt(finished), None,
        ))
    db.executemany(
        "INSERT INTO jobs (uid, name, project_id, user_id, image, command, env, working_dir, resources, cpu_m,"
        " memory_bytes, gpus, accelerator_model, max_runtime_s, priority, phase, reason, exit_code, devices,"
        " created_at, started_at, finished_at, resubmitted_from) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        job_rows,
    )
    first_id = db.execute("SELECT MIN(id) FROM jobs WHERE name != 'occupy-all-gpus'").fetchone()[0]
    if events_per_job:
        events = []
        for k, row in enumerate(job_rows):
            job_id = first_id + k
            events.append((job_id, row[19], "Queued", "Submitted", "submitted"))
            if events_per_job > 1:
                events.append((job_id, row[21], row[15], "Completed" if row[15] == "Succeeded" else row[15], row[16]))
        db.executemany("INSERT INTO job_events (job_id, at, phase, reason, message) VALUES (?,?,?,?,?)", events)
    db.execute("COMMIT")  # no ANALYZE: a database grown by the app has no statistics either
    db.close()
    return {"jobs": jobs, "users": N_USERS, "projects": len(project_ids), "seconds": time.perf_counter() - t0}
