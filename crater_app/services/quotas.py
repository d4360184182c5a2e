"""Project quotas (``guarantee``/``deserved``/``capability``) and member shares: set, read, validate.

Rules (Volcano Queue spec; Crater's accounts): a quota is three resource lists as in a JobSpec, where a key may
carry an accelerator model after a colon (``nvidia.com/gpu:NVIDIA-A100-SXM4-80GB``); ``guarantee <= deserved <=
capability`` per key; ``capability`` ``{}`` means no ceiling, an absent guarantee/deserved key means zero. Only
platform admins set quotas (``policy.can_set_quota``); whoever may read the project reads its quota and usage.
A member's ``share`` is a ceiling inside the project's capability, set by platform admins and the project's admins
(``policy.can_set_share``); it may not exceed the capability on any key the capability gives.

A quota, a share or a quota request may only name resources some node offers (cpu, memory and the accelerator
names and models of the backend's inventory, a cached read: ``domain.resource_names.check_offered_key``), so that a
mistyped ``nvidia.com/gpus`` is refused with "did you mean nvidia.com/gpu?" instead of limiting nothing; a key the
stored list already has stays accepted (a node may be away while its quota is edited).

Every change writes an operation-log row in its transaction and asks the leader loop for a new admission pass
(held jobs may fit the new quota).
"""

from __future__ import annotations

from sqlmodel import Session, select

from crater_app.db.models import Project
from crater_app.schemas import ProjectQuotaPublic
from crater_app.domain import field_paths
from crater_app.domain import quota as q
from crater_app.domain.errors import Forbidden, InvalidInput, NotFound
from crater_app.domain.naming import check_dns1123_label
from crater_app.domain.policy import Actor, can_read_quota, can_set_quota
from crater_app.domain.resource_names import Offered, check_offered_keys
from crater_app.services import admission, oplog, queues
from crater_app.services.context import ServiceContext


def _project(s: Session, actor: Actor, name: object, lock: bool = False) -> Project:
    """The project ``name`` if the actor may read it (else NotFound, so that names are not disclosed)."""
    check_dns1123_label(name, "name")
    stmt = select(Project).where(Project.name == name)
    if lock:
        stmt = stmt.with_for_update()
    project = s.exec(stmt).first()
    if project is None or not can_read_quota(actor, project.id):
        raise NotFound("project.not_found", "name", name=name)
    return project


def offered_resources(ctx: ServiceContext) -> Offered:
    """The accelerator names and models the backend's nodes offer (``backend.inventory()``: the backend's cache,
    no synchronous cluster call)."""
    nodes = ctx.backend.inventory()
    return Offered.of(((d.resource, d.model) for node in nodes for d in node.devices), nodes=len(nodes))


def quota_public(s: Session, project: Project) -> ProjectQuotaPublic:
    """The project's quota as stored plus its admitted usage and job counts now (three indexed queries)."""
    used, admitted, held = admission.project_usage(s, project.id)
    return ProjectQuotaPublic(
        project=project.name, guarantee=dict(project.guarantee or {}), deserved=dict(project.deserved or {}),
        capability=dict(project.capability or {}), used=q.render_quota_list(used), admitted_jobs=admitted,
        held_jobs=held,
    )


def get_quota(ctx: ServiceContext, actor: Actor, project_name: object) -> ProjectQuotaPublic:
    """A project's ``guarantee``/``deserved``/``capability``, its admitted usage and admitted/held job counts.

    Raises:
        InvalidInput: ``project_name`` is not a DNS-1123 label. NotFound: no such project, or the caller may not
        read it (neither a member nor a platform admin).
    """
    with ctx.session(read_only=True) as s:
        return quota_public(s, _project(s, actor, project_name))


def set_quota(ctx: ServiceContext, actor: Actor, project_name: object, body: object) -> ProjectQuotaPublic:
    """Replace the project's quota with ``body`` = ``{"guarantee": {...}, "deserved": {...}, "capability": {...}}``
    (an absent section is ``{}``; quantities as in a JobSpec: ``"8"``, ``"500m"``, ``"64Gi"``; whole devices).

    Amounts are stored in canonical form (``render_quota_list``: cpu ``"4"``/``"500m"``, memory bytes, devices).
    Lowering a capability below what is admitted stops nothing: new jobs wait until usage drops.

    Raises:
        InvalidInput: unknown section, bad key or quantity, negative amount, fractional devices, a resource or model
        no node offers (``resource.not_offered*``/``resource.model_not_offered*``, field ``<section>.<key>``, with
        "did you mean" and what exists), or ``guarantee <= deserved <= capability`` broken (``quota.order``: the key
        and both amounts named). NotFound:
        ``project.not_found`` (not visible to the caller). Forbidden: ``quota.set_forbidden`` (not a platform
        admin).
    """
    offered = offered_resources(ctx)
    with ctx.session() as s:
        project = _project(s, actor, project_name, lock=True)
        if not can_set_quota(actor):
            raise Forbidden("quota.set_forbidden", project=project.name)
        parsed = q.parse_quota(body)
        before = {name: dict(getattr(project, name) or {}) for name in q.SECTIONS}
        for name in q.SECTIONS:
            check_offered_keys(getattr(parsed, name), offered, name, accepted=before[name])
        after = {name: q.render_quota_list(getattr(parsed, name)) for name in q.SECTIONS}
        for name in q.SECTIONS:
            setattr(project, name, after[name])
        s.add(project)
        if before == after:
            oplog.record(s, actor, "project:quota:set", project.name, code="quota.unchanged")
        else:
            old, new = ({name: share_usage(sections[name]) for name in q.SECTIONS} for sections in (before, after))
            oplog.record(s, actor, "project:quota:set", project.name, code="quota.set", args={
                "guarantee_before": old["guarantee"], "guarantee": new["guarantee"],
                "deserved_before": old["deserved"], "deserved": new["deserved"],
                "capability_before": old["capability"], "capability": new["capability"]})
        s.flush()
        result = quota_public(s, project)
    admission.invalidate(ctx)
    queues.sync(ctx, [result.project])
    return result


def parse_share(s: Session, project: Project, raw: object, offered: Offered,
                accepted: dict | None = None) -> dict[str, str]:
    """Validate a member's ``share`` (a quota resource list) against what the nodes offer (``offered``; keys of the
    member's stored share, ``accepted``, pass) and the project's capability, and return it in canonical form (``{}``:
    no per-member limit).

    Raises:
        InvalidInput: field ``share.<key>``: bad key or quantity, a resource or model no node offers
        (``resource.not_offered*``, ``resource.model_not_offered*``), or ``quota.share_over_capability`` (above the
        project's capability on that key: ``share`` and ``capability`` as ``{key: amount}``).
    """
    share = q.parse_quota_list(raw, "share")
    check_offered_keys(share, offered, "share", accepted=accepted or {})
    capability = q.parse_quota_list(project.capability or {}, "capability")
    for key in sorted(share):
        if key in capability and share[key] > capability[key]:
            raise InvalidInput("quota.share_over_capability", field_paths.key("share", key), key=field_paths.key("share", key),
                               share={key: share[key]}, project=project.name, capability={key: capability[key]})
    return q.render_quota_list(share)


def share_usage(section: dict) -> dict[str, int]:
    """A stored resource list in Crater's units, for message arguments (:func:`crater_app.services.queues.share_usage`)."""
    return queues.share_usage(section)

