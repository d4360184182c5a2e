"""The Volcano Job (``batch.volcano.sh/v1alpha1``) of a workload, as a dict: :func:`volcano_job`.

One Volcano task per Crater task, its pods from :func:`crater_app.cluster.kube.pod_template.pod_template`; the gang
as ``minAvailable``; ``restart_policy`` as Volcano ``policies`` (:func:`job_policies`); the kind's plugins
(:func:`job_plugins`); a task that ends the job with ``TaskCompleted -> CompleteJob``. Volcano semantics from its
user guide (``docs/user-guide/how_to_use_job_policy.md``, ``how_to_use_pytorch_plugin.md``,
``how_to_use_mpi_plugin.md``) and its plugins' sources (``pkg/controllers/job/plugins``).
"""

from __future__ import annotations

from dataclasses import replace

from crater_app.cluster.base import RESTART_POLICIES, Task, Workload
from crater_app.cluster.kube.object_names import (ANNOTATION_ATTEMPT, ANNOTATION_JOB_NAME, ANNOTATION_PROJECT,
                                                  ANNOTATION_USER, LABEL_KIND, job_name, max_task_name_chars,
                                                  namespace_of, project_queue_name, workload_labels)
from crater_app.cluster.kube.options import KubeOptions
from crater_app.cluster.kube.pod_template import pod_template
from crater_app.cluster.kube.session_manifest import session_service
from crater_app.domain import field_paths
from crater_app.domain.job_kinds import RENDEZVOUS_PORT_NAME, ROLES
from crater_app.domain.errors import InvalidInput

API_VERSION = "batch.volcano.sh/v1alpha1"
KIND = "Job"
#: the events a replica's failure or eviction raises (Volcano ``PodFailed``, ``PodEvicted``)
FAILURE_EVENTS = ("PodEvicted", "PodFailed")
#: restart_policy -> the Volcano action on :data:`FAILURE_EVENTS`: ``RestartJob`` (all pods killed and made again,
#: at most ``maxRetry`` times, then the Job is ``Failed``), ``TerminateJob`` (running pods killed, the Job ends
#: ``Terminated``, which Crater reads as failed when it did not ask for the stop; unlike ``AbortJob``'s ``Aborted`` a
#: ``Terminated`` Job cannot be resumed and is finished for Volcano's ``ttlSecondsAfterFinished`` collector), none
#: (Volcano's default: the Job goes on and ends ``Failed`` when fewer than ``minAvailable`` replicas succeeded)
POLICY_ACTIONS = {"restart": "RestartJob", "fail": "TerminateJob", "ignore": None}
#: where Volcano's ``svc`` plugin writes a task's hosts in every pod (``/etc/volcano/<task>.host``): the MPI
#: launcher's ``CRATER_MPI_HOSTFILE`` points at its worker task's, as the local backend's points at its own hostfile
VOLCANO_HOSTS_DIR = "/etc/volcano"
#: the ssh port of MPI replicas (Volcano's ``mpi`` plugin default)
MPI_SSH_PORT = 22


def job_policies(restart_policy: str) -> list[dict]:
    """The Job-level ``policies`` of ``restart_policy`` (:data:`POLICY_ACTIONS`): ``[{"events": ["PodEvicted",
    "PodFailed"], "action": ...}]``, or ``[]`` for ``ignore``.

    Raises:
        ValueError: a policy not in :data:`crater_app.cluster.base.RESTART_POLICIES`.
    """
    if restart_policy not in RESTART_POLICIES:
        raise ValueError(f"restart_policy must be one of {RESTART_POLICIES}, not {restart_policy!r}")
    action = POLICY_ACTIONS[restart_policy]
    return [{"events": list(FAILURE_EVENTS), "action": action}] if action else []


