"""The job page's replicas table, its log per replica and its manifest section, run in-process on real Reflex state
objects against the test database and the fake backend (no browser)."""

from __future__ import annotations

import pytest
import reflex as rx
import yaml

from crater_app.services import console as console_service
from crater_app.services import jobs
from crater_app.services.leader import LeaderLoop
from crater_app.state import base as base_state
from crater_app.state.job_detail import JobDetailState
from tests.helpers import drive_until, job_row, run_handler
from tests.sessions import signed_in_router

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

GPU = "nvidia.com/gpu"


@pytest.fixture
def console(world, monkeypatch):
    """The handlers' process context is the test world's."""
    monkeypatch.setattr(base_state, "get_context", lambda: world.ctx)
    return world


def gang(world, seconds: int = 30) -> int:
    """A running job of task ``master`` (1 replica) and ``worker`` (2), each printing its own line."""
    tasks = [{"name": "master", "replicas": 1, "command": ["sh", "-c", f"echo master-out; sleep {seconds}"],
              "resources": {GPU: 1}},
             {"name": "worker", "replicas": 2, "command": ["sh", "-c", f"echo worker-out; sleep {seconds}"],
              "resources": {GPU: 1}}]
    job = jobs.submit_job(world.ctx, world.alice, {"name": "gang", "tasks": tasks})
    drive_until(LeaderLoop(world.ctx), job.id, "Running")
    return job.id


def page(world, job_id: int, who: str = "alice") -> JobDetailState:
    root = rx.State(_reflex_internal_init=True)
    st = root.get_substate(JobDetailState.get_full_name().split(".")[1:])
    st.router = signed_in_router(world.ctx, f"http://localhost/jobs/{job_id}", who)
    return st


def run(st, name: str, *args):
    return run_handler(type(st).event_handlers[name].fn, st, *args)


def test_the_replicas_table_and_the_first_replicas_log(console):
    st = page(console, gang(console))
    run(st, "load")
    assert [(r["key"], r["phase"], r["node"], r["exit_code"]) for r in st.replicas] == [
        ("master/0", "Running", "fake-node", ""), ("worker/0", "Running", "fake-node", ""),
        ("worker/1", "Running", "fake-node", "")]
    assert all(r["devices"].isdigit() for r in st.replicas), "one GPU each"
    assert st.replica_keys == ["master/0", "worker/0", "worker/1"]
    assert st.log_key == "master/0" and st.logs == "master-out\n"
    assert not st.keeps_manifests and st.manifest == "", "the fake keeps no objects: no manifest section"
    st.lang = "zh-CN"
    assert [r["phase_text"] for r in st.replica_rows] == ["运行中"] * 3


def test_picking_a_replica_shows_its_log_and_the_refresh_keeps_it(console):
    job_id = gang(console)
    st = page(console, job_id)
    run(st, "load")
    run(st, "pick_replica", "worker/1")
    assert st.log_key == "worker/1" and st.logs == "worker-out\n"
    run(st, "pick_replica", "worker/7")  # not one of the job's: ignored
    assert st.log_key == "worker/1" and st.logs == "worker-out\n"
    # a read that was on its way for the replica shown before is dropped, not shown under the new one
    _, stale = base_state.call_as(st._credentials(), console_service.job_view, job_id)
    st._apply(stale)
    assert st.log_key == "worker/1" and st.logs == "worker-out\n"
    assert st._log_target() == {"task": "worker", "replica": 1}, "what the refresh reads next"


def test_a_job_the_backend_forgot_shows_no_replicas_and_its_log(console):
    job_id = gang(console)
    console.ctx.backend.forget(job_row(console.ctx, job_id).uid)
    st = page(console, job_id)
    run(st, "load")
    assert st.replicas == [] and st.log_key == "" and st.logs == ""


def test_the_manifest_is_collapsed_until_asked_for(console):
    job_id = gang(console)
    st = page(console, job_id)
    objects = [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "gang"}}]
    console.ctx.backend.keep_manifests("no-such-uid", [])  # a backend that keeps objects, none for this job yet
    run(st, "load")
    assert st.keeps_manifests and st.manifest == "" and not st.manifest_open
    console.ctx.backend.keep_manifests(job_row(console.ctx, job_id).uid, objects)
    run(st, "load")
    assert list(yaml.safe_load_all(st.manifest)) == objects and not st.manifest_open
    run(st, "toggle_manifest")
    assert st.manifest_open


def test_another_user_sees_no_job(console):
    st = page(console, gang(console), who="bob")
    run(st, "load")
    assert st.not_found and st.replicas == [] and st.logs == ""


def test_a_job_of_several_tasks_shows_one_block_each_and_its_memory_as_a_size(console):
    tasks = [{"name": "master", "replicas": 1, "command": ["sh", "-c"], "args": ["echo master-out; sleep 30"],
              "resources": {GPU: 1, "memory": "512Mi"}},
             {"name": "worker", "replicas": 2, "command": ["sh", "-c", "echo worker-out; sleep 30"],
              "resources": {GPU: 1, "memory": "512Mi", "cpu": "500m"}}]
    job = jobs.submit_job(console.ctx, console.alice, {"name": "gang", "tasks": tasks})
    drive_until(LeaderLoop(console.ctx), job.id, "Running")
    st = page(console, job.id)
    run(st, "load")
    assert st.job["memory"] == "1.5 GiB", "the total over three replicas of 512 MiB"
    assert [(b["name"], b["replicas"], b["resources_text"]) for b in st.task_blocks] == [
        ("master", "1", "1 × nvidia.com/gpu, 1 core, 512 MiB memory"),  # the default CPU
        ("worker", "2", "1 × nvidia.com/gpu, 0.5 cores, 512 MiB memory")]
    assert st.task_argvs == [["sh", "-c", "echo master-out; sleep 30"], ["sh", "-c", "echo worker-out; sleep 30"]]
    assert st.log_restarts == "", "no replica has restarted"


def test_a_single_task_job_keeps_its_one_argument_list(console):
    job = jobs.submit_job(console.ctx, console.alice, {"name": "one", "command": ["sh", "-c", "sleep 30"],
                                                       "resources": {"memory": "2Gi"}})
    st = page(console, job.id)
    run(st, "load")
    assert st.task_blocks == [] and st.task_argvs == [] and st.argv == ["sh", "-c", "sleep 30"]
    assert st.job["memory"] == "2 GiB"


def test_the_log_header_counts_the_shown_replicas_restarts(console):
    tasks = [{"name": "worker", "replicas": 2, "command": ["sh", "-c", "echo run; exit 4"], "resources": {GPU: 1}}]
    job = jobs.submit_job(console.ctx, console.alice, {"name": "flaky", "tasks": tasks, "restart_policy": "restart",
                                                       "max_retry": 1})
    drive_until(LeaderLoop(console.ctx), job.id, "Failed")
    st = page(console, job.id)
    run(st, "load")
    assert st.log_key == "worker/0" and st.log_restarts == "1"
    run(st, "pick_replica", "worker/1")
    assert st.log_restarts == "1"
