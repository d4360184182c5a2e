"""Job kinds and their shapes, and the normalized tasks of a spec (:func:`normalize_tasks`).

Kinds (:data:`JOB_KINDS`), with the defaults Volcano's job plugins expect:

- ``batch``: any tasks; the job ends when every replica has.
- ``pytorch`` (Volcano's ``pytorch`` plugin, ``--master=master --worker=worker --port=23456``): a task ``master`` of
  exactly one replica and, optionally, a task ``worker`` of any replicas (none: a one-node job; the world size is
  1 + the workers); no other task. The master's end ends the job (Volcano's ``TaskCompleted`` -> ``CompleteJob``).
  Every task listens on the rendezvous port (:data:`RENDEZVOUS_PORT_NAME`, :data:`RENDEZVOUS_PORT` unless the master
  names that port with another number): the backend sets ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE`` and
  ``RANK`` per replica (master rank 0, workers 1..n) as the plugin does. That port is ``MASTER_PORT`` on Kubernetes
  only: the local backend gives each pytorch job a free port of its machine instead (two DDP jobs on one server must
  not collide), so there the declared ``pytorchjob-port`` is what the job would use on a cluster.
- ``mpi`` (Volcano's ``mpi`` + ``ssh`` + ``svc`` plugins): a task ``launcher`` of exactly one replica and, optionally,
  ``worker``; the launcher's end ends the job; the backend writes the workers' hostfile.
- ``interactive``: a session (notebook, IDE): one task of one replica, with its ports; counts towards the user's
  ``max_sessions``.

The single-task form is the task ``main`` (so ``pytorch``/``mpi`` need ``tasks``). ``min_available`` (the gang:
how many replicas must be placed together before any starts) is 1..all replicas, all by default.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from crater_app.domain.errors import InvalidInput
from crater_app.domain.job_tasks import JobTasks, TaskPlan, TaskPort, check_tasks, single_task, totals
from crater_app.domain.job_volumes import parse_shm_size
from crater_app.domain.spec_hints import suggest_restart_policy
from crater_app.domain.rendezvous import (MPI_LAUNCHER, PYTORCH_DEFAULT_PORT, PYTORCH_MASTER, PYTORCH_WORKER,
                                          reserved_env)

if TYPE_CHECKING:  # jobs imports this module
    from crater_app.domain.jobs import JobSpec

JOB_KINDS = ("batch", "pytorch", "mpi", "interactive")
#: what a job does when one of its replicas fails or is evicted, as Volcano's ``policies`` (``PodFailed``/
#: ``PodEvicted`` -> ``RestartJob``: ``restart``, up to ``max_retry`` times; -> ``AbortJob``: ``fail``; no policy:
#: ``ignore``, the job goes on and ends by its other replicas)
RESTART_POLICIES = ("restart", "fail", "ignore")
DEFAULT_RESTART_POLICY = "fail"
#: Volcano's default ``maxRetry``; at most :data:`MAX_RETRY` restarts
DEFAULT_MAX_RETRY = 3
MAX_RETRY = 100
#: the tasks of a kind with a leader: (leader, the other allowed task); the leader has exactly one replica and its
#: end ends the job (Volcano's pytorch plugin's ``--master``/``--worker``; the mpi plugin's ``--master``/``--worker``)
ROLES = {"pytorch": (PYTORCH_MASTER, PYTORCH_WORKER), "mpi": (MPI_LAUNCHER, "worker")}
#: the pytorch plugin's default port and the name it gives it
RENDEZVOUS_PORT = PYTORCH_DEFAULT_PORT
RENDEZVOUS_PORT_NAME = "pytorchjob-port"


def _check_kind_shape(kind: str, tasks: tuple[TaskPlan, ...]) -> tuple[TaskPlan, ...]:
    """``tasks`` checked against ``kind``'s shape, the leader marked ``ends_job``."""
    if kind == "interactive":
        count = sum(t.replicas for t in tasks)
        if count != 1:
            field = tasks[0].field("replicas") if len(tasks) == 1 else "tasks"
            raise InvalidInput("job.interactive_replicas", field, count=count)
        return tasks
    if kind not in ROLES:
        return tasks
    leader, other = ROLES[kind]
    lead = next((t for t in tasks if t.name == leader), None)
    if lead is None:
        raise InvalidInput("job.kind_task_missing", "tasks", kind=kind, task=leader)
    for t in tasks:
        if t.name not in (leader, other):
            raise InvalidInput("job.kind_task_unknown", t.field("name"), kind=kind, name=t.name,
                               tasks=f"{leader}, {other}")
    if lead.replicas != 1:
        raise InvalidInput("job.kind_leader_replicas", lead.field("replicas"), kind=kind, task=leader,
                           value=lead.replicas)
    out = tuple(replace(t, ends_job=True) if t.name == leader else t for t in tasks)
    return _with_rendezvous_port(out) if kind == "pytorch" else out


