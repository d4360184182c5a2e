"""The rendezvous rule (crater_app.domain.rendezvous): Volcano's env/svc/pytorch plugin variables and host files."""

from __future__ import annotations

import pytest

from crater_app.domain.rendezvous import (LOOPBACK, env_key, host_file_name, host_files, loopback_hosts, mpi_launcher,
                                          replica_env, reserved_env)

DDP = [("master", 1), ("worker", 3)]
H = {"master": ["m0.job"], "worker": ["w0.job", "w1.job", "w2.job"]}
SVC = {"VC_MASTER_HOSTS": "m0.job", "VC_MASTER_NUM": "1", "VC_WORKER_HOSTS": "w0.job,w1.job,w2.job",
       "VC_WORKER_NUM": "3"}


@pytest.mark.parametrize(("kind", "tasks", "hosts", "task", "replica", "expected"), [
    # one replica of a plain kind: nothing to find
    ("batch", [("main", 1)], {"main": ["h"]}, "main", 0, {}),
    # pytorch: master rank 0, worker i rank i + 1, world = every replica, the master's host and the port
    ("pytorch", DDP, H, "master", 0, {**SVC, "VK_TASK_INDEX": "0", "VC_TASK_INDEX": "0", "MASTER_ADDR": "m0.job",
                                      "MASTER_PORT": "29500", "WORLD_SIZE": "4", "RANK": "0"}),
    ("pytorch", DDP, H, "worker", 0, {**SVC, "VK_TASK_INDEX": "0", "VC_TASK_INDEX": "0", "MASTER_ADDR": "m0.job",
                                      "MASTER_PORT": "29500", "WORLD_SIZE": "4", "RANK": "1"}),
    ("pytorch", DDP, H, "worker", 2, {**SVC, "VK_TASK_INDEX": "2", "VC_TASK_INDEX": "2", "MASTER_ADDR": "m0.job",
                                      "MASTER_PORT": "29500", "WORLD_SIZE": "4", "RANK": "3"}),
    # pytorch of the master alone: world of one
    ("pytorch", [("master", 1)], {"master": ["m"]}, "master", 0,
     {"MASTER_ADDR": "m", "MASTER_PORT": "29500", "WORLD_SIZE": "1", "RANK": "0"}),
    # pytorch without a master task: no pytorch variables (as the plugin), the svc ones still
    ("pytorch", [("trainer", 2)], {"trainer": ["a", "b"]}, "trainer", 1,
     {"VK_TASK_INDEX": "1", "VC_TASK_INDEX": "1", "VC_TRAINER_HOSTS": "a,b", "VC_TRAINER_NUM": "2"}),
    # a task other than master/worker in a pytorch job: no RANK of its own
    ("pytorch", [("master", 1), ("evaluator", 1)], {"master": ["m"], "evaluator": ["e"]}, "evaluator", 0,
     {"VK_TASK_INDEX": "0", "VC_TASK_INDEX": "0", "VC_MASTER_HOSTS": "m", "VC_MASTER_NUM": "1",
      "VC_EVALUATOR_HOSTS": "e", "VC_EVALUATOR_NUM": "1", "MASTER_ADDR": "m", "MASTER_PORT": "29500",
      "WORLD_SIZE": "2"}),
    # batch of several replicas: the svc-style variables, task names with '-' as '_'
    ("batch", [("data-prep", 2)], {"data-prep": ["127.0.0.1", "127.0.0.1"]}, "data-prep", 1,
     {"VK_TASK_INDEX": "1", "VC_TASK_INDEX": "1", "VC_DATA_PREP_HOSTS": "127.0.0.1,127.0.0.1",
      "VC_DATA_PREP_NUM": "2"}),
])
def test_replica_env(kind, tasks, hosts, task, replica, expected):
    assert replica_env(kind, tasks, task, replica, hosts, master_port=29500) == expected


@pytest.mark.parametrize(("tasks", "task", "expected"), [
    ([("launcher", 1), ("worker", 2)], "launcher", "/run/hosts/hostfile"),
    ([("launcher", 1), ("worker", 2)], "worker", None),
    ([("mpimaster", 1), ("mpiworker", 2)], "mpimaster", "/run/hosts/hostfile"),  # the first task
])
def test_the_mpi_launcher_gets_the_hostfile(tasks, task, expected):
    env = replica_env("mpi", tasks, task, 0, loopback_hosts(tasks), hosts_dir="/run/hosts/")
    assert env.get("CRATER_MPI_HOSTFILE") == expected


