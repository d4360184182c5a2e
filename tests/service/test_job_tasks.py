"""services.jobs with tasks: what a submission writes for a multi-task job, and that the row comes back to the backend
as the same workload (tasks, gang, options)."""

from __future__ import annotations

import pytest

from crater_app.cluster.base import ENFORCES_DEADLINES, PVC_VOLUMES, Port, Volume
from crater_app.domain.resources import ResourceList
from crater_app.services import jobs
from tests.helpers import job_row

GiB = 1024**3
RANKS = ["python3", "-c", "import os; print(os.environ.get('RANK'))"]


def ddp(**over) -> dict:
    raw = {"name": "ddp", "kind": "pytorch", "restart_policy": "restart", "max_retry": 1, "shm_size": "64Mi",
           "node_selector": {"zone": "a"}, "ttl_after_finished": 60,
           "volumes": [{"source": "pvc", "claim": "imagenet", "sub_path": "train", "mount_path": "/data",
                        "read_only": True}],
           "tasks": [{"name": "master", "command": RANKS, "resources": {"cpu": "100m", "memory": "128Mi"}},
                     {"name": "worker", "replicas": 2, "command": RANKS, "args": ["--worker"],
                      "resources": {"cpu": "100m"}}]}
    raw.update(over)
    return raw


@pytest.fixture
def world(world, monkeypatch):
    """A backend that mounts claims, the claim ``ddp`` mounts registered, and a node in the zone it asks for."""
    ctx = world.ctx
    monkeypatch.setattr(ctx.backend, "capabilities", frozenset({ENFORCES_DEADLINES, PVC_VOLUMES}))
    monkeypatch.setattr(ctx, "settings", ctx.settings.model_copy(update={"volume_claims": {"imagenet": ["*"]}}))
    monkeypatch.setitem(ctx.backend.labels, "zone", "a")
    return world


def test_a_multi_task_job_is_written_with_its_tasks_and_totals_and_comes_back_as_the_same_workload(world):
    ctx = world.ctx
    job = jobs.submit_job(ctx, world.alice, ddp())
    row = job_row(ctx, job.id)
    # totals over the three replicas; the worker got the default memory (2Gi) per replica
    assert (row.cpu_m, row.memory_bytes, row.gpus) == (300, 128 * 1024**2 + 2 * 2 * GiB, 0)
    assert [t["name"] for t in row.tasks] == ["master", "worker"] and row.tasks[1]["replicas"] == 2
    assert row.tasks[1]["resources"] == {"cpu": "100m", "memory": "2Gi"}
    assert row.min_available is None and row.kind == "pytorch"
    assert row.options == {"restart_policy": "restart", "max_retry": 1, "shm_size_bytes": 64 * 1024**2,
                           "node_selector": {"zone": "a"}, "ttl_after_finished_s": 60,
                           "volumes": [{"source": "pvc", "claim": "imagenet", "sub_path": "train",
                                        "mount_path": "/data", "read_only": True}]}
    w = jobs.workload_of(row, "default", "alice")
    master, worker = w.tasks
    assert (master.name, master.replicas, master.ends_job, master.argv) == ("master", 1, True, tuple(RANKS))
    assert (worker.replicas, worker.ends_job, worker.argv) == (2, False, (*RANKS, "--worker"))
    assert worker.resources == ResourceList(cpu_m=100, memory_bytes=2 * GiB)
    assert master.ports == worker.ports == (Port("pytorchjob-port", 23456, "TCP"),)
    assert (w.kind, w.gang, w.restart_policy, w.max_retry, w.shm_size_bytes, w.ttl_after_finished_s) == (
        "pytorch", 3, "restart", 1, 64 * 1024**2, 60)
    assert w.volumes == (Volume(source="pvc", mount_path="/data", sub_path="train", read_only=True, claim="imagenet"),)
    assert w.node_selector == {"zone": "a"} and w.resources == ResourceList(cpu_m=300, memory_bytes=row.memory_bytes)


def test_a_row_written_before_tasks_is_one_task_main(world):
    ctx = world.ctx
    job = jobs.submit_job(ctx, world.alice, {"name": "old", "command": ["true"], "resources": {"cpu": "1"}})
    row = job_row(ctx, job.id)
    row.tasks, row.options = [], {}  # as migration 0007 leaves a row written before it
    w = jobs.workload_of(row, "default", "alice")
    (only,) = w.tasks
    assert (only.name, only.replicas, only.command, only.resources.cpu_m) == ("main", 1, ("true",), 1000)
    assert (w.restart_policy, w.max_retry, w.volumes) == ("fail", 0, ())


def test_a_resubmitted_multi_task_job_is_the_same_job_again(world):
    ctx = world.ctx
    first = jobs.submit_job(ctx, world.alice, ddp(min_available=2))
    again = jobs.resubmit_job(ctx, world.alice, first.id)
    assert again.id != first.id and again.resubmitted_from == first.id
    a, b = job_row(ctx, first.id), job_row(ctx, again.id)
    assert (b.tasks, b.min_available, b.options, b.kind, b.resources, b.cpu_m, b.memory_bytes) == (
        a.tasks, 2, a.options, "pytorch", a.resources, a.cpu_m, a.memory_bytes)
    single = jobs.submit_job(ctx, world.alice, {"name": "one", "command": ["true"], "working_dir": "w"})
    copy = job_row(ctx, jobs.resubmit_job(ctx, world.alice, single.id).id)
    assert (copy.command, copy.working_dir, copy.resources, copy.tasks) == (
        ["true"], "w", job_row(ctx, single.id).resources, job_row(ctx, single.id).tasks)


def test_the_project_space_is_read_only_for_members_and_written_by_admins(world):
    """The role decides: a member's job mounts the project's space read-only (its admins, and platform admins, write
    it); the user's own space keeps what the spec says. What is stored is what is mounted."""
    ctx = world.ctx
    volumes = [{"source": "project", "mount_path": "/shared"}, {"source": "user", "mount_path": "/home/me"}]
    member = job_row(ctx, jobs.submit_job(ctx, world.alice, ddp(volumes=volumes)).id)
    admin = job_row(ctx, jobs.submit_job(ctx, world.admin, ddp(volumes=volumes)).id)
    assert [v["read_only"] for v in member.options["volumes"]] == [True, False]
    assert [v["read_only"] for v in admin.options["volumes"]] == [False, False]
    assert [v.read_only for v in jobs.workload_of(member, "default", "alice").volumes] == [True, False]