def rendezvous_port(tasks: tuple[TaskPlan, ...]) -> int:
    """The pytorch rendezvous port (``MASTER_PORT``): the master's port named :data:`RENDEZVOUS_PORT_NAME`, else
    :data:`RENDEZVOUS_PORT`."""
    for t in tasks:
        if t.name == ROLES["pytorch"][0]:
            for p in t.ports:
                if p.name == RENDEZVOUS_PORT_NAME:
                    return p.port
    return RENDEZVOUS_PORT


def _with_rendezvous_port(tasks: tuple[TaskPlan, ...]) -> tuple[TaskPlan, ...]:
    """Every task listening on the rendezvous port (added as the pytorch plugin adds it to every container, unless
    the task already has a port of that name or number)."""
    port = rendezvous_port(tasks)
    out = []
    for t in tasks:
        if any(p.name == RENDEZVOUS_PORT_NAME or (p.port, p.protocol) == (port, "TCP") for p in t.ports):
            out.append(t)
        else:
            out.append(replace(t, ports=(*t.ports, TaskPort(RENDEZVOUS_PORT_NAME, port, "TCP"))))
    return tuple(out)


def check_reserved_env(kind: str, tasks: tuple[TaskPlan, ...]) -> None:
    """No task's ``env`` sets a variable the backend sets for this job's kind and shape
    (:func:`crater_app.domain.rendezvous.reserved_env`: the pytorch plugin's ``MASTER_ADDR``, ``MASTER_PORT``,
    ``WORLD_SIZE``, ``RANK``; the mpi plugin's ``MPI_HOST`` and the hostfile's ``CRATER_MPI_HOSTFILE``; the svc
    plugin's ``VC_TASK_INDEX``, ``VK_TASK_INDEX``, ``VC_<TASK>_HOSTS``, ``VC_<TASK>_NUM`` for more than one replica).

    Raises:
        InvalidInput: ``job.env_reserved`` (``name``) naming ``tasks[i].env.<NAME>``.
    """
    reserved = reserved_env(kind, [(t.name, t.replicas) for t in tasks])
    for t in tasks:
        for key in t.env:
            if key in reserved:
                raise InvalidInput("job.env_reserved", t.field("env", key), name=key)


def check_min_available(value: int | None, replicas: int) -> int:
    """The gang size: ``value`` (1..``replicas``) or ``replicas`` when ``None``.

    Raises:
        InvalidInput: ``job.min_available_range`` (``value``, ``min`` 1, ``max`` the replica count) naming
            ``min_available``.
    """
    if value is None:
        return replicas
    if not 1 <= value <= replicas:
        raise InvalidInput("job.min_available_range", "min_available", value=value, min=1, max=replicas)
    return value


