"""``make_ctx`` builds service contexts on the in-memory fake backend unless the test is about the local backend
(marker ``local_backend``) or passes a backend; contexts on one data folder share one cluster."""

from __future__ import annotations

import pytest

from crater_app.cluster.local import LocalBackend
from crater_app.services import jobs
from crater_app.services.reconcile import LeaderLoop
from tests.conftest import populate
from tests.fakes import FakeBackend
from tests.helpers import drive_until, spec


def test_the_fake_by_default(make_ctx, tmp_path):
    ctx = make_ctx()
    assert isinstance(ctx.backend, FakeBackend)
    [node] = ctx.backend.inventory()
    assert len(node.devices) == 4 and {d.model for d in node.devices} == {"NVIDIA-A100-SXM4-80GB"}
    assert len(make_ctx(data_dir=tmp_path / "other", gpus=2).backend.inventory()[0].devices) == 2


def test_contexts_on_one_data_folder_share_one_fake_cluster(make_ctx, tmp_path):
    first, second = make_ctx(), make_ctx()
    assert first.backend is second.backend and first.engine is not second.engine
    assert make_ctx(data_dir=tmp_path / "elsewhere").backend is not first.backend
    world = populate(first)
    job = jobs.submit_job(second, world.alice, spec("shared", ["sh", "-c", "echo hi"]))
    assert drive_until(LeaderLoop(first), job.id, "Succeeded").exit_code == 0
    assert first.backend.status(job.uid).raw_state == "Succeeded"


def test_a_backend_by_name_or_instance(make_ctx, tmp_path):
    assert isinstance(make_ctx(backend="local", data_dir=tmp_path / "l").backend, LocalBackend)
    assert isinstance(make_ctx(backend="fake", data_dir=tmp_path / "f").backend, FakeBackend)
    mine = FakeBackend([])
    assert make_ctx(backend=mine, data_dir=tmp_path / "m").backend is mine
    with pytest.raises(ValueError, match="'fake' or 'local'"):
        make_ctx(backend="kubernetes")


@pytest.mark.local_backend
def test_the_marker_asks_for_the_local_backend(make_ctx, world):
    assert isinstance(make_ctx().backend, LocalBackend) and isinstance(world.ctx.backend, LocalBackend)
    job = jobs.submit_job(world.ctx, world.alice, spec("real", ["sh", "-c", "echo $CRATER_JOB_UID"]))
    drive_until(LeaderLoop(world.ctx), job.id, "Succeeded")
    assert jobs.job_logs(world.ctx, world.alice, job.id).strip() == job.uid  # a real process printed it
