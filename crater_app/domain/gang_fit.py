"""Whether a job's replicas and its gang could ever be placed: the checks of the submit path (pure).

A job is refused at submission, never left queued for ever, when

- its ``node_selector`` matches no schedulable node: :func:`select_nodes`, naming ``node_selector.<key>``; the
  checks below then look only at the nodes it matches (as the scheduler does);
- one replica of a task is larger than the largest schedulable node (per resource: more devices of its name and
  model, more CPU or more memory than any one node has; or each alone fits some node but no node has all of them):
  :func:`check_replicas`, errors naming ``tasks[i].resources.<name>`` (``resources.<name>`` in the single-task form);
- its gang is larger than the cluster's schedulable nodes together, or than the project's ``capability``, or its
  replicas cannot all be placed on the nodes at once: :func:`check_gang`.

The gang's demand (:func:`gang_demand`) is, per resource key, the sum of the ``min_available`` smallest per-replica
amounts of that key over all replicas: a lower bound of what any ``min_available`` replicas the scheduler may choose
request together (Volcano's gang plugin admits a PodGroup once ``minAvailable`` of its pods can be placed at once), so
a gang refused by it could never start. With the default ``min_available`` (all replicas) it is the job's totals. Keys
are a quota usage's (:mod:`crater_app.domain.quota`): ``cpu`` millicores, ``memory`` bytes, accelerators by name and,
with an ``accelerator_model``, also ``name:model``.

Sums are not enough (2 replicas of 3 GPUs on nodes of 4 and 2 GPUs: 6 ≤ 6, yet only one fits), so
:func:`placeable` also counts how many replicas the nodes hold at once, each replica on one node: greedy, node by
node (largest first), each task's replicas as many as still fit, tasks largest first (and, for a gang smaller than
the job, also smallest first; the better count wins). It is a necessary check, not a scheduler: exact for replicas
of one size, and for mixed sizes a heuristic the scheduler can only match or beat in the usual shapes; which node
each replica gets is the scheduler's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from crater_app.domain import field_paths

from crater_app.domain.errors import Unschedulable
from crater_app.domain.job_tasks import JobTasks, TaskPlan
from crater_app.domain.quota import Usage, model_key, usage_of
from crater_app.domain.resources import CPU, MEMORY


@dataclass(frozen=True)
class NodeCapacity:
    """What one node has in all (not what is free now): ``cpu_m`` millicores, ``memory_bytes`` bytes, ``devices``
    ``(resource, model)`` of each accelerator; ``schedulable`` false for a node that takes no new work (cordoned,
    NotReady, tainted ``NoSchedule``), which the checks leave out; ``labels`` the node's labels (what a
    ``node_selector`` matches)."""

    name: str
    cpu_m: int
    memory_bytes: int
    devices: tuple[tuple[str, str], ...] = ()
    schedulable: bool = True
    labels: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)


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


def select_nodes(nodes: Sequence[NodeCapacity], selector: Mapping[str, str]) -> list[NodeCapacity]:
    """The schedulable nodes whose labels have every ``key: value`` of ``selector`` (a ``node_selector``, matched
    as Kubernetes' ``nodeSelector`` is: the label present with exactly that value). ``[]`` when no node is
    schedulable (:func:`check_replica` then says so).

    Raises:
        Unschedulable: ``job.node_selector_unmatched`` naming ``node_selector.<key>`` (``key``, ``value``,
            ``with_key`` how many schedulable nodes have the label at all, ``nodes`` how many are schedulable) for
            the first key (in order) no schedulable node matches; ``job.node_selector_no_node`` naming
            ``node_selector`` (``labels``: ``key=value, ...``) when each label matches some node but none has all.
    """
    usable = [n for n in nodes if n.schedulable]
    if not usable or not selector:
        return usable
    for key, value in selector.items():
        if not any(n.labels.get(key) == value for n in usable):
            raise Unschedulable("job.node_selector_unmatched", field_paths.key("node_selector", key),
                                key=field_paths.shown(key), value=value, nodes=len(usable),
                                with_key=sum(1 for n in usable if key in n.labels))
    matched = [n for n in usable if all(n.labels.get(k) == v for k, v in selector.items())]
    if not matched:
        raise Unschedulable("job.node_selector_no_node", "node_selector",
                            labels=", ".join(f"{field_paths.shown(k)}={v}" for k, v in selector.items()))
    return matched


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


#: nodes a packing message names (the ones holding most first); the others are counted in ``nodes``
MAX_NODES_NAMED = 6


def _free(node: NodeCapacity, model: str | None) -> dict[str, int]:
    free = {CPU: node.cpu_m, MEMORY: node.memory_bytes}
    for resource, m in node.devices:
        if model is None or m == model:
            free[resource] = free.get(resource, 0) + 1
    return free


def _need(task: TaskPlan) -> dict[str, int]:
    res = task.resources
    return {key: amount for key, amount in ((CPU, res.cpu_m), (MEMORY, res.memory_bytes),
                                              *res.accelerators.items()) if amount > 0}


def _size(task: TaskPlan) -> tuple[int, int, int]:
    res = task.resources
    return sum(res.accelerators.values()), res.cpu_m, res.memory_bytes


def _pack(order: Sequence[TaskPlan], gang: int, nodes: Sequence[NodeCapacity], model: str | None) -> dict[str, int]:
    """Node name -> how many replicas it holds, filling node by node, each task in ``order`` taking as many of its
    replicas as still fit, until ``gang`` are placed."""
    left = {t.name: t.replicas for t in order}
    placed: dict[str, int] = {}
    total = 0
    for node in nodes:
        free = _free(node, model)
        held = 0
        for task in order:
            need = _need(task)
            fit = min([left[task.name], gang - total - held]
                      + [free.get(key, 0) // amount for key, amount in need.items()])
            if fit <= 0:
                continue
            for key, amount in need.items():
                free[key] -= amount * fit
            left[task.name] -= fit
            held += fit
        placed[node.name] = held
        total += held
        if total >= gang:
            break
    return placed


def placeable(plan: JobTasks, model: str | None, nodes: Sequence[NodeCapacity]) -> dict[str, int]:
    """How many of the gang's replicas the schedulable ``nodes`` hold at once (see the module docstring): node name
    -> replicas on it, at most ``plan.min_available`` in all; each replica on one node, its devices of ``model`` when
    given (a task without accelerators goes on any node, as it gets no model affinity)."""
    usable = sorted((n for n in nodes if n.schedulable),
                    key=lambda n: (-len(n.devices), -n.cpu_m, -n.memory_bytes, n.name))
    largest = sorted(plan.tasks, key=_size, reverse=True)
    best = _pack(largest, plan.min_available, usable, model)
    if sum(best.values()) < plan.min_available and plan.min_available < plan.replica_count:
        smallest = _pack(list(reversed(largest)), plan.min_available, usable, model)
        if sum(smallest.values()) > sum(best.values()):
            best = smallest
    return best


def _named(placed: Mapping[str, int], nodes: Sequence[NodeCapacity]) -> str:
    counts = {n.name: placed.get(n.name, 0) for n in nodes if n.schedulable}
    shown = sorted(counts, key=lambda name: (-counts[name], name))[:MAX_NODES_NAMED]
    text = ", ".join(f"{name}: {counts[name]}" for name in shown)
    return text + (", …" if len(counts) > len(shown) else "")


def check_gang(plan: JobTasks, model: str | None, nodes: Sequence[NodeCapacity] | None,
               capability: Mapping[str, int] | None, field: str = "tasks") -> None:
    """Whether the gang could ever be placed: its :func:`gang_demand` within the schedulable nodes' total
    (``nodes``; ``None``: not checked) and within the project's ``capability`` (a quota usage; an absent key has no
    ceiling; ``None``: not checked). ``field`` is what the errors name (``min_available`` when the spec gives it).

    With ``nodes``, also whether the nodes hold the gang's replicas at once (:func:`placeable`).

    Raises:
        Unschedulable: ``job.gang_exceeds_cluster`` (``gang`` replicas, ``request`` and ``have``: ``{key: amount}``
            of the first key over) or ``job.gang_exceeds_capability`` (``gang``, ``request``, ``capability``);
            when the replicas do not pack (``gang``, ``placed`` how many fit at once, ``nodes`` how many nodes are
            schedulable, ``per_node`` ``name: count, ...`` of at most :data:`MAX_NODES_NAMED` nodes):
            ``job.gang_cannot_pack_task`` naming ``<task>.resources`` for a job of one task (and ``request``, one
            replica's resources), else ``job.gang_cannot_pack`` naming ``field``.
    """
    demand = gang_demand(plan, model)
    if nodes is not None:
        have = cluster_total(nodes)
        for key in sorted(demand):
            if demand[key] > have.get(key, 0):
                raise Unschedulable("job.gang_exceeds_cluster", field, gang=plan.min_available,
                                    request={key: demand[key]}, have={key: have.get(key, 0)})
        placed = placeable(plan, model, nodes)
        count = sum(placed.values())
        if count < plan.min_available:
            per_node, usable = _named(placed, nodes), sum(1 for n in nodes if n.schedulable)
            if len(plan.tasks) == 1:
                (task,) = plan.tasks
                raise Unschedulable("job.gang_cannot_pack_task", task.field("resources"), gang=plan.min_available,
                                    request=usage_of(task.resources, model), placed=count, nodes=usable,
                                    per_node=per_node)
            raise Unschedulable("job.gang_cannot_pack", field, gang=plan.min_available, placed=count, nodes=usable,
                                per_node=per_node)
    if capability is not None:
        for key in sorted(demand):
            if key in capability and demand[key] > capability[key]:
                raise Unschedulable("job.gang_exceeds_capability", field, gang=plan.min_available,
                                    request={key: demand[key]}, capability={key: capability[key]})
