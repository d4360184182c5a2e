"""The local backend's replica rules: devices split per replica, file and cgroup names, specs of older rows."""

from __future__ import annotations

import json

import pytest

from crater_app.cluster.local.replicas import cgroup_of, files_of, live_records, split_devices, uid_of_cgroup
from crater_app.cluster.local.specs import TaskSpec, tasks_of

GPU, NPU = "nvidia.com/gpu", "huawei.com/Ascend910"
KINDS = {0: GPU, 1: GPU, 2: GPU, 3: GPU, 4: NPU, 5: NPU}


def _task(name, replicas, **accelerators):
    return TaskSpec(name=name, replicas=replicas, argv=("true",),
                    accelerators={GPU if k == "gpu" else NPU: v for k, v in accelerators.items()})


@pytest.mark.parametrize(("tasks", "devices", "expected"), [
    ([_task("main", 1, gpu=2)], (0, 1), [(0, 1)]),
    ([_task("master", 1, gpu=1), _task("worker", 2, gpu=1)], (1, 2, 3), [(1,), (2,), (3,)]),
    ([_task("ps", 1), _task("worker", 2, gpu=2)], (0, 1, 2, 3), [(), (0, 1), (2, 3)]),
    ([_task("mixed", 2, gpu=1, npu=1)], (0, 4, 1, 5), [(0, 4), (1, 5)]),  # each resource in its own turn
])
def test_split_devices(tasks, devices, expected):
    assert split_devices(tasks, devices, KINDS) == expected


@pytest.mark.parametrize(("task", "index", "count", "files", "cgroup"), [
    ("main", 0, 1, ("output.log", "exit_code"), "u1"),  # one replica: the single-job layout
    ("worker", 1, 3, ("logs/worker-1.log", "logs/worker-1.exit"), "u1.worker-1"),
])
def test_names(task, index, count, files, cgroup):
    assert files_of(task, index, count) == files and cgroup_of("u1", task, index, count) == cgroup
    assert uid_of_cgroup(cgroup) == "u1"


def test_a_spec_without_tasks_is_one_task_of_one_replica_with_the_rows_request():
    old = {"name": "n", "user": "alice", "image": "img", "command": ["sh", "-c", "x"], "env": {"A": "1"},
           "working_dir": "w"}
    assert tasks_of(old, 500, 1024, {GPU: 1}) == [TaskSpec(
        name="main", replicas=1, argv=("sh", "-c", "x"), env={"A": "1"}, working_dir="w", cpu_m=500,
        memory_bytes=1024, accelerators={GPU: 1}, image="img")]


def test_a_row_of_one_replica_without_records_gets_one_from_its_columns():
    [record] = live_records("", 42, 1.5, '{"amounts": {}}', "[3]")
    assert record == {"task": "main", "replica": 0, "pid": 42, "pid_start": 1.5, "limits": '{"amounts": {}}',
                      "devices": [3], "log": "output.log", "exit": "exit_code"}
    written = [{"task": "w", "replica": 0, "pid": 7}]
    assert live_records(json.dumps(written), 42, 1.5, "{}", "[]") == written


def test_a_workload_of_tasks_reads_back_from_its_spec():
    from datetime import datetime, timezone

    from crater_app.cluster.base import Port, Task, Workload
    from crater_app.cluster.local.specs import encode
    from crater_app.domain.resources import parse_resources

    w = Workload(uid="u", name="n", project="p", user="alice", kind="pytorch", created_at=datetime.now(timezone.utc),
                 min_available=2, restart_policy="restart", max_retry=3, tasks=(
                     Task(name="master", replicas=1, image="img", command=("python",), args=("train.py",),
                          resources=parse_resources({"cpu": "2", "nvidia.com/gpu": 1}), ends_job=True,
                          ports=(Port("rdzv", 29500),)),
                     Task(name="worker", replicas=2, image="img", command=("python", "train.py"), env={"X": "1"})))
    spec = json.loads(json.dumps(encode(w)))
    assert (spec["kind"], spec["min_available"], spec["restart_policy"], spec["max_retry"]) == ("pytorch", 2,
                                                                                                "restart", 3)
    master, worker = tasks_of(spec)
    assert master == TaskSpec(name="master", replicas=1, argv=("python", "train.py"), cpu_m=2000,
                              accelerators={GPU: 1}, ports=(("rdzv", 29500),), ends_job=True, image="img")
    assert (worker.replicas, worker.env, worker.cpu_m, worker.accelerators) == (2, {"X": "1"}, 0, {})
