"""domain.job_tasks + job_kinds: the tasks form of a job spec, kinds' shapes and defaults, the normalized tasks."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import InvalidInput
from crater_app.domain.job_defaults import with_default_resources
from crater_app.domain.job_kinds import RENDEZVOUS_PORT, RENDEZVOUS_PORT_NAME, normalize_tasks, rendezvous_port
from crater_app.domain.job_tasks import MAX_REPLICAS, MAX_REPLICAS_PER_TASK, MAX_TASKS, TaskPort
from crater_app.domain.jobs import validate_spec
from crater_app.domain.resources import ResourceList

GiB = 1024**3


def task(name="worker", **over) -> dict:
    raw = {"name": name, "command": ["python", "train.py"]}
    raw.update(over)
    return raw


def job(*tasks: dict, **over) -> dict:
    raw = {"name": "ddp", "tasks": list(tasks) or [task()]}
    raw.update(over)
    return raw


DDP = job(task("master", resources={"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 1}),
          task("worker", replicas=3, resources={"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 1}),
          kind="pytorch")


def rejects(raw, field, *words, lang="en") -> InvalidInput:
    with pytest.raises(InvalidInput) as info:
        validate_spec(raw)
    err = info.value
    assert err.field == field, (err.code, err.field, err.message)
    message = err.message_in(lang)
    for word in words:
        assert word in message, message
    return err


def test_the_single_task_form_is_one_task_main_of_one_replica():
    spec = validate_spec({"name": "a", "command": ["python", "x.py"], "env": {"A": "1"}, "working_dir": "w",
                          "resources": {"cpu": "500m", "nvidia.com/gpu": 1}})
    plan = normalize_tasks(spec)
    (only,) = plan.tasks
    assert (only.name, only.replicas, only.command, only.env, only.working_dir, only.ends_job, only.path) == (
        "main", 1, ("python", "x.py"), {"A": "1"}, "w", False, "")
    assert only.resources == ResourceList(cpu_m=500, accelerators={"nvidia.com/gpu": 1})
    assert plan.min_available == 1 and plan.totals == only.resources
    assert only.field("resources", "nvidia.com/gpu") == "resources.nvidia.com/gpu"


def test_a_pytorch_job_is_normalized_with_its_master_ending_the_job_and_the_totals_over_all_replicas():
    spec = validate_spec(DDP)
    plan = normalize_tasks(spec)
    master, worker = plan.tasks
    assert (master.name, master.replicas, master.ends_job) == ("master", 1, True)
    assert (worker.name, worker.replicas, worker.ends_job) == ("worker", 3, False)
    assert master.ports == worker.ports == (TaskPort(RENDEZVOUS_PORT_NAME, RENDEZVOUS_PORT, "TCP"),)
    assert plan.min_available == 4 and plan.replica_count == 4
    assert plan.totals == ResourceList(cpu_m=16000, memory_bytes=64 * GiB, accelerators={"nvidia.com/gpu": 4})
    assert spec.resource_list == plan.totals
    assert worker.field("resources", "nvidia.com/gpu") == "tasks[1].resources.nvidia.com/gpu"
    assert spec.tasks[0].resources == {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}  # canonical form


def test_the_masters_named_port_is_the_rendezvous_port_of_every_task():
    spec = validate_spec(job(task("master", ports=[{"name": RENDEZVOUS_PORT_NAME, "port": 29500}]),
                             task("worker", replicas=2), kind="pytorch"))
    plan = normalize_tasks(spec)
    assert rendezvous_port(plan.tasks) == 29500
    assert plan.tasks[1].ports == (TaskPort(RENDEZVOUS_PORT_NAME, 29500, "TCP"),)


def test_an_mpi_job_has_its_launcher_end_the_job_and_workers_are_optional():
    plan = normalize_tasks(validate_spec(job(task("launcher"), task("worker", replicas=2), kind="mpi")))
    assert [(t.name, t.ends_job, t.ports) for t in plan.tasks] == [("launcher", True, ()), ("worker", False, ())]
    plan = normalize_tasks(validate_spec(job(task("launcher"), kind="mpi")))
    assert plan.replica_count == 1


def test_a_batch_job_takes_any_tasks_and_a_smaller_gang():
    spec = validate_spec(job(task("ps", replicas=2, args=["--role", "ps"]), task("worker", replicas=8),
                             min_available=4))
    plan = normalize_tasks(spec)
    assert plan.min_available == 4 and not any(t.ends_job for t in plan.tasks)
    assert plan.tasks[0].args == ("--role", "ps") and plan.tasks[0].command == ("python", "train.py")


def test_an_interactive_session_has_its_ports():
    spec = validate_spec(job(task("lab", ports=[{"name": "http", "port": 8888}]), kind="interactive"))
    assert normalize_tasks(spec).tasks[0].ports == (TaskPort("http", 8888, "TCP"),)


def test_default_resources_apply_to_each_task_per_replica():
    spec = with_default_resources(validate_spec(job(task("a", resources={"cpu": "2"}), task("b", replicas=2))),
                                  {"cpu": "1", "memory": "2Gi"})
    plan = normalize_tasks(spec)
    assert [t.resources for t in plan.tasks] == [ResourceList(cpu_m=2000, memory_bytes=2 * GiB),
                                                 ResourceList(cpu_m=1000, memory_bytes=2 * GiB)]
    assert plan.totals == ResourceList(cpu_m=4000, memory_bytes=6 * GiB)


@pytest.mark.parametrize("raw, field, words", [
    # the two forms
    ({**job(), "command": ["x"]}, "command", ["command cannot be given together with tasks"]),
    ({**job(), "resources": {"cpu": 1}}, "resources", ["resources cannot be given together with tasks"]),
    ({**job(), "image": "busybox"}, "image", ["image"]),
    ({"name": "a"}, "command", ["command is required"]),
    (job(tasks=[]), "tasks", ["at least one task"]),
    (job(tasks=[task(f"t{i}") for i in range(MAX_TASKS + 1)]), "tasks", [f"limit is {MAX_TASKS}"]),
    (job(tasks=[task(replicas=MAX_REPLICAS_PER_TASK) for _ in range(5)]), "tasks[1].name", ["tasks[0]"]),
    (job(tasks=[task(f"t{i}", replicas=MAX_REPLICAS_PER_TASK) for i in range(5)]), "tasks",
     [f"limit is {MAX_REPLICAS}"]),
    # one task's fields, by their full path
    (job(task(), task("b"), task("worker")), "tasks[2].name", ["'worker' is already used by tasks[0]"]),
    (job(task("Worker")), "tasks[0].name", ["DNS-1123"]),
    (job(task("t" * 33)), "tasks[0].name", ["at most 32 characters", "has 33"]),
    (job(task(replicas=0)), "tasks[0].replicas", ["1 to 1024"]),
    (job(task(replicas=MAX_REPLICAS_PER_TASK + 1)), "tasks[0].replicas", ["1025"]),
    (job(task(replicas="2")), "tasks[0].replicas", ["must be an integer"]),
    (job(task(), task("b", command=[])), "tasks[1].command", ["at least one argument"]),
    (job(task(command=["python", "a\x00"])), "tasks[0].command[1]", ["NUL"]),
    (job(task(args=["x" * 9000])), "tasks[0].args[0]", ["limit is 8192"]),
    (job(task(env={"CUDA_VISIBLE_DEVICES": "0"})), "tasks[0].env.CUDA_VISIBLE_DEVICES", ["set by Crater"]),
    (job(task(working_dir="/abs")), "tasks[0].working_dir", ["relative"]),
    (job(task(image="UPPER/Case")), "tasks[0].image", ["image reference"]),
    (job(task(resources={"nvidia.com/gpu": "0.5"})), "tasks[0].resources.nvidia.com/gpu", []),
    (job(task(gpus=1)), "tasks[0].gpus", ["unknown field"]),
    (job(task(command="python x.py")), "tasks[0].command", ["must be a list"]),
    # ports
    (job(task(ports=[{"name": "http", "port": 0}])), "tasks[0].ports[0].port", ["1 to 65535"]),
    (job(task(ports=[{"name": "http", "port": 70000}])), "tasks[0].ports[0].port", ["70000"]),
    (job(task(ports=[{"name": "HTTP", "port": 80}])), "tasks[0].ports[0].name", ["15"]),
    (job(task(ports=[{"name": "a-very-long-port-name", "port": 80}])), "tasks[0].ports[0].name", []),
    (job(task(ports=[{"name": "8080", "port": 80}])), "tasks[0].ports[0].name", ["at least one letter"]),
    (job(task(ports=[{"name": "a--b", "port": 80}])), "tasks[0].ports[0].name", []),
    (job(task(ports=[{"name": "a", "port": 80}, {"name": "a", "port": 81}])), "tasks[0].ports[1].name",
     ["'a' is used twice"]),
    (job(task(ports=[{"name": "a", "port": 80}, {"name": "b", "port": 80}])), "tasks[0].ports[1].port",
     ["80/TCP"]),
    (job(task(ports=[{"name": "a", "port": 80, "protocol": "SCTP"}])), "tasks[0].ports[0].protocol",
     ["TCP, UDP"]),
    (job(task(ports=[{"name": f"p{i}", "port": 1000 + i} for i in range(17)])), "tasks[0].ports",
     ["limit is 16"]),
    # gang
    (job(task(replicas=2), min_available=3), "min_available", ["1 to 2"]),
    (job(task(replicas=2), min_available=0), "min_available", ["1 to 2"]),
    ({"name": "a", "command": ["x"], "min_available": 2}, "min_available", ["1 to 1"]),
    # kinds
    (job(task("worker", replicas=2), kind="pytorch"), "tasks", ["pytorch job needs a task named master"]),
    (job(task("master", replicas=2), kind="pytorch"), "tasks[0].replicas", ["exactly 1 replica (got 2)"]),
    (job(task("master"), task("ps"), kind="pytorch"), "tasks[1].name", ["only the tasks master, worker"]),
    ({"name": "a", "command": ["x"], "kind": "pytorch"}, "tasks", ["pytorch job needs a task named master"]),
    (job(task("worker"), kind="mpi"), "tasks", ["mpi job needs a task named launcher"]),
    (job(task("launcher", replicas=3), task("worker"), kind="mpi"), "tasks[0].replicas", ["exactly 1"]),
    (job(task("lab", replicas=2), kind="interactive"), "tasks[0].replicas", ["one session", "2 replicas"]),
    (job(task("a"), task("b"), kind="interactive"), "tasks", ["one session"]),
    (job(kind="slurm"), "kind", ["batch, pytorch, mpi, interactive"]),
    # restart policy
    (job(restart_policy="always"), "restart_policy", ["restart, fail, ignore", "'always'"]),
    (job(max_retry=-1), "max_retry", ["0 to 100"]),
    (job(max_retry=101), "max_retry", ["0 to 100"]),
    # accelerator model without any task asking for a device
    (job(task(), accelerator_model="NVIDIA-A100-SXM4-80GB"), "accelerator_model", ["request no accelerator"]),
])
def test_every_bad_tasks_spec_names_its_field(raw, field, words):
    rejects(raw, field, *words)


def test_the_messages_are_in_chinese_too():
    rejects(job(task(), task("worker")), "tasks[1].name", "已被 tasks[0] 使用", lang="zh-CN")
    rejects(job(task(replicas=2), min_available=3), "min_available", "1 到 2", lang="zh-CN")
    rejects(job(task("worker"), kind="pytorch"), "tasks", "名为 master 的任务", lang="zh-CN")
    rejects({**job(), "command": ["x"]}, "command", "不能与 tasks 同时给出", lang="zh-CN")


def test_an_accelerator_model_with_a_task_asking_for_devices_is_accepted():
    spec = validate_spec(job(task("cpu-only"), task("gpu", resources={"nvidia.com/gpu": 1}),
                             accelerator_model="NVIDIA-A100-SXM4-80GB"))
    assert normalize_tasks(spec).totals.gpus == 1


def test_the_restart_options_have_volcanos_defaults():
    spec = validate_spec(job())
    assert (spec.restart_policy, spec.max_retry) == ("fail", 3)
    spec = validate_spec(job(restart_policy="restart", max_retry=0))
    assert (spec.restart_policy, spec.max_retry) == ("restart", 0)


@pytest.mark.parametrize("raw, field", [
    # the pytorch plugin's variables, in any task of a pytorch job
    (job(task("master", env={"MASTER_ADDR": "x"}), kind="pytorch"), "tasks[0].env.MASTER_ADDR"),
    (job(task("master"), task("worker", env={"MASTER_PORT": "1"}), kind="pytorch"), "tasks[1].env.MASTER_PORT"),
    (job(task("master", env={"WORLD_SIZE": "2"}), kind="pytorch"), "tasks[0].env.WORLD_SIZE"),
    (job(task("master"), task("worker", replicas=2, env={"RANK": "0"}), kind="pytorch"), "tasks[1].env.RANK"),
    # the mpi plugin's host list and the hostfile's variable
    (job(task("launcher", env={"MPI_HOST": "a"}), task("worker"), kind="mpi"), "tasks[0].env.MPI_HOST"),
    (job(task("launcher"), task("worker", env={"CRATER_MPI_HOSTFILE": "/h"}), kind="mpi"),
     "tasks[1].env.CRATER_MPI_HOSTFILE"),
    # the svc plugin's, for every job of several replicas, of its own tasks
    (job(task("a", replicas=2, env={"VC_TASK_INDEX": "0"})), "tasks[0].env.VC_TASK_INDEX"),
    (job(task("a"), task("b", env={"VK_TASK_INDEX": "0"})), "tasks[1].env.VK_TASK_INDEX"),
    (job(task("data-prep", replicas=2, env={"VC_DATA_PREP_HOSTS": "x"})), "tasks[0].env.VC_DATA_PREP_HOSTS"),
    (job(task("a"), task("b", env={"VC_A_NUM": "1"})), "tasks[1].env.VC_A_NUM"),
    (job(task("a", replicas=2, env={"CRATER_HOSTS_DIR": "/x"})), "tasks[0].env.CRATER_HOSTS_DIR"),
])
def test_a_variable_the_backend_sets_for_the_kind_or_the_gang_is_refused(raw, field):
    err = rejects(raw, field, "is set by Crater")
    assert err.code == "job.env_reserved" and err.args_["name"] == field.rsplit(".", 1)[1]


@pytest.mark.parametrize("raw", [
    job(task("a", env={"MASTER_ADDR": "x", "RANK": "3", "MPI_HOST": "h"})),  # a batch job of one replica
    job(task("a", replicas=2, env={"VC_B_HOSTS": "x", "WORLD_SIZE": "2"})),  # no task b; not pytorch
    job(task("master", env={"VC_TASK_INDEX": "0", "MPI_HOST": "h"}), kind="pytorch"),  # one replica, not mpi
])
def test_the_same_names_are_the_jobs_own_where_nothing_sets_them(raw):
    assert validate_spec(raw).tasks
