"""How the replicas of one workload find each other: the environment variables and host files each replica gets
(pure; a backend says where each replica runs and which port the master listens on).

The names and values are Volcano's, so that a job written for a cluster runs unchanged elsewhere:

- every workload of more than one replica (Volcano's ``env`` and ``svc`` job plugins): ``VK_TASK_INDEX`` and
  ``VC_TASK_INDEX`` the replica's index in its task; for every task ``VC_<TASK>_HOSTS`` its replicas' hosts joined
  with ``,`` and ``VC_<TASK>_NUM`` how many (``<TASK>``: the task's name upper-cased, ``-`` as ``_``); and a host
  file per task, ``<task>.host`` (``-`` as ``_``), one host per line, as the svc plugin mounts them in
  ``/etc/volcano/`` (``pkg/controllers/job/plugins/svc/svc.go``, ``GenerateHosts``);
- kind ``pytorch`` (Volcano's ``pytorch`` plugin, ``pkg/controllers/job/plugins/distributed-framework/pytorch``):
  ``MASTER_ADDR`` the host of replica 0 of task ``master``, ``MASTER_PORT``, ``WORLD_SIZE`` the replicas of all
  tasks together, ``RANK`` 0 for the master's replicas and ``index + 1`` for replica ``index`` of task ``worker``
  (a workload without a ``master`` task gets none of them, as with the plugin);
- kind ``mpi``: the launcher (task ``launcher``, else the task that ends the job, else the first) gets
  ``MPI_HOST``, every other task's hosts joined with ``,`` (what ``mpiexec --host`` reads; Volcano's ``mpi`` plugin,
  ``pkg/controllers/job/plugins/distributed-framework/mpi``, sets it on the master's pod to the worker task's hosts
  joined with ``,``; left out when there are no other replicas) and ``CRATER_MPI_HOSTFILE``, the path of
  ``hostfile``: the same hosts, one per line (what ``mpirun --hostfile`` reads; Volcano's MPI examples build it from
  ``/etc/volcano/<worker>.host``).

A spec may not set these variables itself (:func:`reserved_env`): the backend's values would silently win.

Where the host files lie is the backend's (``hosts_dir``; Kubernetes: ``/etc/volcano``); the local backend gives every
replica the same folder and names it in ``CRATER_HOSTS_DIR``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

#: the port Volcano's pytorch plugin gives ``MASTER_PORT`` by default (a backend on one machine picks a free one)
PYTORCH_DEFAULT_PORT = 23456
#: the task names Volcano's pytorch plugin looks for (its ``--master``/``--worker`` defaults)
PYTORCH_MASTER, PYTORCH_WORKER = "master", "worker"
#: the task of an ``mpi`` workload that runs ``mpirun``
MPI_LAUNCHER = "launcher"
#: the host file of an ``mpi`` workload's launcher (in ``hosts_dir``)
MPI_HOSTFILE = "hostfile"
#: the variable naming the folder of the host files on the local backend
HOSTS_DIR_ENV = "CRATER_HOSTS_DIR"
MPI_HOSTFILE_ENV = "CRATER_MPI_HOSTFILE"
PYTORCH_ENV = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")
MPI_ENV = ("MPI_HOST", MPI_HOSTFILE_ENV)
#: every replica's host on a backend of one machine
LOOPBACK = "127.0.0.1"


def env_key(task: str) -> str:
    """``task`` as it appears in a variable name (``ps-0`` -> ``PS_0``), as Volcano's svc plugin writes it."""
    return task.replace("-", "_").upper()


def host_file_name(task: str) -> str:
    """The name of ``task``'s host file (``ps-0`` -> ``ps_0.host``), as Volcano's svc plugin names it."""
    return f"{task.replace('-', '_')}.host"


def loopback_hosts(tasks: Sequence[tuple[str, int]]) -> dict[str, list[str]]:
    """Every replica of ``tasks`` (``(name, replicas)`` in order) on :data:`LOOPBACK`."""
    return {name: [LOOPBACK] * replicas for name, replicas in tasks}


def mpi_launcher(tasks: Sequence[tuple[str, int]], ends_job: str | None = None) -> str:
    """The launcher task of an ``mpi`` workload: :data:`MPI_LAUNCHER` when there is one, else ``ends_job`` (the
    task whose end ends the workload) when given, else the first task."""
    names = [name for name, _ in tasks]
    if MPI_LAUNCHER in names:
        return MPI_LAUNCHER
    return ends_job if ends_job in names else names[0]


