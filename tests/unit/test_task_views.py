"""The job page's task blocks, memory sizes and the log's restart count (state.task_views)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from crater_app.schemas import JobPublic
from crater_app.state import views
from crater_app.state.task_views import localized_tasks, log_restarts, memory_text, task_rows

GPU = "nvidia.com/gpu"


def _job(**over) -> JobPublic:
    now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    data = dict(id=7, uid="u", name="j", project="default", user="alice", image="local/host", command=["python3"],
                env={}, working_dir=None, phase="Running", reason="", exit_code=None,
                resources={"cpu": "1500m", "memory": "1610612736", GPU: "3"}, accelerator_model=None, gpus=3,
                devices=[0, 1, 2], max_runtime=None, priority=0, created_at=now, started_at=now, finished_at=None)
    data.update(over)
    return JobPublic(**data)


@pytest.mark.parametrize(("quantity", "shown"), [
    ("1610612736", "1.5 GiB"),  # a multi-task job's total, in bytes
    ("4Gi", "4 GiB"),  # a single-task job's as submitted
    ("512Mi", "512 MiB"),
    (2048, "2 KiB"),
    ("1G", "953.67 MiB"),
    ("", ""),
    (None, ""),
    ("lots", "lots"),  # not a quantity (an old row): as written
])
def test_memory_text(quantity, shown):
    assert memory_text(quantity) == shown


def test_the_detail_shows_memory_as_a_size():
    assert views.job_detail(_job())["memory"] == "1.5 GiB"
    assert views.job_detail(_job(resources={"cpu": "2", "memory": "8Gi"}))["memory"] == "8 GiB"
    assert views.job_detail(_job(resources={"cpu": "2"}))["memory"] == ""


TASKS = [
    {"name": "master", "replicas": 1, "image": "i", "command": ["python3", "-u"], "args": ["train.py", "--lr=0.1"],
     "resources": {"cpu": "500m", "memory": "512Mi", GPU: 1}},
    {"name": "worker", "replicas": 2, "image": "i", "command": ["python3"], "args": [],
     "resources": {"cpu": "1", GPU: 1}},
]


def test_one_block_per_task_with_command_then_args():
    rows, argvs = task_rows(_job(tasks=TASKS))
    assert [(r["name"], r["replicas"]) for r in rows] == [("master", "1"), ("worker", "2")]
    assert argvs == [["python3", "-u", "train.py", "--lr=0.1"], ["python3"]]
    en = localized_tasks("en", rows)
    zh = localized_tasks("zh-CN", rows)
    assert [r["resources_text"] for r in en] == ["1 × nvidia.com/gpu, 0.5 cores, 512 MiB memory",
                                                 "1 × nvidia.com/gpu, 1 core"]
    assert zh[0]["resources_text"] == "1 × nvidia.com/gpu、0.5 核 CPU、512 MiB 内存"


@pytest.mark.parametrize("tasks", [[], TASKS[:1]])
def test_a_single_task_job_has_no_blocks(tasks):
    assert task_rows(_job(tasks=tasks)) == ([], [])


def test_resources_that_do_not_parse_are_shown_as_given():
    rows, _ = task_rows(_job(tasks=[{**TASKS[0], "resources": {"cpu": "a lot"}}, TASKS[1]]))
    assert localized_tasks("en", rows)[0]["resources_text"] == "cpu a lot"


ROWS = [{"key": "master/0", "restarts": "2"}, {"key": "worker/0", "restarts": "0"}, {"key": "worker/1",
                                                                                     "restarts": "1"}]


@pytest.mark.parametrize(("key", "shown"), [
    ("", "2"),  # the first replica's log by default
    ("worker/1", "1"),
    ("worker/0", ""),  # never restarted: nothing to show
    ("worker/9", ""),  # not one of the job's
])
def test_log_restarts(key, shown):
    assert log_restarts(ROWS, key) == shown


def test_no_replicas_no_restarts():
    assert log_restarts([], "") == ""
