"""Benchmark: Volcano Job status changes through the watch path into the database, with ``--jobs`` (10,000) Jobs.

The Kubernetes API mock (``tests/kube_api``) runs in a process of its own (``bench/_kube_mock.py``); Crater runs
here as ``CRATER_BACKEND=kubernetes`` with a kubeconfig pointing at it. Steps:

1. ``crater``'s database (a fresh ``CRATER_DATA_DIR``), a user, a project with a quota; ``--jobs`` 1-GPU job rows
   in ``Queued`` written in one transaction, and their Volcano Jobs (built by the backend's own builder) with one
   pod each stored in the mock as created and Pending, and ``--jobs`` / 8 nodes of 8 GPUs - what the cluster holds
   when Crater restarts;
2. **re-list after a restart**: a new ``KubernetesBackend`` (what a restarted Crater makes) lists Jobs, pods, nodes,
   Queues and events, rebuilds its records from the Jobs and logs every workload's status; timed until it has a
   status for every Job, then the reconciler's first ``sync`` into the database;
3. **transitions**: the mock moves every pod to Running and every Job to Running, then every pod to Succeeded
   and every Job to Completed (5 writes per Job, as Volcano and the kubelet make them); the watches bring them to
   the backend, its change log to ``Reconciler.sync`` (called in a loop, as the leader does), which writes the
   phase changes (``Queued -> Running -> Succeeded``) and their events. Timed from the first write until every row
   is ``Succeeded``: job rows' phase transitions per second (each transition is one ``job_events`` row);
4. **memory**: RSS of this process before the backend and after step 2 (psutil), and ``tracemalloc``'s count of
   what is still allocated after a second restart (the cache, records and change log of ``--jobs`` Jobs and pods;
   traced separately because tracing slows the re-list);
5. **re-list after an API server restart**: the mock restarts and forgets its history; the watches get
   ``410 Gone`` and list again; timed until every kind was listed again.

    .venv/bin/python bench/reconcile.py [--jobs 10000] [--database-url URL]

The backend watches through one :class:`~crater_app.cluster.kube.reflector.Reflector` per kind
(:mod:`crater_app.cluster.kube.watching`).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "bench-password-1"
NAMESPACE = "crater-jobs"
#: the mock's nodes: as many as the 1-GPU jobs fill, of 8 GPUs each (a cluster of DGX-like nodes)
GPUS_PER_NODE = 8


class Mock:
    """The mock API server's process (see ``bench/_kube_mock.py``)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "_kube_mock.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)
        self.url = json.loads(self.proc.stdout.readline())["url"]

    def send(self, **cmd) -> None:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def answer(self) -> dict:
        return json.loads(self.proc.stdout.readline())

    def __call__(self, **cmd) -> dict:
        self.send(**cmd)
        return self.answer()

    def close(self) -> None:
        try:
            self.send(op="quit")
        except BrokenPipeError:
            pass
        self.proc.wait(10)


def kubeconfig(url: str, folder: str) -> str:
    path = Path(folder) / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "mock",
        "clusters": [{"name": "mock", "cluster": {"server": url}}],
        "users": [{"name": "bench", "user": {"token": "bench"}}],
        "contexts": [{"name": "mock", "context": {"cluster": "mock", "user": "bench"}}]}))
    return str(path)


def wait(check, what, timeout: float, step=None) -> float:
    """Seconds until ``check()`` holds (``step()`` called in between); raises after ``timeout``."""
    t0 = time.perf_counter()
    while not check():
        if time.perf_counter() - t0 > timeout:
            raise SystemExit(f"timed out waiting for {what() if callable(what) else what}")
        if step is not None:
            step()
        else:
            time.sleep(0.005)
    return time.perf_counter() - t0


def seed(ctx, n: int) -> tuple[list[dict], list[str]]:
    """``n`` Queued job rows of one user in project ``bench`` and their Volcano Jobs; returns (Jobs, uids)."""
    from datetime import datetime, timezone

    from sqlalchemy import select

    from crater_app.cluster.kube import records
    from crater_app.db.models import Job, Project, User
    from crater_app.services import identity, projects, quotas, sign_in, users
    from crater_app.services.jobs import workload_of

    users.ensure_admin(ctx, PASSWORD)
    admin = identity.authenticate(ctx, sign_in.login(ctx, "admin", PASSWORD).access_token)
    users.create_user(ctx, admin, "bench-u1", PASSWORD, "user")
    projects.create_project(ctx, admin, "bench")
    projects.set_member(ctx, admin, "bench", "bench-u1", "member")
    quotas.set_quota(ctx, admin, "bench", {"capability": {"nvidia.com/gpu": 100_000}})
    now = datetime.now(timezone.utc)
    with ctx.session() as s:
        project = s.execute(select(Project).where(Project.name == "bench")).scalar_one()
        user = s.execute(select(User).where(User.username == "bench-u1")).scalar_one()
        rows = [Job(uid=str(uuid.uuid4()), name=f"bench-{i}", project_id=project.id, user_id=user.id,
                    image="pytorch/pytorch:2.4.0", command=["python", "train.py", "--seed", str(i)],
                    resources={"nvidia.com/gpu": "1", "cpu": "2", "memory": "8Gi"}, cpu_m=2000,
                    memory_bytes=8 << 30, gpus=1, phase="Queued", reason="", admitted_at=now, created_at=now)
                for i in range(n)]
        s.add_all(rows)
        s.commit()
        manifests = [records.build(workload_of(r, "bench", "bench-u1"), ctx.backend.options)[0] for r in rows]
        return manifests, [r.uid for r in rows]