def host_files(kind: str, tasks: Sequence[tuple[str, int]], hosts: Mapping[str, Sequence[str]],
               ends_job: str | None = None) -> dict[str, str]:
    """The host files of a workload (file name -> text): one per task (:func:`host_file_name`, hosts joined by line
    breaks, as Volcano writes them) for a workload of more than one replica, and for kind ``mpi`` also
    :data:`MPI_HOSTFILE` with the hosts of every task but the launcher. ``{}`` for one replica of another kind."""
    if sum(n for _, n in tasks) <= 1 and kind != "mpi":
        return {}
    files = {host_file_name(name): "\n".join(hosts[name]) for name, _ in tasks}
    if kind == "mpi":
        launcher = mpi_launcher(tasks, ends_job)
        files[MPI_HOSTFILE] = "".join(f"{h}\n" for name, _ in tasks if name != launcher for h in hosts[name])
    return files


def replica_env(kind: str, tasks: Sequence[tuple[str, int]], task: str, replica: int,
                hosts: Mapping[str, Sequence[str]], *, master_port: int = PYTORCH_DEFAULT_PORT,
                hosts_dir: str = "", ends_job: str | None = None) -> dict[str, str]:
    """The rendezvous variables of replica ``replica`` of ``task`` (see the module docstring).

    Args:
        kind: the workload's kind (``batch``, ``pytorch``, ``mpi``, ``interactive``).
        tasks: ``(name, replicas)`` of every task, in order.
        hosts: task name -> the host of each of its replicas.
        master_port: ``MASTER_PORT`` of a ``pytorch`` workload.
        hosts_dir: where the backend writes :func:`host_files` (``""``: it writes none).
        ends_job: the task whose end ends the workload, if one does (picks an ``mpi`` launcher).
    """
    env: dict[str, str] = {}
    total = sum(n for _, n in tasks)
    if total > 1:
        env["VK_TASK_INDEX"] = env["VC_TASK_INDEX"] = str(replica)
        for name, _ in tasks:
            env[f"VC_{env_key(name)}_HOSTS"] = ",".join(hosts[name])
            env[f"VC_{env_key(name)}_NUM"] = str(len(hosts[name]))
    names = [name for name, _ in tasks]
    if kind == "pytorch" and PYTORCH_MASTER in names:
        env["MASTER_ADDR"] = hosts[PYTORCH_MASTER][0]
        env["MASTER_PORT"] = str(master_port)
        env["WORLD_SIZE"] = str(total)
        if task == PYTORCH_MASTER:
            env["RANK"] = "0"
        elif task == PYTORCH_WORKER:
            env["RANK"] = str(replica + 1)
    if kind == "mpi" and task == mpi_launcher(tasks, ends_job):
        others = [h for name, _ in tasks if name != task for h in hosts[name]]
        if others:
            env["MPI_HOST"] = ",".join(others)
        if hosts_dir:
            env[MPI_HOSTFILE_ENV] = f"{hosts_dir.rstrip('/')}/{MPI_HOSTFILE}"
    return env


def reserved_env(kind: str, tasks: Sequence[tuple[str, int]]) -> frozenset[str]:
    """The variables a backend sets in a workload of ``kind`` with ``tasks`` (``(name, replicas)``), which its spec
    may not set: for more than one replica the svc plugin's (``VK_TASK_INDEX``, ``VC_TASK_INDEX``,
    ``VC_<TASK>_HOSTS`` and ``VC_<TASK>_NUM`` of every task) and :data:`HOSTS_DIR_ENV`; for ``pytorch``
    :data:`PYTORCH_ENV`; for ``mpi`` :data:`MPI_ENV` and :data:`HOSTS_DIR_ENV` (whatever the tasks: a kind's
    variables are its own even where this workload's shape would not set them all)."""
    names: set[str] = set()
    if sum(n for _, n in tasks) > 1:
        names |= {"VK_TASK_INDEX", "VC_TASK_INDEX", HOSTS_DIR_ENV}
        for name, _ in tasks:
            names |= {f"VC_{env_key(name)}_HOSTS", f"VC_{env_key(name)}_NUM"}
    if kind == "pytorch":
        names |= set(PYTORCH_ENV)
    if kind == "mpi":
        names |= {*MPI_ENV, HOSTS_DIR_ENV}
    return frozenset(names)
