"""A job's tasks on their way through submission: the checks against the nodes and the project's capability, the
row's ``tasks``/``min_available``/``options`` columns (migration 0007), and the backend :class:`Workload` built back
from a row.

The row's ``resources``/``cpu_m``/``memory_bytes``/``gpus`` are the totals over all replicas (what admission, quotas,
usage and billing count); ``tasks`` the normalized tasks with their per-replica ``resources``; ``options``
``{restart_policy, max_retry, volumes, shm_size_bytes, node_selector, ttl_after_finished_s}``. A row with ``tasks``
``[]`` (written before migration 0007) is the single task of its own ``image``/``command``/``env``/``working_dir``/
``resources``.
"""

from __future__ import annotations

from sqlalchemy import select as sa_select

from crater_app.cluster.base import HOST_PROCESSES, PVC_VOLUMES, Port, Task, Volume, Workload
from crater_app.db.models import Job, Project
from crater_app.db.queries.resource_lists import quota_list
from crater_app.domain.gang_fit import NodeCapacity, check_gang, check_replicas, select_nodes
from crater_app.domain.job_tasks import SINGLE_TASK, JobTasks
from crater_app.domain.job_volumes import parse_shm_size
from crater_app.domain.jobs import JobSpec
from crater_app.domain.resource_names import check_offered
from crater_app.domain.resources import parse_resources
from crater_app.domain.volume_claims import check_claims, check_volume_support
from crater_app.services.context import ServiceContext
from crater_app.services.nodes import capacity


def check_volumes(ctx: ServiceContext, spec: JobSpec, project: str) -> None:
    """Whether the job's ``volumes`` can be mounted, for a job of ``project`` (its name): the backend can mount them
    (by its capabilities: none on a backend of host processes, ``pvc`` ones only with ``PVC_VOLUMES``), and every
    ``pvc`` volume's claim is registered for the project (``CRATER_VOLUME_CLAIMS``) and is not the spaces claim
    (``CRATER_KUBE_SPACES_CLAIM``) (:mod:`crater_app.domain.volume_claims`).

    Raises:
        InvalidInput: the errors of :func:`~crater_app.domain.volume_claims.check_volume_support` (naming
            ``volumes[i]`` or ``volumes[i].source``) and :func:`~crater_app.domain.volume_claims.check_claims`
            (naming ``volumes[i].claim``).
    """
    capabilities = ctx.backend.capabilities
    check_volume_support(spec.volumes, host_processes=HOST_PROCESSES in capabilities,
                         pvc_volumes=PVC_VOLUMES in capabilities)
    check_claims(spec.volumes, project, ctx.settings.volume_claims, ctx.settings.kube_spaces_claim)


def check_fits(ctx: ServiceContext, spec: JobSpec, plan: JobTasks, project_id: int) -> None:
    """Whether the job could ever run: every accelerator name it asks for is offered by some node (the closest
    offered name as ``suggestion`` otherwise), its ``node_selector`` matches some schedulable node, one replica of
    each task fits the largest of the matching nodes, and its gang fits them together, packs onto them at once and
    (for a job of several replicas) fits the project's ``capability`` (:mod:`crater_app.domain.gang_fit`). The nodes
    are the backend's inventory cache (:func:`capacity`: what they have, not what they hold now), with their labels.

    Raises:
        Unschedulable: the errors of :func:`~crater_app.domain.resource_names.check_offered` (naming
            ``resources.<name>``, or ``tasks[i].resources.<name>``), :func:`~crater_app.domain.gang_fit.select_nodes`
            (naming ``node_selector.<key>`` or ``node_selector``), :func:`~crater_app.domain.gang_fit.check_replicas`
            (``job.no_node`` without a schedulable node) and :func:`~crater_app.domain.gang_fit.check_gang` (naming
            ``min_available`` when the spec gives it, else ``tasks``; a job of one task's packing at its
            ``tasks[0].resources``).
    """
    inventory = capacity(ctx)
    offered = [d.resource for node in inventory for d in node.devices]
    for task in plan.tasks:
        check_offered(task.resources.accelerators, offered, task.field("resources"))
    nodes = select_nodes([NodeCapacity(n.name, n.cpu_m, n.memory_bytes, tuple((d.resource, d.model) for d in n.devices),
                                       n.schedulable, dict(n.labels)) for n in inventory], spec.node_selector)
    check_replicas(plan.tasks, spec.accelerator_model, nodes)
    if plan.replica_count > 1:  # one replica: the checks above and admission's capability check say it all
        with ctx.session(read_only=True) as s:
            raw = s.execute(sa_select(Project.capability).where(Project.id == project_id)).scalar_one_or_none()
        check_gang(plan, spec.accelerator_model, nodes, quota_list(raw, "capability") if raw is not None else None,
                   field="min_available" if spec.min_available is not None else "tasks")


