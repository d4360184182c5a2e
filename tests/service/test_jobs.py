"""services.jobs + LeaderLoop on the local backend with real processes (the job list's filters also on PostgreSQL)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from sqlmodel import select

from crater_app.db.models import OperationLog
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, NotFound, Unschedulable
from crater_app.services import jobs
from crater_app.services.reconcile import LeaderLoop
from tests.conftest import populate
from tests.helpers import (backend_pid, counts, drive_until, events, group_gone, job_row, process_gone, spec, wait_for,
                           within)

pytestmark = pytest.mark.local_backend  # real processes: logs, exit codes, signals, devices, deadlines


def phases_in_order(evs) -> list[str]:
    out: list[str] = []
    for e in evs:
        if not out or out[-1] != e.phase:
            out.append(e.phase)
    return out


def test_submit_runs_to_success_with_events_and_logs(world):
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("hello", ["sh", "-c", "echo line-one; echo line-two >&2"]))
    assert job.phase == "Queued" and job.user == "alice" and job.project == "default" and job.exit_code is None
    row = drive_until(loop, job.id, "Succeeded")
    assert row.exit_code == 0 and row.started_at is not None and row.finished_at >= row.started_at
    evs = jobs.job_events(ctx, world.alice, job.id)
    assert phases_in_order(evs) == ["Queued", "Running", "Succeeded"]
    assert [e.reason for e in evs][0] == "Submitted" and evs[-1].reason == "Completed"
    assert all(e.at.utcoffset().total_seconds() == 0 for e in evs)
    assert jobs.job_logs(ctx, world.alice, job.id) == "line-one\nline-two\n"
    public = jobs.get_job(ctx, world.alice, job.id)
    assert public.phase == "Succeeded" and public.exit_code == 0
    with ctx.session() as s:
        ops = s.exec(select(OperationLog).where(OperationLog.action == "job:create")).all()
    assert [(o.actor, o.target, o.result) for o in ops] == [("alice", f"default/hello#{job.id}", "ok")]


def test_exit_code_3_fails_with_the_code(world):
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("three", ["sh", "-c", "echo bad; exit 3"]))
    row = drive_until(loop, job.id, "Failed")
    assert row.exit_code == 3 and "exited with code 3" in row.reason
    assert events(ctx, job.id)[-1].reason == "Error"


def test_a_program_that_does_not_exist_fails_with_127(world):
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("nope", ["no-such-program-crater"]))
    row = drive_until(loop, job.id, "Failed")
    assert row.exit_code == 127
    assert "cannot execute 'no-such-program-crater'" in jobs.job_logs(ctx, world.alice, job.id)


def test_command_arguments_reach_the_program_verbatim(world, tmp_path):
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    args = ["<script>alert(1)</script>", "$(touch pwned)", "; rm -rf /", "a b", "'q'", "ü"]
    job = jobs.submit_job(ctx, world.alice, spec("argv", ["python3", "-c", "import sys, json; print(json.dumps(sys.argv[1:]))", *args]))
    drive_until(loop, job.id, "Succeeded")
    import json

    assert json.loads(jobs.job_logs(ctx, world.alice, job.id)) == args
    assert not list(Path(ctx.settings.data_dir).rglob("pwned")), "no shell ran the user's argv"


def _pgid_of_child(out: Path, timeout: float = 10) -> tuple[int, int]:
    pid = int(wait_for(lambda: (out / "child.pid").exists() and (out / "child.pid").read_text().strip(), timeout,
                       what="child.pid"))
    return pid, os.getpgid(pid)


def test_cancel_running_kills_the_process_group_and_children(world, tmp_path):
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    script = 'sleep 60 & echo $! > "$OUT/child.pid"; wait'
    job = jobs.submit_job(ctx, world.alice, spec("long", ["sh", "-c", script], env={"OUT": str(tmp_path)}))
    drive_until(loop, job.id, "Running")
    child, pgid = _pgid_of_child(tmp_path)
    assert pgid != os.getpgid(0), "the job runs in its own process group"
    public = jobs.cancel_job(ctx, world.alice, job.id)
    assert public.id == job.id
    t0 = time.monotonic()
    row = drive_until(loop, job.id, "Cancelled", timeout=5)
    assert time.monotonic() - t0 < within(3)
    assert row.finished_at is not None and "cancelled by alice" in row.reason
    assert wait_for(lambda: process_gone(child) and group_gone(pgid), 3, what="process group gone")
    reasons = [e.reason for e in events(ctx, job.id)]
    assert "CancelRequested" in reasons and reasons[-1] == "Cancelled"
    with pytest.raises(Conflict):
        jobs.cancel_job(ctx, world.alice, job.id)


def test_cancel_running_sleep_60(make_ctx):
    # A grace long enough for SIGTERM to end the job on a loaded machine too (it ends at once; SIGKILL never comes).
    world = populate(make_ctx(cancel_grace_s=within(5)))
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("sleeper", ["sleep", "60"], resources={"nvidia.com/gpu": 1}))
    drive_until(loop, job.id, "Running")
    pgid = backend_pid(ctx.backend, job.uid)
    os.killpg(pgid, 0)  # the group exists while the job runs
    jobs.cancel_job(ctx, world.alice, job.id)
    row = drive_until(loop, job.id, "Cancelled", timeout=5)
    assert row.exit_code == 143, "sleep died of SIGTERM (128 + 15), recorded by the runner"
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    assert ctx.backend.inventory()[0].allocations == {}


def test_cancel_kills_a_child_that_ignores_sigterm(world, tmp_path):
    """The job's shell dies on SIGTERM; a background child ignoring SIGTERM must still go (SIGKILL)."""
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    script = '(trap "" TERM; exec sleep 60) & echo $! > "$OUT/child.pid"; exec sleep 60'
    job = jobs.submit_job(ctx, world.alice, spec("stubborn", ["sh", "-c", script], env={"OUT": str(tmp_path)}))
    drive_until(loop, job.id, "Running")
    child, pgid = _pgid_of_child(tmp_path)
    jobs.cancel_job(ctx, world.alice, job.id)
    drive_until(loop, job.id, "Cancelled", timeout=5)
    assert wait_for(lambda: process_gone(child) and group_gone(pgid), 3, step=loop.step, what="stubborn child gone")


