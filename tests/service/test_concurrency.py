"""20 concurrent submissions on a 4-GPU machine while the leader loop runs: no device is ever shared."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from crater_app.services import jobs
from crater_app.services.reconcile import LeaderLoop
from tests.helpers import spec, wait_for

pytestmark = [pytest.mark.both_databases, pytest.mark.local_backend]  # races on the local backend's devices

# Each job records its devices and a start/end time taken inside the job's lifetime. If two recorded
# intervals overlap, the jobs really ran at the same time, so they must not share a device index.
SCRIPT = 'a=$(date +%s.%N); sleep 0.15; b=$(date +%s.%N); echo "$CUDA_VISIBLE_DEVICES $a $b" > "$OUT/$JOB"'


def test_twenty_concurrent_submissions_never_share_a_device(world, tmp_path):
    ctx = world.ctx
    loop = LeaderLoop(ctx)
    runner = threading.Thread(target=loop.run, daemon=True)
    runner.start()
    out = tmp_path / "records"
    out.mkdir()
    actors = [world.alice, world.bob, world.admin]
    barrier = threading.Barrier(20)

    def submit(i: int):
        barrier.wait()
        gpus = 1 + i % 2
        return jobs.submit_job(ctx, actors[i % 3], spec(
            f"conc-{i}", ["sh", "-c", SCRIPT], env={"OUT": str(out), "JOB": f"conc-{i}"},
            resources={"nvidia.com/gpu": gpus},
        )), gpus

    try:
        with ThreadPoolExecutor(max_workers=20) as pool:
            submitted = list(pool.map(submit, range(20)))
        ids = [job.id for job, _ in submitted]
        assert len(set(ids)) == 20

        def all_done():
            page = jobs.list_jobs(ctx, world.admin, page_size=50)
            return all(j.phase in ("Succeeded", "Failed", "Cancelled") for j in page.items) and page

        page = wait_for(all_done, timeout=60, interval=0.1, what="all 20 jobs to finish")
    finally:
        loop.stop()
        runner.join(10)
    assert page.total == 20
    by_name = {j.name: j for j in page.items}
    assert {j.phase for j in page.items} == {"Succeeded"}, [(j.name, j.phase, j.reason) for j in page.items]

    intervals = []
    for job, gpus in submitted:
        devices_text, start, end = Path(out / job.name).read_text().split()
        devices = [int(d) for d in devices_text.split(",")]
        assert len(devices) == gpus and all(0 <= d < 4 for d in devices)
        assert by_name[job.name].devices == devices, "the recorded devices are the ones Crater assigned"
        intervals.append((job.name, set(devices), float(start), float(end)))
    for i, (name_a, dev_a, s_a, e_a) in enumerate(intervals):
        for name_b, dev_b, s_b, e_b in intervals[i + 1:]:
            if s_a < e_b and s_b < e_a:
                assert not dev_a & dev_b, f"{name_a} and {name_b} ran at the same time on devices {dev_a & dev_b}"
    overlapping = sum(1 for i, a in enumerate(intervals) for b in intervals[i + 1:] if a[2] < b[3] and b[2] < a[3])
    assert overlapping > 0, "the test must actually run jobs side by side"