def row_values(spec: JobSpec, plan: JobTasks) -> dict:
    """The columns a submission writes for its tasks: ``image``/``command``/``env``/``working_dir`` (the first
    task's, shown in lists), ``resources`` (the single-task form's as submitted, else the totals as a Kubernetes
    resource list), ``cpu_m``/``memory_bytes``/``gpus`` (the totals), ``tasks``, ``min_available`` (``None``: all
    replicas), ``options``."""
    spec_tasks = spec.tasks if spec.tasks is not None else [None]
    tasks = []
    for plan_task, spec_task in zip(plan.tasks, spec_tasks):
        tasks.append({
            "name": plan_task.name, "replicas": plan_task.replicas, "image": plan_task.image,
            "command": list(plan_task.command), "args": list(plan_task.args), "env": dict(plan_task.env),
            "working_dir": plan_task.working_dir,
            "resources": dict(spec_task.resources if spec_task is not None else spec.resources),
            "ports": [{"name": p.name, "port": p.port, "protocol": p.protocol} for p in plan_task.ports],
            "ends_job": plan_task.ends_job,
        })
    first, totals = plan.tasks[0], plan.totals
    resources = {k: str(v) for k, v in spec.resources.items()} if spec.tasks is None else totals.to_k8s()
    options = {
        "restart_policy": spec.restart_policy, "max_retry": spec.max_retry,
        "volumes": [v.model_dump() for v in spec.volumes], "shm_size_bytes": parse_shm_size(spec.shm_size),
        "node_selector": dict(spec.node_selector), "ttl_after_finished_s": spec.ttl_after_finished,
    }
    return {
        "image": first.image, "command": list(first.command), "env": dict(first.env),
        "working_dir": first.working_dir, "resources": resources, "cpu_m": totals.cpu_m,
        "memory_bytes": totals.memory_bytes, "gpus": totals.gpus, "tasks": tasks,
        "min_available": spec.min_available, "options": options,
    }


def _tasks_of_row(tasks: list, image: str, command: list, env: dict, working_dir: str | None,
                  resources: dict) -> tuple[Task, ...]:
    if not tasks:
        return (Task(name=SINGLE_TASK, replicas=1, image=image, command=tuple(command), env=dict(env),
                     working_dir=working_dir, resources=parse_resources(resources)),)
    return tuple(Task(name=t["name"], replicas=t["replicas"], image=t["image"], command=tuple(t["command"]),
                      args=tuple(t.get("args") or ()), env=dict(t.get("env") or {}), working_dir=t.get("working_dir"),
                      resources=parse_resources(t.get("resources") or {}),
                      ports=tuple(Port(p["name"], p["port"], p.get("protocol", "TCP")) for p in t.get("ports") or ()),
                      ends_job=bool(t.get("ends_job"))) for t in tasks)


