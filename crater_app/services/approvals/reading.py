"""Reading approval requests: their public form (names resolved in bulk), the page of requests a caller may read,
one request, and the visibility check the deciding path shares."""

from __future__ import annotations

from sqlalchemy import and_, func, or_
from sqlmodel import Session, select

from crater_app.db.models import Approval, Job, Project, User
from crater_app.domain import quota as quota_lists
from crater_app.domain.approvals import KINDS, STATUSES
from crater_app.domain.errors import InvalidInput, NotFound
from crater_app.domain.paging import check_page
from crater_app.domain.policy import Actor, approval_projects, can_decide_approval, can_read_approval
from crater_app.schemas import ApprovalPage, ApprovalPublic
from crater_app.services.context import ServiceContext

MAX_PAGE_SIZE = 200


def effective_project(a: Approval, job: Job | None) -> int | None:
    """The project a request belongs to: its own ``project_id``, else its job's (rows written by the
    submission path may leave ``project_id`` empty)."""
    return a.project_id if a.project_id is not None else (job.project_id if job is not None else None)


def stored_quota(project: Project) -> dict[str, dict]:
    """The project's quota sections as stored (resource lists; ``{}`` for an empty section)."""
    return {section: dict(getattr(project, section) or {}) for section in quota_lists.SECTIONS}


def _current(a: Approval, job: Job | None, project: Project | None) -> dict:
    if a.kind == "quota":
        return {} if project is None else stored_quota(project)
    if job is None:
        return {}
    if a.kind == "extend_runtime":
        return {"max_runtime": job.max_runtime_s}
    if a.kind == "reclaim_lock":
        return {"reclaim_lock": job.reclaim_lock}
    return {"phase": job.phase, "gpus": job.gpus}


def publics(s: Session, actor: Actor, rows: list[Approval]) -> list[ApprovalPublic]:
    """Public forms of ``rows`` with names resolved in three queries (users, jobs, projects)."""
    job_ids = {a.job_id for a in rows if a.job_id is not None}
    jobs = {j.id: j for j in s.exec(select(Job).where(Job.id.in_(job_ids)))} if job_ids else {}  # type: ignore[union-attr]
    project_ids = {effective_project(a, jobs.get(a.job_id)) for a in rows} - {None}
    projects = ({p.id: p for p in s.exec(select(Project).where(Project.id.in_(project_ids)))}  # type: ignore[union-attr]
                if project_ids else {})
    user_ids = {a.requester_id for a in rows} | {a.decided_by for a in rows if a.decided_by is not None}
    names = dict(s.exec(select(User.id, User.username).where(User.id.in_(user_ids))).all()) if user_ids else {}  # type: ignore[union-attr]
    out = []
    for a in rows:
        job = jobs.get(a.job_id) if a.job_id is not None else None
        pid = effective_project(a, job)
        project = projects.get(pid) if pid is not None else None
        out.append(ApprovalPublic(
            id=a.id, kind=a.kind, status=a.status, requester=names.get(a.requester_id, f"#{a.requester_id}"),
            project=project.name if project else None, job_id=a.job_id, job_name=job.name if job else None,
            payload=a.payload, current=_current(a, job, project), reason=a.reason, auto=a.auto,
            decided_by=names.get(a.decided_by) if a.decided_by is not None else None,
            decision_note=a.decision_note, created_at=a.created_at, decided_at=a.decided_at,
            can_decide=a.status == "pending" and can_decide_approval(actor, a.kind, pid, a.requester_id),
            decision_code=a.decision_code, decision_args=dict(a.decision_args or {}),
            reason_code=a.reason_code, reason_args=dict(a.reason_args or {}),
        ))
    return out


def list_approvals(
    ctx: ServiceContext, actor: Actor, status: str | None = None, kind: str | None = None, mine: bool = False,
    page: int = 1, page_size: int = 20,
) -> ApprovalPage:
    """Requests the caller may read, newest first: every request for platform admins, those of the projects
    they administer plus their own for others; ``mine`` keeps only the caller's own.

    Raises:
        InvalidInput: ``approval.status``/``approval.kind`` (unknown ``status``/``kind``; the choices named),
        ``page.*`` (``page`` outside 1..1,000,000, ``page_size`` outside 1..200).
    """
    if status is not None and status not in STATUSES:
        raise InvalidInput("approval.status", "status", statuses=list(STATUSES))
    if kind is not None and kind not in KINDS:
        raise InvalidInput("approval.kind", "kind", kinds=list(KINDS))
    check_page(page, page_size, MAX_PAGE_SIZE)

    def where(stmt):
        if mine:
            stmt = stmt.where(Approval.requester_id == actor.user_id)
        elif not actor.is_admin:
            visible = [Approval.requester_id == actor.user_id]
            admin_of = approval_projects(actor)
            if admin_of:
                # Each term can use an index (requester_id, project_id), so the OR is a union of index lookups;
                # rows without project_id (written by the submission path) are matched through their job.
                visible.append(Approval.project_id.in_(admin_of))  # type: ignore[union-attr]
                visible.append(and_(Approval.project_id.is_(None),  # type: ignore[union-attr]
                                    Approval.job_id.in_(select(Job.id).where(Job.project_id.in_(admin_of)))))  # type: ignore[union-attr]
            stmt = stmt.where(or_(*visible))
        if status:
            stmt = stmt.where(Approval.status == status)
        if kind:
            stmt = stmt.where(Approval.kind == kind)
        return stmt

    with ctx.session(read_only=True) as s:
        total = s.exec(where(select(func.count()).select_from(Approval))).one()
        rows = list(s.exec(where(select(Approval)).order_by(Approval.id.desc())  # type: ignore[union-attr]
                           .offset((page - 1) * page_size).limit(page_size)).all())
        return ApprovalPage(items=publics(s, actor, rows), total=total, page=page, page_size=page_size)


def visible(s: Session, actor: Actor, approval_id: object, lock: bool = False) -> tuple[Approval, Job | None, int | None]:
    """Request ``approval_id`` with its job and project id, when the caller may read it (``lock``: rows locked
    for update, on PostgreSQL).

    Raises:
        NotFound: ``approval.not_found`` (field ``id``): no such request, or the caller may not read it.
    """
    if isinstance(approval_id, bool) or not isinstance(approval_id, int) or not 0 < approval_id < 2**63:
        raise NotFound("approval.not_found", "id", id=str(approval_id)[:32])
    stmt = select(Approval).where(Approval.id == approval_id)
    a = s.exec(stmt.with_for_update() if lock else stmt).first()
    job = None
    if a is not None and a.job_id is not None:
        job_stmt = select(Job).where(Job.id == a.job_id)
        job = s.exec(job_stmt.with_for_update() if lock else job_stmt).first()
    pid = effective_project(a, job) if a is not None else None
    if a is None or not can_read_approval(actor, a.requester_id, pid):
        raise NotFound("approval.not_found", "id", id=approval_id)
    return a, job, pid


def get_approval(ctx: ServiceContext, actor: Actor, approval_id: int) -> ApprovalPublic:
    """One request. Raises :class:`NotFound` (``approval.not_found``) when it does not exist or the caller may not
    read it."""
    with ctx.session(read_only=True) as s:
        a, _, _ = visible(s, actor, approval_id)
        return publics(s, actor, [a])[0]
