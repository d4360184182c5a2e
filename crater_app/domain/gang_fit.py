"""Whether a job's replicas and its gang could ever be placed: the checks of the submit path (pure).

A job is refused at submission, never left queued for ever, when

- one replica of a task is larger than the largest schedulable node (per resource: more devices of its name and
  model, more CPU or more memory than any one node has; or each alone fits some node but no node has all of them):
  :func:`check_replicas`, errors naming ``tasks[i].resources.<name>`` (``resources.<name>`` in the single-task form);
- its gang is larger than the cluster's schedulable nodes together, or than the project's ``capability``:
  :func:`check_gang`.

The gang's demand (:func:`gang_demand`) is, per resource key, the sum of the ``min_available`` smallest per-replica
amounts of that key over all replicas: a lower bound of what any ``min_available`` replicas the scheduler may choose
request together (Volcano's gang plugin admits a PodGroup once ``minAvailable`` of its pods can be placed at once), so
a gang refused here could never start. With the default ``min_available`` (all replicas) it is the job's totals. Keys
are a quota usage's (:mod:`crater_app.domain.quota`): ``cpu`` millicores, ``memory`` bytes, accelerators by name and,
with an ``accelerator_model``, also ``name:model``. Whether the replicas pack onto the nodes (bin packing) is left to
the scheduler: the totals are a necessary condition only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from crater_app.domain.errors import Unschedulable
from crater_app.domain.job_tasks import JobTasks, TaskPlan
from crater_app.domain.quota import Usage, model_key, usage_of
from crater_app.domain.resources import CPU, MEMORY


@dataclass(frozen=True)
class NodeCapacity:
    """What one node has in all (not what is free now): ``cpu_m`` millicores, ``memory_bytes`` bytes, ``devices``
    ``(resource, model)`` of each accelerator; ``schedulable`` false for a node that takes no new work (cordoned,
    NotReady, tainted ``NoSchedule``), which the checks leave out."""

    name: str
    cpu_m: int
    memory_bytes: int
    devices: tuple[tuple[str, str], ...] = ()
    schedulable: bool = True


def _count(node: NodeCapacity, resource: str, model: str | None) -> int:
    return sum(1 for r, m in node.devices if r == resource and (model is None or m == model))


def _fits(task: TaskPlan, model: str | None, node: NodeCapacity) -> bool:
    res = task.resources
    return (res.cpu_m <= node.cpu_m and res.memory_bytes <= node.memory_bytes
            and all(_count(node, name, model) >= n for name, n in res.accelerators.items()))


def _offered(nodes: Sequence[NodeCapacity], resource: str) -> str:
    """The models of ``resource`` the nodes have, each with the most devices one node has: ``4 × A100, 2 × H100``
    (``none`` when no node has the resource)."""
    models = sorted({m for n in nodes for r, m in n.devices if r == resource})
    return ", ".join(f"{max(_count(n, resource, m) for n in nodes)} × {m}" for m in models) or "none"


def check_replica(task: TaskPlan, model: str | None, nodes: Sequence[NodeCapacity]) -> None:
    """Whether one replica of ``task`` (with every device of ``model``, ``None``: any) fits some schedulable node.

    Raises:
        Unschedulable: ``job.no_node`` naming ``<task>.resources`` when no node is schedulable; naming
            ``<task>.resources.<name>`` the first resource (accelerators by name, then cpu, memory) no node has
            enough of: ``job.replica_never_fits_devices`` (``resource``, ``have`` the most devices of it on one node,
            ``request``; "largest node has 4 × nvidia.com/gpu; one replica cannot get 8"),
            ``job.replica_never_fits_model`` (the same and ``model``; naming ``accelerator_model`` when a node has
            enough devices of other models), ``job.replica_model_not_offered`` (``resource``, ``model``,
            ``request``, ``offered``: the models there are, as ``4 × <model>, ...``) when no node has the model, ``job.replica_never_fits_cpu`` /
            ``job.replica_never_fits_memory`` (``have``, ``request``: millicores / bytes); naming
            ``<task>.resources``: ``job.replica_no_single_node`` (``request``: the replica's resources) when each
            resource alone fits some node but none has all.
    """
    usable = [n for n in nodes if n.schedulable]
    if not usable:
        raise Unschedulable("job.no_node", task.field("resources"))
    if any(_fits(task, model, n) for n in usable):
        return
    res = task.resources
    for name, count in sorted(res.accelerators.items()):
        have = max(_count(n, name, model) for n in usable)
        if count > have:
            if model is not None:
                # the model is what is lacking when some node has enough devices of other models
                field = ("accelerator_model" if max(_count(n, name, None) for n in usable) >= count
                         else task.field("resources", name))
                if have == 0:  # no node has the model at all: say which models there are
                    raise Unschedulable("job.replica_model_not_offered", field, resource=name, model=model,
                                        request=count, offered=_offered(usable, name))
                raise Unschedulable("job.replica_never_fits_model", field, resource=name, model=model, have=have,
                                    request=count)
            raise Unschedulable("job.replica_never_fits_devices", task.field("resources", name), resource=name,
                                have=have, request=count)
    cpu = max(n.cpu_m for n in usable)
    if res.cpu_m > cpu:
        raise Unschedulable("job.replica_never_fits_cpu", task.field("resources", CPU), have=cpu, request=res.cpu_m)
    memory = max(n.memory_bytes for n in usable)
    if res.memory_bytes > memory:
        raise Unschedulable("job.replica_never_fits_memory", task.field("resources", MEMORY), have=memory,
                            request=res.memory_bytes)
    raise Unschedulable("job.replica_no_single_node", task.field("resources"),
                        request=usage_of(res, model))


def check_replicas(tasks: Sequence[TaskPlan], model: str | None, nodes: Sequence[NodeCapacity]) -> None:
    """:func:`check_replica` for every task, in order (the first error raised)."""
    for task in tasks:
        check_replica(task, model, nodes)


def gang_demand(plan: JobTasks, model: str | None) -> Usage:
    """What the gang requests at the least (see the module docstring): per usage key, the sum of the
    ``plan.min_available`` smallest per-replica amounts; zero amounts left out."""
    usages = [(usage_of(task.resources, model), task.replicas) for task in plan.tasks]
    keys = {key for usage, _ in usages for key in usage}
    # key -> (amount per replica, replicas) of every task: a task without the key counts as 0 of it
    per_key = {key: [(usage.get(key, 0), replicas) for usage, replicas in usages] for key in keys}
    out: Usage = {}
    for key, amounts in per_key.items():
        left, total = plan.min_available, 0
        for amount, replicas in sorted(amounts):
            take = min(left, replicas)
            total += amount * take
            left -= take
            if not left:
                break
        if total:
            out[key] = total
    return out


def cluster_total(nodes: Sequence[NodeCapacity]) -> Usage:
    """What the schedulable nodes have together, as a usage: ``cpu``, ``memory``, devices by name and by
    ``name:model``."""
    out: Usage = {CPU: 0, MEMORY: 0}
    for node in nodes:
        if not node.schedulable:
            continue
        out[CPU] += node.cpu_m
        out[MEMORY] += node.memory_bytes
        for resource, model in node.devices:
            out[resource] = out.get(resource, 0) + 1
            key = model_key(resource, model)
            out[key] = out.get(key, 0) + 1
    return out


def check_gang(plan: JobTasks, model: str | None, nodes: Sequence[NodeCapacity] | None,
               capability: Mapping[str, int] | None, field: str = "tasks") -> None:
    """Whether the gang could ever be placed: its :func:`gang_demand` within the schedulable nodes' total
    (``nodes``; ``None``: not checked) and within the project's ``capability`` (a quota usage; an absent key has no
    ceiling; ``None``: not checked). ``field`` is what the errors name (``min_available`` when the spec gives it).

    Raises:
        Unschedulable: ``job.gang_exceeds_cluster`` (``gang`` replicas, ``request`` and ``have``: ``{key: amount}``
            of the first key over) or ``job.gang_exceeds_capability`` (``gang``, ``request``, ``capability``).
    """
    demand = gang_demand(plan, model)
    if nodes is not None:
        have = cluster_total(nodes)
        for key in sorted(demand):
            if demand[key] > have.get(key, 0):
                raise Unschedulable("job.gang_exceeds_cluster", field, gang=plan.min_available,
                                    request={key: demand[key]}, have={key: have.get(key, 0)})
    if capability is not None:
        for key in sorted(demand):
            if key in capability and demand[key] > capability[key]:
                raise Unschedulable("job.gang_exceeds_capability", field, gang=plan.min_available,
                                    request={key: demand[key]}, capability={key: capability[key]})