def roles(workload: Workload) -> tuple[Task, Task | None]:
    """(leading task, worker task or ``None``) of a ``pytorch`` or ``mpi`` workload: the leader is the task that
    says ``ends_job``, else the one named as the job spec's kinds name it (``master``, ``launcher`` for ``mpi``:
    :data:`crater_app.domain.job_kinds.ROLES`), else the first; the
    worker is the other task.

    Raises:
        InvalidInput: ``kube.kind_tasks`` (field ``tasks``; ``kind``, ``count``, ``max`` 2): Volcano's plugins know
            one leader and one worker task.
    """
    tasks = workload.tasks
    if len(tasks) > 2:
        raise InvalidInput("kube.kind_tasks", "tasks", field_name="tasks", kind=workload.kind, count=len(tasks),
                           max=2)
    leader = next((t for t in tasks if t.ends_job), None)
    if leader is None:
        name = ROLES.get(workload.kind, ("",))[0]  # the job spec's rule (domain.job_kinds)
        leader = next((t for t in tasks if t.name == name), tasks[0])
    worker = next((t for t in tasks if t is not leader), None)
    return leader, worker


def job_plugins(workload: Workload, options: KubeOptions) -> dict[str, list[str]]:
    """The Job's ``plugins`` for its kind.

    - ``pytorch``: ``pytorch: [--master=<leader>, --worker=<worker>, --port=<port>]`` (the leader's port named
      ``pytorchjob-port`` where the job spec gave it one, else ``options.rendezvous_port``; the plugin sets
      ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE`` and ``RANK``, the leader's replica 0 being rank 0; an empty
      ``--worker=`` when there is no worker task) and ``svc``;
    - ``mpi``: ``mpi: [--master=<launcher>, --worker=<worker>, --port=22]`` (``MPI_HOST`` on the launcher; only with
      a worker task: the plugin needs one), ``ssh`` (keys and a hostfile-like ``ssh`` config) and ``svc``; the
      ``ssh`` plugin mounts the keys at ``/root/.ssh`` (mode 0600), so an MPI image that runs as another user
      (``options.run_as_non_root``) must read them from there or run ``sshd`` its own way;
    - ``interactive`` and any workload of more than one replica: ``svc`` (a headless Service named after the Job, so
      replicas reach each other as ``<pod>.<job>``, and the hosts of each task in ``/etc/volcano``) and ``env``
      (``VC_TASK_INDEX`` in each replica);
    - a single-replica ``batch`` workload: none.
    """
    plugins: dict[str, list[str]] = {}
    if workload.kind == "pytorch":
        leader, worker = roles(workload)
        port = next((p.port for p in leader.ports if p.name == RENDEZVOUS_PORT_NAME), options.rendezvous_port)
        plugins["pytorch"] = [f"--master={leader.name}", f"--worker={worker.name if worker else ''}",
                              f"--port={port}"]
    elif workload.kind == "mpi":
        leader, worker = roles(workload)
        if worker is not None:
            plugins["mpi"] = [f"--master={leader.name}", f"--worker={worker.name}", f"--port={MPI_SSH_PORT}"]
        plugins["ssh"] = []
    if plugins or workload.kind == "interactive" or workload.replica_count > 1:
        plugins["svc"] = []
    if workload.replica_count > 1:
        plugins["env"] = []
    return dict(sorted(plugins.items()))


def check_task_names(workload: Workload) -> None:
    """Check that every replica's pod name (``<job>-<task>-<index>``) fits in 63 characters, Kubernetes' limit on
    the pod's hostname (:func:`crater_app.cluster.kube.object_names.max_task_name_chars`).

    Raises:
        InvalidInput: ``kube.task_name_too_long``, field ``tasks[<i>].name``, with ``length`` and ``max``.
    """
    for i, task in enumerate(workload.tasks):
        limit = max_task_name_chars(task.replicas)
        if len(task.name) > limit:
            field = field_paths.key(f"tasks[{i}]", "name")
            raise InvalidInput("kube.task_name_too_long", field, field_name=field, length=len(task.name), max=limit)


