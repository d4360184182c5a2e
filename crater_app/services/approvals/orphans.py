"""Closing the pending requests whose target is gone (the leader loop's sweep)."""

from __future__ import annotations

from sqlalchemy import and_, bindparam, func, or_, update
from sqlmodel import select

from crater_app.db.models import Approval, Job, OperationLog, Project
from crater_app.db.types import utcnow
from crater_app.domain.approvals import JOB_KINDS
from crater_app.domain.jobs import TERMINAL_PHASES, JobPhase
from crater_app.services import notifications, oplog
from crater_app.services.approvals import notices
from crater_app.services.context import ServiceContext

_TERMINAL = tuple(p.value for p in TERMINAL_PHASES)


def close_orphans(ctx: ServiceContext) -> int:
    """Close every pending request whose target is gone (see :func:`notices.lost_target`); called by the leader
    loop.

    One query on the pending requests (index ``ix_approvals_status_id``) joined with their jobs and projects
    finds them; usually it returns nothing. Each is closed with a conditional UPDATE (``status = 'pending'``),
    so a decision made at the same moment wins and nothing is closed twice.

    Returns:
        How many requests were closed.
    """
    now = utcnow()
    stmt = (
        select(Approval, Job, Project)
        .outerjoin(Job, Job.id == Approval.job_id)
        .outerjoin(Project, Project.id == func.coalesce(Approval.project_id, Job.project_id))
        .where(Approval.status == "pending")
        .where(or_(
            and_(Approval.kind.in_(JOB_KINDS), or_(Job.id.is_(None), Job.phase.in_(_TERMINAL))),  # type: ignore[union-attr]
            and_(Approval.kind == "large_job", Job.phase != JobPhase.HELD.value),
            and_(Approval.kind == "quota", or_(Project.id.is_(None), Project.expires_at <= now)),  # type: ignore[union-attr]
        ))
        # Locked (PostgreSQL) and so still pending when updated below; a request being decided right now is
        # skipped (the decision closes it itself, or the next round does).
        .with_for_update(of=Approval, skip_locked=True)  # type: ignore[arg-type]
    )
    with ctx.session() as s:
        found = []
        for a, job, project in s.exec(stmt).all():
            why = notices.lost_target(a, job, project)
            if why is not None:
                found.append((a, why, notices.target_of(a, job, project)))
        if not found:
            return 0
        # Written in three statements whatever the number (an executemany each), so that the write transaction
        # stays short when many jobs ended at once.
        notes = {a.id: notices.closed_note(why) for a, why, _ in found}
        s.connection().execute(
            update(Approval.__table__).where(Approval.__table__.c.id == bindparam("b_id"))
            .values(status="closed", decided_at=now, decision_code=bindparam("b_code"),
                    decision_args=bindparam("b_args"), decision_note=bindparam("b_note")),
            [{"b_id": a.id, "b_code": notes[a.id][0], "b_args": notes[a.id][1], "b_note": notes[a.id][2]}
             for a, _, _ in found],
        )
        notifications.add_rows(s, [notices.outcome_row(a, None, "closed", target, why=why) for a, why, target in found])
        s.connection().execute(OperationLog.__table__.insert(), [
            oplog.row(None, "approval:close", f"approval#{a.id}", code="approval.closed",
                      args={"kind": a.kind, "why": why})
            for a, why, _ in found])
        for a, _, _ in found:
            s.expunge(a)  # the rows were changed behind the ORM's back
    return len(found)