def test_cancel_a_job_whose_program_ignores_sigterm_uses_sigkill_after_the_grace(world, tmp_path):
    ctx, loop = world.ctx, LeaderLoop(world.ctx)  # cancel_grace_s = 0.5
    script = 'trap "" TERM; sleep 60 & echo $! > "$OUT/child.pid"; wait'
    job = jobs.submit_job(ctx, world.alice, spec("deaf", ["sh", "-c", script], env={"OUT": str(tmp_path)}))
    drive_until(loop, job.id, "Running")
    child, pgid = _pgid_of_child(tmp_path)
    jobs.cancel_job(ctx, world.alice, job.id)
    row = drive_until(loop, job.id, "Cancelled", timeout=5)
    assert row.exit_code == 137
    assert wait_for(lambda: process_gone(child) and group_gone(pgid), 3, what="process group gone")


def test_cancel_a_queued_job(world):
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    blocker = jobs.submit_job(ctx, world.alice, spec("blocker", ["sleep", "60"], resources={"nvidia.com/gpu": 4}))
    drive_until(loop, blocker.id, "Running")
    queued = jobs.submit_job(ctx, world.alice, spec("queued", ["sh", "-c", "echo never"], resources={"nvidia.com/gpu": 1}))
    loop.step()
    assert job_row(ctx, queued.id).phase == "Queued"
    assert jobs.cancel_job(ctx, world.alice, queued.id).phase == "Stopping"
    row = drive_until(loop, queued.id, "Cancelled")
    assert row.started_at is None and row.finished_at is not None and row.exit_code is None
    assert jobs.job_logs(ctx, world.alice, queued.id) == ""
    assert phases_in_order(events(ctx, queued.id)) == ["Queued", "Stopping", "Cancelled"]
    assert job_row(ctx, blocker.id).phase == "Running"


def test_max_runtime_fails_the_job(world):
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    job = jobs.submit_job(ctx, world.alice, spec("slow", ["sleep", "60"], max_runtime=1))
    assert job.max_runtime == 1
    drive_until(loop, job.id, "Running")
    t0 = time.monotonic()
    row = drive_until(loop, job.id, "Failed", timeout=6)
    assert time.monotonic() - t0 < within(4)
    assert "max_runtime" in row.reason
    assert events(ctx, job.id)[-1].reason == "DeadlineExceeded"