def workload_fields(values: dict) -> dict:
    """The :class:`Workload` fields of a job's tasks and options from its row (a :class:`Job` as a dict of columns,
    or the values a submission writes): ``tasks``, ``kind``, ``min_available``, ``restart_policy``, ``max_retry``,
    ``volumes``, ``shm_size_bytes``, ``node_selector``, ``ttl_after_finished_s`` (absent options: the
    :class:`Workload` defaults)."""
    options = values.get("options") or {}
    fields: dict = {
        "tasks": _tasks_of_row(values.get("tasks") or [], values["image"], values["command"], values["env"] or {},
                               values["working_dir"], values["resources"] or {}),
        "kind": values.get("kind") or "batch", "min_available": values.get("min_available"),
        "volumes": tuple(Volume(source=v["source"], mount_path=v["mount_path"], sub_path=v.get("sub_path") or "",
                                read_only=bool(v.get("read_only")), claim=v.get("claim") or "")
                         for v in options.get("volumes") or ()),
        "node_selector": dict(options.get("node_selector") or {}),
    }
    for name, key in (("restart_policy", "restart_policy"), ("max_retry", "max_retry"),
                      ("shm_size_bytes", "shm_size_bytes"), ("ttl_after_finished_s", "ttl_after_finished_s")):
        if options.get(key) is not None:
            fields[name] = options[key]
    return fields


def workload_of(job: Job, project: str, user: str) -> Workload:
    """The backend request for ``job`` (uid is the idempotency key; ``attempt`` the run it is on), with its tasks
    and options (:func:`workload_fields`)."""
    columns = {"image": job.image, "command": job.command, "env": job.env, "working_dir": job.working_dir,
               "resources": job.resources, "tasks": job.tasks, "kind": job.kind, "min_available": job.min_available,
               "options": job.options}
    return Workload(
        uid=job.uid, name=job.name, project=project, user=user, accelerator_model=job.accelerator_model,
        max_runtime_s=job.max_runtime_s, priority=job.priority, created_at=job.created_at, attempt=job.attempt,
        **workload_fields(columns),
    )


def public_fields(values: dict) -> dict:
    """The :class:`~crater_app.schemas.JobPublic` fields of a job's tasks and options from its row's columns
    (``tasks``, ``min_available``, ``options``)."""
    options = values.get("options") or {}
    return {
        "tasks": list(values.get("tasks") or []), "min_available": values.get("min_available"),
        "restart_policy": options.get("restart_policy", "fail"), "max_retry": options.get("max_retry", 0),
        "volumes": list(options.get("volumes") or []), "shm_size_bytes": options.get("shm_size_bytes"),
        "node_selector": dict(options.get("node_selector") or {}),
        "ttl_after_finished": options.get("ttl_after_finished_s"),
    }


def spec_fields(job: Job) -> dict:
    """The spec fields of what ``job`` runs and its options, to submit it again (``resubmit_job``): the single-task
    form (``image``, ``command``, ``env``, ``resources``, ``working_dir``) for a job of one task ``main`` of one
    replica (or a row written before tasks), else ``tasks``; ``min_available`` and the options that are set.
    Per-replica ``resources`` are those stored (the defaults already applied); the rendezvous port a kind added is
    given explicitly (the same job again)."""
    tasks = job.tasks or []
    single = not tasks or (len(tasks) == 1 and tasks[0]["name"] == SINGLE_TASK and tasks[0]["replicas"] == 1
                           and not tasks[0].get("args") and not tasks[0].get("ports"))
    if single:
        out: dict = {"image": job.image, "command": list(job.command), "env": dict(job.env),
                     "resources": dict(job.resources)}
        if job.working_dir is not None:
            out["working_dir"] = job.working_dir
    else:
        out = {"tasks": [{key: value for key, value in t.items() if key != "ends_job" and value is not None}
                         for t in tasks]}
    if job.min_available is not None:
        out["min_available"] = job.min_available
    options = job.options or {}
    for key, spec_key in (("restart_policy", "restart_policy"), ("max_retry", "max_retry"),
                          ("volumes", "volumes"), ("shm_size_bytes", "shm_size"), ("node_selector", "node_selector"),
                          ("ttl_after_finished_s", "ttl_after_finished")):
        if options.get(key) not in (None, [], {}):
            out[spec_key] = options[key]
    if out.get("volumes"):
        out["volumes"] = [{k: v for k, v in vol.items() if v is not None} for vol in out["volumes"]]
    return out
