"""services.jobs.submit_job applies the cpu/memory defaults (the console's form and the API both submit through
it), admission and placement count them, and a resubmission keeps them."""

from __future__ import annotations

from crater_app.services import jobs, quotas
from tests.helpers import job_row


def test_submit_applies_the_defaults_and_admission_counts_them(world):
    ctx = world.ctx
    job = jobs.submit_job(ctx, world.alice, {"name": "plain", "command": ["true"]})
    assert job.resources == {"cpu": "1", "memory": "2Gi"}
    row = job_row(ctx, job.id)
    assert (row.cpu_m, row.memory_bytes) == (1000, 2 * 1024**3)
    used = quotas.get_quota(ctx, world.admin, "default").used
    assert used == {"cpu": "1", "memory": str(2 * 1024**3)}
    again = jobs.resubmit_job(ctx, world.alice, job.id)
    assert again.resources == job.resources


def test_one_named_resource_keeps_the_other_default(world):
    ctx = world.ctx
    only_memory = jobs.submit_job(ctx, world.alice, {"name": "mem", "command": ["true"], "resources": {"memory": "8Gi"}})
    assert only_memory.resources == {"memory": "8Gi", "cpu": "1"}
    ctx.settings = ctx.settings.model_copy(update={"default_job_cpu": "", "default_job_memory": "1Gi"})
    only_cpu = jobs.submit_job(ctx, world.alice, {"name": "cpu", "command": ["true"], "resources": {"cpu": "500m"}})
    assert only_cpu.resources == {"cpu": "500m", "memory": "1Gi"}
    none_set = jobs.submit_job(ctx, world.alice, {"name": "none", "command": ["true"]})
    assert none_set.resources == {"memory": "1Gi"}