def test_exact_cuda_visible_devices_and_no_secrets(world, monkeypatch):
    monkeypatch.setenv("CRATER_ADMIN_PASSWORD", "crater-admin-s3cret")
    monkeypatch.setenv("DB_PASSWORD", "db-s3cret")
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    show = ["sh", "-c", 'echo "CVD=$CUDA_VISIBLE_DEVICES NVD=$NVIDIA_VISIBLE_DEVICES ORDER=$CUDA_DEVICE_ORDER"; env; sleep 30']
    # small CPU requests: three jobs at once must fit a 2-core machine (a job naming no cpu asks for 1 core)
    first = jobs.submit_job(ctx, world.alice, spec("two", show, resources={"nvidia.com/gpu": 2, "cpu": "100m"}))
    drive_until(loop, first.id, "Running")
    second = jobs.submit_job(ctx, world.alice, spec("one", show, resources={"nvidia.com/gpu": "1", "cpu": "100m"}))
    drive_until(loop, second.id, "Running")
    cpu = jobs.submit_job(ctx, world.alice, spec("cpu", show, resources={"cpu": "100m"}))
    drive_until(loop, cpu.id, "Running")

    def line(job_id):
        return wait_for(lambda: jobs.job_logs(ctx, world.alice, job_id).split("\n", 1)[0], 5, what="first log line")

    assert line(first.id) == "CVD=0,1 NVD=0,1 ORDER=PCI_BUS_ID"
    assert line(second.id) == "CVD=2 NVD=2 ORDER=PCI_BUS_ID"
    assert line(cpu.id) == "CVD= NVD=void ORDER=PCI_BUS_ID"
    assert jobs.get_job(ctx, world.alice, first.id).devices == [0, 1]
    assert jobs.get_job(ctx, world.alice, second.id).devices == [2]
    assert jobs.get_job(ctx, world.alice, cpu.id).devices == []
    logs = jobs.job_logs(ctx, world.alice, first.id)
    assert "s3cret" not in logs and "CRATER_ADMIN_PASSWORD" not in logs
    assert f"CRATER_JOB_UID={first.uid}" in logs


def test_queued_job_says_what_it_waits_for_then_starts(world):
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    big = jobs.submit_job(ctx, world.alice, spec("big", ["sleep", "60"], resources={"nvidia.com/gpu": 3}))
    drive_until(loop, big.id, "Running")
    waiting = jobs.submit_job(ctx, world.bob, spec("waiting", ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES"],
                                                    resources={"nvidia.com/gpu": 2}))
    wait_for(lambda: job_row(ctx, waiting.id).reason_code == "placement.waiting_unbounded", 5, step=loop.step,
             what="the waiting reason")
    row = job_row(ctx, waiting.id)
    assert row.reason == "waiting for 2 × nvidia.com/gpu; 1 × nvidia.com/gpu free; no estimate of its start"
    assert row.reason_args == {"request": {"nvidia.com/gpu": 2}, "free": {"nvidia.com/gpu": 1}, "expected_at": None}
    assert job_row(ctx, waiting.id).phase == "Queued"
    jobs.cancel_job(ctx, world.alice, big.id)
    row = drive_until(loop, waiting.id, "Succeeded")
    assert row.devices == [0, 1]
    assert jobs.job_logs(ctx, world.bob, waiting.id).strip() == "0,1"


def test_priority_order(world):
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    four = {"nvidia.com/gpu": 4}
    blocker = jobs.submit_job(ctx, world.alice, spec("blocker", ["sleep", "60"], resources=four))
    drive_until(loop, blocker.id, "Running")
    low = jobs.submit_job(ctx, world.alice, spec("low", ["sleep", "60"], resources=four, priority=0))
    high = jobs.submit_job(ctx, world.bob, spec("high", ["sleep", "60"], resources=four, priority=10))
    loop.step()
    jobs.cancel_job(ctx, world.admin, blocker.id)
    drive_until(loop, high.id, "Running")
    assert job_row(ctx, low.id).phase == "Queued"
    jobs.cancel_job(ctx, world.bob, high.id)
    drive_until(loop, low.id, "Running")
    assert job_row(ctx, low.id).started_at > job_row(ctx, high.id).started_at


def test_visibility_and_permissions(world):
    ctx = world.ctx
    job = jobs.submit_job(ctx, world.alice, spec("mine", ["sleep", "60"]))
    for call in (jobs.get_job, jobs.job_events, jobs.job_logs, jobs.cancel_job, jobs.resubmit_job):
        with pytest.raises(NotFound):
            call(ctx, world.bob, job.id)
    assert jobs.list_jobs(ctx, world.bob).total == 0
    assert jobs.list_jobs(ctx, world.admin).total == 1
    assert jobs.get_job(ctx, world.admin, job.id).user == "alice"
    with pytest.raises(Forbidden):
        jobs.submit_job(ctx, world.guest, spec("guest-job"))
    with pytest.raises(NotFound):
        jobs.submit_job(ctx, world.alice, spec("x", project="no-such-project"))
    assert jobs.cancel_job(ctx, world.admin, job.id).id == job.id
    with pytest.raises(NotFound):
        jobs.get_job(ctx, world.alice, 999999)