def normalize_tasks(spec: "JobSpec") -> JobTasks:
    """The normalized tasks of a spec: the single-task form turned into the task ``main`` of one replica, each task
    checked, the kind's shape checked and its defaults applied (``ends_job`` on a ``master``/``launcher``, the
    pytorch rendezvous port), the gang resolved, and the totals over all replicas.

    Services call it after the default ``cpu``/``memory`` were applied to each task
    (:func:`crater_app.domain.job_defaults.with_default_resources`), and turn each :class:`TaskPlan` into a
    :class:`crater_app.cluster.base.Task`; :func:`~crater_app.domain.jobs.validate_spec` calls it too, so a bad spec
    is refused before anything else.

    Raises:
        InvalidInput: the errors of :func:`~crater_app.domain.job_tasks.check_tasks`; ``job.interactive_replicas``
            (``count``), ``job.kind_task_unknown`` (``kind``, ``name``, ``tasks``), ``job.kind_task_missing``
            (``kind``, ``task``), ``job.kind_leader_replicas`` (``kind``, ``task``, ``value``); those of
            :func:`check_reserved_env` and :func:`check_min_available`; ``job.accelerator_model_without_request``
            naming ``accelerator_model``;
            ``job.shm_size_memory`` (``task``, ``shm``, ``memory``: bytes) naming ``shm_size`` when a replica's
            ``memory`` request is below ``shm_size`` (a memory ``emptyDir`` counts against it in Kubernetes).
    """
    tasks = check_tasks(list(spec.tasks)) if spec.tasks is not None else (single_task(spec),)
    tasks = _check_kind_shape(spec.kind, tasks)
    check_reserved_env(spec.kind, tasks)
    count = sum(t.replicas for t in tasks)
    gang = check_min_available(spec.min_available, count)
    if spec.accelerator_model and not any(t.resources.gpus for t in tasks):
        raise InvalidInput("job.accelerator_model_without_request", "accelerator_model")
    shm = parse_shm_size(spec.shm_size)
    if shm is not None:
        for t in tasks:
            if 0 < t.resources.memory_bytes < shm:
                raise InvalidInput("job.shm_size_memory", "shm_size", task=t.name, shm=shm,
                                   memory=t.resources.memory_bytes)
    return JobTasks(tasks=tasks, min_available=gang, totals=totals(tasks))


def check_restart(policy: str, max_retry: int) -> None:
    """``restart_policy`` one of :data:`RESTART_POLICIES`; ``max_retry`` 0..:data:`MAX_RETRY`.

    Raises:
        InvalidInput: ``job.restart_policy`` (``policies``, ``value``) naming ``restart_policy``, or
            ``job.restart_policy_suggestion`` (also ``suggestion``) for a Volcano/Kubernetes spelling
            (``RestartJob``, ``OnFailure``, ...) or a near miss
            (:func:`~crater_app.domain.spec_hints.suggest_restart_policy`);
            ``job.max_retry_range`` (``value``, ``min``, ``max``) naming ``max_retry``.
    """
    if policy not in RESTART_POLICIES:
        suggestion = suggest_restart_policy(policy, RESTART_POLICIES)
        if suggestion is not None:
            raise InvalidInput("job.restart_policy_suggestion", "restart_policy", policies=", ".join(RESTART_POLICIES),
                               value=policy[:32], suggestion=suggestion)
        raise InvalidInput("job.restart_policy", "restart_policy", policies=", ".join(RESTART_POLICIES),
                           value=policy[:32])
    if not 0 <= max_retry <= MAX_RETRY:
        raise InvalidInput("job.max_retry_range", "max_retry", value=max_retry, min=0, max=MAX_RETRY)


def check_kind(kind: str) -> None:
    """``kind`` one of :data:`JOB_KINDS`.

    Raises:
        InvalidInput: ``job.kind`` (``kinds``, ``value``) naming ``kind``.
    """
    if kind not in JOB_KINDS:
        raise InvalidInput("job.kind", "kind", kinds=", ".join(JOB_KINDS), value=kind[:32])

