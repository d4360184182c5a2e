"""Backfill where a job can wait: the local backend's queue (real processes) and Crater's admission (fair share and
project quotas, on the FakeBackend boundary). A 1-GPU job starts ahead of a blocked 2-GPU job on an idle GPU, as
long as it cannot delay it; the waiting jobs say what they wait for, behind which job, and when it is
expected to start."""

from __future__ import annotations

import pytest

from crater_app.services import admission, jobs, projects, quotas
from crater_app.services.reconcile import LeaderLoop
from tests.conftest import gpu_devices, populate
from tests.fakes import FakeBackend
from tests.helpers import drive_until, job_row, signed_in, spec, two_teams, wait_for

GPU = "nvidia.com/gpu"


@pytest.mark.local_backend
def test_local_backend_starts_a_bounded_job_on_the_idle_gpu_ahead_of_a_blocked_one(make_ctx):
    world = populate(make_ctx(gpus=2))
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    running = jobs.submit_job(ctx, world.alice, spec("running", ["sleep", "60"], resources={GPU: 1}, max_runtime="14m"))
    drive_until(loop, running.id, "Running")
    head = jobs.submit_job(ctx, world.bob, spec("head", ["sleep", "60"], resources={GPU: 2}))
    short = jobs.submit_job(ctx, world.alice, spec("short", ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES"],
                                                   resources={GPU: 1}, max_runtime="10m"))
    row = drive_until(loop, short.id, "Succeeded", timeout=15)
    assert row.devices == [1] and jobs.job_logs(ctx, world.alice, short.id).strip() == "1"
    assert job_row(ctx, head.id).phase == "Queued" and job_row(ctx, running.id).phase == "Running"
    # An unbounded 1-GPU job would hold the GPU past the head's start: it waits, and says behind which job.
    open_ended = jobs.submit_job(ctx, world.alice, spec("open-ended", ["sleep", "60"], resources={GPU: 1}))
    waiting = wait_for(lambda: (r := job_row(ctx, open_ended.id)).reason_code == "placement.queued" and r, 10,
                       step=loop.step, what="a queued reason")
    assert waiting.phase == "Queued" and waiting.reason_args["blocker_id"] == head.id
    assert waiting.reason_args["blocker_request"] == {GPU: 2} and waiting.reason_args["position"] == 2
    assert waiting.reason.startswith(f"position 2: behind job #{head.id} (2 × nvidia.com/gpu), expected start within ")
    head_row = job_row(ctx, head.id)
    assert head_row.reason_code == "placement.waiting" and head_row.reason_args["request"] == {GPU: 2}
    assert head_row.reason_args["expected_at"] > running.created_at.isoformat()
    assert 13 * 60 <= head_row.reason_args["wait"] <= 14 * 60
    assert jobs.get_job(ctx, world.alice, open_ended.id).reason_code == "placement.queued"
    # The head starts when the running job ends, before the unbounded job.
    jobs.cancel_job(ctx, world.alice, running.id)
    assert drive_until(loop, head.id, "Running", timeout=15).devices == [0, 1]
    assert job_row(ctx, open_ended.id).phase == "Queued"


@pytest.fixture
def fair(make_ctx):
    """A FakeBackend with 2 GPUs and fair share on: vision (alice) deserves 2, speech (bob) 1."""
    fake = FakeBackend(gpu_devices(2))
    world = populate(make_ctx(backend=fake))
    world.alice, world.bob = two_teams(world, (2, 1), names=("vision", "speech"))
    return world, fake


def test_admission_lets_a_bounded_job_pass_a_blocked_one_that_it_cannot_delay(fair):
    world, fake = fair
    ctx, loop = world.ctx, LeaderLoop(world.ctx)
    other = jobs.submit_job(ctx, world.bob, spec("other", ["sleep", "600"], project="speech", resources={GPU: 1},
                                                 max_runtime="14m"))
    drive_until(loop, other.id, "Running")
    head = jobs.submit_job(ctx, world.alice, spec("head", ["sleep", "60"], project="vision", resources={GPU: 2}))
    assert (head.phase, head.reason_code) == ("Held", "fairshare")
    assert head.reason_args["expected_at"] and head.reason.endswith("Expected start within 14m.")
    # Submitted while a GPU is idle: the bounded job is admitted at once, the unbounded one waits behind the head.
    short = jobs.submit_job(ctx, world.alice, spec("short", ["sleep", "1"], project="vision", resources={GPU: 1},
                                                   max_runtime="10m"))
    assert short.phase == "Queued" and short.admitted_at is not None
    open_ended = jobs.submit_job(ctx, world.alice, spec("open", ["sleep", "60"], project="vision", resources={GPU: 1}))
    assert (open_ended.phase, open_ended.reason_code) == ("Held", "queue")
    assert open_ended.reason_args["blocker_id"] == head.id and open_ended.reason_args["blocker_request"] == {GPU: 2}
    # (with the short job admitted, vision is at its deserved share: the head waits for machine capacity now)
    assert open_ended.reason_args["blocker"] == "capacity"
    assert open_ended.reason.startswith(
        f"Position 2 of 2 in the queue of project vision: behind job #{head.id} (2 × nvidia.com/gpu), held by the "
        "machine capacity;")
    drive_until(loop, short.id, "Succeeded")
    # The loop's rounds decide the same way: the unbounded job keeps waiting for the head.
    result = admission.admission_round(ctx)
    assert result.admitted == []
    assert job_row(ctx, open_ended.id).reason_code == "queue" and job_row(ctx, head.id).phase == "Held"
    zh = jobs.get_job(ctx, world.alice, open_ended.id)
    text = admission.reason_text("zh-CN", zh.reason_code, zh.reason_args, zh.reason)
    assert text.startswith(f"在项目 vision 的队列中排第 2 位（共 2 个）：在作业 #{head.id}（2 × nvidia.com/gpu，因")
    assert "分钟内启动" in text
    # When the other project's job ends, the head starts first.
    jobs.cancel_job(ctx, world.bob, other.id)
    drive_until(loop, head.id, "Running")
    assert job_row(ctx, open_ended.id).phase == "Held"


def test_admission_backfills_inside_a_project_quota(make_ctx):
    fake = FakeBackend(gpu_devices(8))
    world = populate(make_ctx(backend=fake))
    ctx, admin = world.ctx, world.admin
    projects.create_project(ctx, admin, "lab")
    projects.set_member(ctx, admin, "lab", "alice", "member")
    quotas.set_quota(ctx, admin, "lab", {"capability": {GPU: 2}})
    alice = signed_in(world, "alice")
    loop = LeaderLoop(ctx)
    first = jobs.submit_job(ctx, alice, spec("first", ["sleep", "600"], project="lab", resources={GPU: 1},
                                             max_runtime="30m"))
    drive_until(loop, first.id, "Running")
    head = jobs.submit_job(ctx, alice, spec("head", ["sleep", "60"], project="lab", resources={GPU: 2}))
    assert (head.phase, head.reason_code) == ("Held", "quota") and head.reason_args["expected_at"]
    long = jobs.submit_job(ctx, alice, spec("long", ["sleep", "60"], project="lab", resources={GPU: 1},
                                            max_runtime="1h"))
    short = jobs.submit_job(ctx, alice, spec("short", ["sleep", "60"], project="lab", resources={GPU: 1},
                                             max_runtime="20m"))
    assert (long.phase, long.reason_code, long.reason_args["blocker_id"]) == ("Held", "queue", head.id)
    assert short.phase == "Queued", "it ends before the first job, so the head is not delayed"