def test_bad_and_impossible_requests_write_nothing(world):
    ctx = world.ctx
    before = counts(ctx)
    with pytest.raises(Unschedulable) as info:
        jobs.submit_job(ctx, world.alice, spec("huge", resources={"nvidia.com/gpu": 8}))
    assert info.value.field == "resources.nvidia.com/gpu"
    assert info.value.message == "largest node has 4 × nvidia.com/gpu; one replica cannot get 8"
    with pytest.raises(Unschedulable) as info:
        jobs.submit_job(ctx, world.alice, spec("h100", resources={"nvidia.com/gpu": 1}, accelerator_model="NVIDIA-H100"))
    assert info.value.field == "accelerator_model"
    with pytest.raises(InvalidInput):
        jobs.submit_job(ctx, world.alice, spec("Bad_Name"))
    with pytest.raises(Unschedulable):
        jobs.submit_job(ctx, world.alice, spec("mem", resources={"memory": "100Pi"}))
    assert counts(ctx) == before


def test_resources_are_stored_and_shown_as_they_are_enforced(world):
    """" 1 ", "-0" and "1.0" were kept as typed; what is shown is now the canonical quantity the limits use."""
    ctx = world.ctx
    job = jobs.submit_job(ctx, world.alice, spec("canon", ["true"], resources={
        "cpu": " 0.5 ", "memory": "1.0Gi", "nvidia.com/gpu": "1.0", "example.com/fpga": "-0"}))
    shown = {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1", "example.com/fpga": "0"}
    assert job.resources == shown and jobs.get_job(ctx, world.alice, job.id).resources == shown
    assert (job_row(ctx, job.id).cpu_m, job_row(ctx, job.id).memory_bytes, job.gpus) == (500, 2**30, 1)
    again = jobs.resubmit_job(ctx, world.alice, job.id)
    assert again.resources == shown


def test_resubmit_copies_the_spec(world):
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    first = jobs.submit_job(ctx, world.alice, spec("again", ["sh", "-c", "echo run"], env={"K": "v"},
                                                    resources={"nvidia.com/gpu": 1}, max_runtime="1h", priority=3))
    drive_until(loop, first.id, "Succeeded")
    second = jobs.resubmit_job(ctx, world.alice, first.id)
    assert second.id != first.id and second.uid != first.uid and second.resubmitted_from == first.id
    assert (second.command, second.env, second.resources, second.max_runtime, second.priority) == (
        first.command, first.env, first.resources, 3600, 3)
    drive_until(loop, second.id, "Succeeded")
    assert jobs.job_logs(ctx, world.alice, second.id) == "run\n"


@pytest.mark.both_databases
def test_list_jobs_filters_and_pages(world):
    ctx = world.ctx
    ids = [jobs.submit_job(ctx, world.alice, spec(f"job-{i}", ["sleep", "60"])).id for i in range(5)]
    jobs.submit_job(ctx, world.bob, spec("bobs", ["sleep", "60"]))
    page = jobs.list_jobs(ctx, world.alice, page_size=2)
    assert page.total == 5 and [j.id for j in page.items] == ids[::-1][:2]
    assert [j.id for j in jobs.list_jobs(ctx, world.alice, page=3, page_size=2).items] == [ids[0]]
    assert jobs.list_jobs(ctx, world.alice, q="job-3").total == 1
    assert jobs.list_jobs(ctx, world.alice, q="%").total == 0
    assert jobs.list_jobs(ctx, world.alice, phase="Running").total == 0
    assert jobs.list_jobs(ctx, world.alice, phase="Queued").total == 5
    assert jobs.list_jobs(ctx, world.admin).total == 6
    for kwargs, field in (({"phase": "Done"}, "phase"), ({"page": 0}, "page"), ({"page_size": 0}, "page_size"),
                          ({"page_size": 201}, "page_size"), ({"q": "x" * 64}, "q")):
        with pytest.raises(InvalidInput) as info:
            jobs.list_jobs(ctx, world.alice, **kwargs)
        assert info.value.field == field
