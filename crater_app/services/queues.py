"""Backend queues from project quotas: every project's ``guarantee``/``deserved``/``capability`` and its members'
shares are handed to :meth:`ClusterBackend.ensure_queue` (on Kubernetes a Volcano ``Queue`` per project with a
child queue per member share, as Crater's reference design does; the local backend has no queues and ignores it).

A quota edit, a project's creation and a member's share change sync that project's queue at once, after their
transaction has committed; the leader syncs every project every ``LeaderLoop.REPAIR_EVERY_S`` seconds, which also
repairs drift (a Queue edited or deleted by hand) and catches up a sync that failed (the cluster unreachable for a
moment): the edit itself never fails because the cluster did not answer.
"""

from __future__ import annotations

import logging

from sqlmodel import select

from crater_app.cluster.base import QUEUES
from crater_app.db.models import Project, ProjectMember, User
from crater_app.domain import quota as q
from crater_app.domain.errors import InvalidInput
from crater_app.services.context import ServiceContext

log = logging.getLogger(__name__)


def share_usage(section: dict) -> dict[str, int]:
    """A stored resource list (a quota section or a member's share, canonical strings) in Crater's units
    (``{"nvidia.com/gpu": "2", "cpu": "500m"}`` -> ``{"nvidia.com/gpu": 2, "cpu": 500}``); one Crater did not store
    itself (unparseable) gives ``{}``."""
    try:
        return q.parse_quota_list(dict(section or {}), "share")
    except InvalidInput:
        return {}


def _quota(project: Project) -> q.Quota:
    """The project's stored quota in Crater's units (millicores, bytes, devices)."""
    return q.Quota(**{name: share_usage(getattr(project, name) or {}) for name in q.SECTIONS})


def desired(ctx: ServiceContext, project_names: list[str] | None = None) -> dict[str, tuple[q.Quota, dict[str, q.Quota]]]:
    """Project name -> (its quota, user name -> the member's share as a capability) for ``project_names`` (``None``:
    every project); members without a share have no child queue."""
    with ctx.session(read_only=True) as s:
        query = select(Project)
        if project_names is not None:
            query = query.where(Project.name.in_(project_names))
        projects = s.exec(query).all()
        ids = [p.id for p in projects]
        shares: dict[int, dict[str, q.Quota]] = {i: {} for i in ids}
        if ids:
            rows = s.exec(select(ProjectMember.project_id, User.username, ProjectMember.share)
                          .join(User, User.id == ProjectMember.user_id)
                          .where(ProjectMember.project_id.in_(ids))).all()
            for project_id, user, share in rows:
                if share:
                    shares[project_id][user] = q.Quota(capability=share_usage(share))
        return {p.name: (_quota(p), shares[p.id]) for p in projects}


def sync(ctx: ServiceContext, project_names: list[str] | None = None) -> int:
    """Hand the queues of ``project_names`` (``None``: every project) to the backend; returns how many it took.

    A backend without :data:`~crater_app.cluster.base.QUEUES` is not called. A queue the backend refuses (the
    cluster unreachable, a refused object) is logged and left to the leader's next repair round; never raises.
    """
    if QUEUES not in ctx.backend.capabilities:
        return 0
    synced = 0
    for name, (quota, shares) in desired(ctx, project_names).items():
        try:
            ctx.backend.ensure_queue(name, quota, shares)
            synced += 1
        except Exception:  # noqa: BLE001 - the next repair round tries again; the edit has already committed
            log.warning("queue of project %s not synced; the leader's repair round tries again", name, exc_info=True)
    return synced