def job_queue(workload: Workload, options: KubeOptions) -> str:
    """The Volcano Queue the Job is submitted to: ``workload.queue``, else the project's
    (:func:`crater_app.cluster.kube.object_names.project_queue_name`)."""
    return workload.queue or project_queue_name(workload.project, options)


def volcano_job(workload: Workload, options: KubeOptions) -> dict:
    """The Volcano Job of ``workload``.

    ``metadata``: name :func:`~crater_app.cluster.kube.object_names.job_name` of the uid (the idempotency key),
    the project's namespace, labels ``crater.io/job-uid`` (the full uid), ``crater.io/project``, ``crater.io/user``
    (safe slugs), ``crater.io/kind`` and ``app.kubernetes.io/managed-by``, annotations with the raw job, project and
    user names and the ``attempt``. ``spec``: ``schedulerName``, ``queue`` (:func:`job_queue`), ``minAvailable``
    (``workload.gang``), ``maxRetry``, ``policies`` (:func:`job_policies`), ``plugins`` (:func:`job_plugins`),
    ``ttlSecondsAfterFinished`` (the workload's, else the options'), ``priorityClassName`` (options), and one task
    per Crater task with its replicas and pod template; a task with ``ends_job`` has the task-level policy
    ``TaskCompleted -> CompleteJob`` (Volcano then stops the other tasks' pods and the Job is ``Completed``).

    Raises:
        InvalidInput: ``kube.task_name_too_long`` (:func:`check_task_names`), ``kube.kind_tasks`` (:func:`roles`),
            ``kube.model_label_unknown`` (:func:`crater_app.cluster.kube.pod_template.model_affinity`).
        ValueError: an unknown restart policy, a uid that is not a label value, a volume the job spec's checks
            would have refused.
    """
    check_task_names(workload)
    labels = {**workload_labels(workload.uid, workload.project, workload.user, options), LABEL_KIND: workload.kind}
    annotations = {ANNOTATION_JOB_NAME: workload.name, ANNOTATION_PROJECT: workload.project,
                   ANNOTATION_USER: workload.user, ANNOTATION_ATTEMPT: str(workload.attempt)}
    tasks = []
    launcher, workers = roles(workload) if workload.kind == "mpi" else (None, None)
    for task in workload.tasks:
        entry: dict = {"name": task.name, "replicas": task.replicas}
        if task is launcher and workers is not None:
            task = replace(task, env={**task.env, "CRATER_MPI_HOSTFILE": f"{VOLCANO_HOSTS_DIR}/{workers.name}.host"})
        if task.ends_job:
            entry["policies"] = [{"event": "TaskCompleted", "action": "CompleteJob"}]
        entry["template"] = pod_template(workload, task, options)
        tasks.append(entry)
    spec: dict = {"schedulerName": options.scheduler_name, "queue": job_queue(workload, options),
                  "minAvailable": workload.gang, "maxRetry": workload.max_retry}
    policies = job_policies(workload.restart_policy)
    if policies:
        spec["policies"] = policies
    plugins = job_plugins(workload, options)
    if plugins:
        spec["plugins"] = plugins
    ttl = workload.ttl_after_finished_s if workload.ttl_after_finished_s is not None else options.ttl_after_finished_s
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    if options.priority_class:
        spec["priorityClassName"] = options.priority_class
    spec["tasks"] = tasks
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": job_name(workload.uid), "namespace": namespace_of(workload.project, options),
                         "labels": labels, "annotations": annotations},
            "spec": spec}


def workload_objects(workload: Workload, options: KubeOptions) -> list[dict]:
    """Every object Crater makes for ``workload``, in the order to create them: the Volcano Job
    (:func:`volcano_job`) and, for an interactive workload whose task declares ports, its session Service
    (:func:`crater_app.cluster.kube.session_manifest.session_service`). What ``ClusterBackend.manifests`` shows.

    Raises:
        InvalidInput, ValueError: as :func:`volcano_job`.
    """
    objects = [volcano_job(workload, options)]
    if workload.kind == "interactive" and workload.tasks[0].ports:
        objects.append(session_service(workload, options))
    return objects