@pytest.mark.parametrize(("tasks", "hosts", "task", "hosts_dir", "expected"), [
    # the workers' hosts joined with ',' on the launcher, as Volcano's mpi plugin sets MPI_HOST on the master
    ([("launcher", 1), ("worker", 3)], {"launcher": ["l0.job"], "worker": ["w0.job", "w1.job", "w2.job"]},
     "launcher", "", "w0.job,w1.job,w2.job"),
    # on one machine every worker is 127.0.0.1: one slot each; with or without host files
    ([("launcher", 1), ("worker", 2)], None, "launcher", "/run/hosts", "127.0.0.1,127.0.0.1"),
    ([("launcher", 1), ("worker", 2)], None, "worker", "/run/hosts", None),  # only the launcher
    ([("launcher", 1)], None, "launcher", "/run/hosts", None),  # no worker: nothing to list
    ([("mpimaster", 1), ("mpiworker", 2)], None, "mpimaster", "", "127.0.0.1,127.0.0.1"),  # the first task
])
def test_the_mpi_launcher_gets_the_workers_in_mpi_host(tasks, hosts, task, hosts_dir, expected):
    env = replica_env("mpi", tasks, task, 0, hosts or loopback_hosts(tasks), hosts_dir=hosts_dir)
    assert env.get("MPI_HOST") == expected


def test_mpi_host_is_not_set_for_other_kinds():
    tasks = [("launcher", 1), ("worker", 2)]
    assert "MPI_HOST" not in replica_env("batch", tasks, "launcher", 0, loopback_hosts(tasks))


@pytest.mark.parametrize(("kind", "tasks", "expected"), [
    ("batch", [("main", 1)], set()),
    ("batch", [("a", 2)], {"VK_TASK_INDEX", "VC_TASK_INDEX", "CRATER_HOSTS_DIR", "VC_A_HOSTS", "VC_A_NUM"}),
    ("pytorch", [("master", 1)], {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"}),
    ("mpi", [("launcher", 1)], {"MPI_HOST", "CRATER_MPI_HOSTFILE", "CRATER_HOSTS_DIR"}),
    ("mpi", [("launcher", 1), ("worker", 1)],
     {"MPI_HOST", "CRATER_MPI_HOSTFILE", "CRATER_HOSTS_DIR", "VK_TASK_INDEX", "VC_TASK_INDEX", "VC_LAUNCHER_HOSTS",
      "VC_LAUNCHER_NUM", "VC_WORKER_HOSTS", "VC_WORKER_NUM"}),
])
def test_reserved_env(kind, tasks, expected):
    assert reserved_env(kind, tasks) == expected


@pytest.mark.parametrize(("kind", "tasks"), [
    ("pytorch", [("master", 1), ("worker", 3)]), ("mpi", [("launcher", 1), ("worker", 2)]),
    ("batch", [("ps", 1), ("data-worker", 2)]),
])
def test_every_variable_a_replica_gets_is_reserved(kind, tasks):
    hosts = loopback_hosts(tasks)
    for name, replicas in tasks:
        for i in range(replicas):
            env = replica_env(kind, tasks, name, i, hosts, hosts_dir="/run/hosts")
            assert set(env) <= reserved_env(kind, tasks)


@pytest.mark.parametrize(("tasks", "ends_job", "expected"), [
    ([("launcher", 1), ("worker", 2)], None, "launcher"),
    ([("a", 1), ("b", 2)], "b", "b"),
    ([("a", 1), ("b", 2)], None, "a"),
    ([("a", 1), ("b", 2)], "nope", "a"),
])
def test_mpi_launcher(tasks, ends_job, expected):
    assert mpi_launcher(tasks, ends_job) == expected


@pytest.mark.parametrize(("kind", "tasks", "expected"), [
    ("batch", [("main", 1)], {}),
    ("batch", [("ps", 1), ("data-worker", 2)],
     {"ps.host": "127.0.0.1", "data_worker.host": "127.0.0.1\n127.0.0.1"}),
    ("mpi", [("launcher", 1), ("worker", 2)],
     {"launcher.host": "127.0.0.1", "worker.host": "127.0.0.1\n127.0.0.1", "hostfile": "127.0.0.1\n127.0.0.1\n"}),
])
def test_host_files(kind, tasks, expected):
    assert host_files(kind, tasks, loopback_hosts(tasks)) == expected


@pytest.mark.parametrize(("task", "key", "file"), [("worker", "WORKER", "worker.host"),
                                                   ("ps-0", "PS_0", "ps_0.host")])
def test_names(task, key, file):
    assert (env_key(task), host_file_name(task)) == (key, file)


def test_loopback_hosts():
    assert loopback_hosts([("a", 2), ("b", 1)]) == {"a": [LOOPBACK, LOOPBACK], "b": [LOOPBACK]}
