"""Nodes and their accelerators, with the job holding each device."""

from __future__ import annotations

from sqlmodel import select

from crater_app.cluster.base import NodeInventory
from crater_app.db.models import Job, User
from crater_app.schemas import DevicePublic, NodePublic
from crater_app.domain.errors import Forbidden
from crater_app.domain.policy import Actor, can_read_job, can_read_nodes
from crater_app.services.context import ServiceContext


def capacity(ctx: ServiceContext) -> list[NodeInventory]:
    """The backend's nodes with what they have, their allocations left out (``ClusterBackend.capacity``: no read of
    the backend's state)."""
    return ctx.backend.capacity()


def list_nodes(ctx: ServiceContext, actor: Actor) -> list[NodePublic]:
    """Every node with capacity, allocation and devices. A device's holder (job id, name, user) is shown
    only when the actor may read that job; otherwise the device shows as busy.

    Raises:
        Forbidden: the actor may not read nodes.
    """
    if not can_read_nodes(actor):
        raise Forbidden("nodes.forbidden")
    nodes = ctx.backend.inventory()
    uids = {uid for n in nodes for uid in n.allocations.values()}
    holders: dict[str, tuple[Job, str]] = {}
    if uids:
        with ctx.session(read_only=True) as s:
            for job, username in s.exec(select(Job, User.username).join(User, User.id == Job.user_id).where(Job.uid.in_(uids))):
                holders[job.uid] = (job, username)
    out = []
    for node in nodes:
        devices = []
        for d in node.devices:
            uid = node.allocations.get(d.index)
            held = holders.get(uid) if uid else None
            shown = held is not None and can_read_job(actor, held[0].user_id, held[0].project_id)
            devices.append(DevicePublic(
                index=d.index, resource=d.resource, model=d.model, memory_bytes=d.memory_bytes, uuid=d.uuid,
                virtual=d.virtual, busy=uid is not None, job_id=held[0].id if shown else None,
                job_name=held[0].name if shown else None, user=held[1] if shown else None,
            ))
        out.append(NodePublic(
            name=node.name, backend=ctx.backend.name, device_source=node.source, cpu_m=node.cpu_m,
            memory_bytes=node.memory_bytes, cpu_m_allocated=node.cpu_m_allocated,
            memory_bytes_allocated=node.memory_bytes_allocated, devices=devices,
            models=sorted({d.model for d in node.devices}),
        ))
    return out