def count_phase(ctx, phase: str) -> int:
    from sqlalchemy import func, select

    from crater_app.db.models import Job
    with ctx.session() as s:
        return s.execute(select(func.count()).select_from(Job).where(Job.phase == phase)).scalar_one()


def phases(ctx) -> dict[str, int]:
    """Job rows by phase."""
    from sqlalchemy import func, select

    from crater_app.db.models import Job
    with ctx.session() as s:
        return dict(s.execute(select(Job.phase, func.count()).group_by(Job.phase)).all())


def count_events(ctx) -> int:
    from sqlalchemy import func, select

    from crater_app.services.job_events import EVENTS
    with ctx.session() as s:
        return s.execute(select(func.count()).select_from(EVENTS)).scalar_one()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10_000, help="Volcano Jobs (one pod each)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds any one step may take")
    ap.add_argument("--database-url", default="", help="an empty PostgreSQL database (default: SQLite in a temp dir)")
    args = ap.parse_args()
    n = args.jobs
    folder = tempfile.mkdtemp(prefix="crater-bench-reconcile-")
    mock = Mock()
    os.environ.update(CRATER_DATA_DIR=folder, CRATER_ADMIN_PASSWORD=PASSWORD, CRATER_BACKEND="kubernetes",
                      CRATER_KUBE_CONFIG=kubeconfig(mock.url, folder), CRATER_KUBE_NAMESPACE=NAMESPACE)
    if args.database_url:
        os.environ["CRATER_DATABASE_URL"] = args.database_url
    import logging

    import psutil

    logging.getLogger("crater_app.cluster.kube").setLevel(logging.ERROR)  # watches of closed backends end noisily

    from crater_app.bootstrap import build_context, make_backend
    from crater_app.services.context import ServiceContext
    from crater_app.services.reconcile import Reconciler
    from crater_app.settings import Settings

    me = psutil.Process()

    def restarted():
        """The backend a restarted Crater makes."""
        return make_backend(Settings())

    try:
        ctx = build_context()
        t0 = time.perf_counter()
        manifests, uids = seed(ctx, n)
        path = Path(folder) / "jobs.json"
        path.write_text(json.dumps(manifests))
        loaded = mock(op="load", path=str(path), nodes=-(-n // GPUS_PER_NODE), gpus_per_node=GPUS_PER_NODE)
        print(f"seeded {n:,} Queued jobs and {loaded['writes']:,} objects in the mock "
              f"({time.perf_counter() - t0:.1f} s)")
        ctx.backend.close()
        del manifests
        gc.collect()

        # 2. re-list after a Crater restart. The client's typed API classes (the reflectors call them) take seconds
        # to import (pydantic builds their models): a cost of starting the process, not of the list, so paid first.
        from kubernetes.client import CoreV1Api, CustomObjectsApi  # noqa: F401
        rss0 = me.memory_info().rss
        t0 = time.perf_counter()
        backend = restarted()
        wait(lambda: len(backend.list_workloads()) >= n and backend._watches.wait_synced(0), "the first list",
             args.timeout, step=lambda: time.sleep(0.02))
        relist_s = time.perf_counter() - t0
        rss1 = me.memory_info().rss
        ctx = ServiceContext(engine=ctx.engine, backend=backend, settings=ctx.settings)
        reconciler = Reconciler(ctx)
        t1 = time.perf_counter()
        read = reconciler.sync()
        while (more := reconciler.sync()):
            read += more
        first_sync_s = time.perf_counter() - t1
        print(f"re-list after a Crater restart: {n:,} Jobs + {n:,} pods listed and every status logged in "
              f"{relist_s:.2f} s; first reconcile of {read:,} statuses {first_sync_s:.2f} s")

        # 3. transitions through the watches into the database
        events0 = count_events(ctx)
        cpu0 = me.cpu_times()
        t0 = time.perf_counter()
        mock.send(op="run")
        mock.send(op="finish")
        written = wait(lambda: count_phase(ctx, "Succeeded") >= n, lambda: f"every job Succeeded ({phases(ctx)})",
                       args.timeout,
                       step=lambda: reconciler.sync() or time.sleep(0.002))
        run, finish = mock.answer(), mock.answer()
        cpu1 = me.cpu_times()
        transitions = count_events(ctx) - events0
        cpu_s = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
        print(f"transitions: {run['writes'] + finish['writes']:,} object writes in the mock "
              f"({run['seconds'] + finish['seconds']:.2f} s); {transitions:,} phase transitions of {n:,} jobs in the "
              f"database in {written:.2f} s = {transitions / written:,.0f} transitions/s "
              f"(Crater CPU {cpu_s:.1f} s, {cpu_s / max(transitions, 1) * 1e3:.2f} ms per transition)")

        # 5. re-list after an API server restart (410 Gone)
        lists0 = dict(backend._watches.lists)
        t0 = time.perf_counter()
        mock(op="restart", lose_history=True)
        wait(lambda: all(backend._watches.lists[k] > lists0[k] for k in lists0), "the re-list", args.timeout)
        print(f"re-list after an API server restart (410 Gone): every kind listed again in "
              f"{time.perf_counter() - t0:.2f} s")

        # 4. memory
        backend.close()
        del backend, reconciler, ctx
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        traced = restarted()
        wait(lambda: len(traced.list_workloads()) >= n and traced._watches.wait_synced(0), "the traced list",
             args.timeout)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        traced.close()
        print(f"memory for {n:,} Jobs + {n:,} pods cached: RSS +{(rss1 - rss0) / 2**20:.0f} MiB after the first "
              f"list; tracemalloc {held / 2**20:.0f} MiB held ({held / n / 1024:.1f} KiB per Job with its pod)")
        print(f"load average {os.getloadavg()[0]:.2f}")
    finally:
        mock.close()


if __name__ == "__main__":
    main()
