"""Billing in points: the price table, balances, grants, each project's member allowance, charging running jobs,
settling finished ones, and refusing submissions when both balances are used up (rules: :mod:`domain.billing`).

Books: every movement is a ``point_ledger`` row. Charges against a member's free allowance are rows of source
``allowance`` (negative, with the job's project and the period ``YYYY-MM``); the allowance itself is not written:
a member has ``Project.member_allowance_points`` per period, minus those charges. Grants and charges of the extra
balance are rows of source ``extra`` (grants positive, charges negative), mirrored in ``User.extra_points``
(changed with ``UPDATE ... SET extra_points = extra_points + x``, so concurrent grants and charges never lose one).

Charging: :func:`charge_running` (called by the leader loop through :func:`charge_if_due`, at most every
``settings.billing_charge_interval_s``) charges each running job from ``Job.charged_until`` (or its start) to now,
and each finished job up to its ``finished_at``; it moves ``charged_until`` with a compare-and-set, so running it
twice, or in two processes, never charges the same second twice. A charge that spans the first of a month is
split: the part before it is paid from the old month's allowance, the rest from the new one's. The job's rate is
read at charge time (a price change applies from the next charge).

Limits: with billing off nothing is charged; when it is switched on, running jobs are charged from their start
(or from their last charge) and jobs that finished in the last day are settled. The price of an accelerator model
applies to jobs that asked for that model (``accelerator_model``); a job that accepted any model pays the generic
price.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from sqlalchemy import and_, func, or_
from sqlalchemy import select as sa_select
from sqlmodel import Session, select

from crater_app.db.models import BillingPrice, Job, PointLedger, Project, ProjectMember, User
from crater_app.schemas import (
    BalancePublic,
    BillingPricePublic,
    PointGrantPublic,
    ProjectBalancePublic,
    ProjectBillingPublic,
)
from crater_app.db.types import utcnow
from crater_app.domain.billing import (
    Price,
    cost,
    exhausted,
    hourly_rate,
    period_of,
    price_table,
    split_charge,
    validate_allowance,
    validate_grant,
    validate_prices,
)
from crater_app.domain.errors import Forbidden, NotFound, PaymentRequired
from crater_app.domain.jobs import TERMINAL_PHASES, JobPhase
from crater_app.db.queries.users import user_by_name
from crater_app.domain.naming import check_dns1123_label, check_username
from crater_app.domain.policy import Actor, can_manage_billing, can_read_balance, can_read_prices, can_read_project
from crater_app.domain.resource_names import check_offered_key
from crater_app.domain.resources import parse_resources
from crater_app.domain.usage import split
from crater_app.services import oplog
from crater_app.services.context import ServiceContext
from crater_app.services.quotas import offered_resources

#: finished jobs never charged (they ran between two charges) are settled when they ended at most this long ago
SETTLE_LOOKBACK = timedelta(days=1)
_JOBS, _LEDGER, _USERS = Job.__table__, PointLedger.__table__, User.__table__
_TERMINAL = tuple(p.value for p in TERMINAL_PHASES)
#: phases in which a started job holds its devices now (a ``Stopping`` job until its last process has exited)
_HOLDING = (JobPhase.RUNNING.value, JobPhase.STOPPING.value)
#: phases of a job whose last run has ended: final, or back in the queue after a preemption (``attempt`` > 1)
_WAITING = (JobPhase.HELD.value, JobPhase.QUEUED.value)
_DUE_KEY = "billing:charged-at"


# ---- prices -------------------------------------------------------------------------------------------------------


def _price_public(p: BillingPrice) -> BillingPricePublic:
    return BillingPricePublic(resource=p.resource, model=p.model, points_per_hour=p.points_per_hour,
                              updated_at=p.updated_at)


def list_prices(ctx: ServiceContext, actor: Actor) -> list[BillingPricePublic]:
    """The price table by resource then model (every signed-in user). Raises :class:`Forbidden` otherwise."""
    if not can_read_prices(actor):
        raise Forbidden("billing.read_prices_forbidden")
    with ctx.session(read_only=True) as s:
        rows = s.exec(select(BillingPrice).order_by(BillingPrice.resource, BillingPrice.model)).all()
        return [_price_public(p) for p in rows]


def set_prices(ctx: ServiceContext, actor: Actor, raw: object) -> list[BillingPricePublic]:
    """Replace the price table with ``raw``, a list of ``{resource, model?, points_per_hour}`` (platform admins;
    rules in :func:`domain.billing.validate_prices`). Unchanged rows keep their ``updated_at``. Writes one
    operation-log row ``billing:prices:set`` listing the new table.

    Raises:
        Forbidden: not a platform admin. InvalidInput: a bad row (field such as ``prices[1].points_per_hour``), or a
        resource or model no node offers (``resource.*``, field ``prices[1].resource``/``prices[1].model``, with
        "did you mean" and what exists; rows already in the table stay accepted).
    """
    if not can_manage_billing(actor):
        raise Forbidden("billing.set_prices_forbidden")
    prices = validate_prices(raw)
    wanted = {(p.resource, p.model): p for p in prices}
    offered = offered_resources(ctx)
    now = utcnow()
    with ctx.session() as s:
        current = {(p.resource, p.model): p for p in s.exec(select(BillingPrice)).all()}
        for i, price in enumerate(prices):  # a price on nvidia.com/gpus charges nothing (stored rows stay accepted)
            if (price.resource, price.model) not in current:
                check_offered_key(price.resource, price.model or None, offered, f"prices[{i}].resource",
                                  f"prices[{i}].model")
        for key, row in current.items():
            if key not in wanted:
                s.delete(row)
        s.flush()
        for key, price in wanted.items():
            row = current.get(key)
            if row is None:
                s.add(BillingPrice(resource=price.resource, model=price.model,
                                   points_per_hour=price.points_per_hour, updated_at=now))
            elif row.points_per_hour != price.points_per_hour:
                row.points_per_hour, row.updated_at = price.points_per_hour, now
                s.add(row)
        s.flush()
        if prices:
            oplog.record(s, actor, "billing:prices:set", "billing-prices", code="billing.prices_set",
                         args={"prices": [_price_text(p) for p in prices]})
        else:
            oplog.record(s, actor, "billing:prices:set", "billing-prices", code="billing.prices_cleared")
        rows = s.exec(select(BillingPrice).order_by(BillingPrice.resource, BillingPrice.model)).all()
        return [_price_public(p) for p in rows]


def _price_text(price: Price) -> str:
    """One price for the operation log, in no language: ``nvidia.com/gpu (NVIDIA-A100-SXM4-80GB): 10``."""
    return f"{price.resource}{f' ({price.model})' if price.model else ''}: {price.points_per_hour:g}"


def _prices(s: Session) -> list[Price]:
    return [Price(p.resource, p.model, p.points_per_hour) for p in s.exec(select(BillingPrice)).all()]


# ---- balances -----------------------------------------------------------------------------------------------------


def _allowance_used(s: Session, user_id: int, project_id: int, period: str) -> float:
    """Points charged against the user's allowance in the project and period (>= 0)."""
    total = s.execute(sa_select(func.coalesce(func.sum(_LEDGER.c.points), 0.0)).where(
        _LEDGER.c.user_id == user_id, _LEDGER.c.period == period, _LEDGER.c.project_id == project_id,
        _LEDGER.c.source == "allowance",
    )).scalar_one()
    return max(0.0, -float(total))


def _allowance(s: Session, user_id: int, project: Project) -> float:
    """The user's free allowance per period in ``project``: the project's member allowance for members, else 0."""
    if project.member_allowance_points <= 0 or s.get(ProjectMember, (project.id, user_id)) is None:
        return 0.0
    return float(project.member_allowance_points)


def _extra(s: Session, user_id: int) -> float:
    return float(s.execute(sa_select(_USERS.c.extra_points).where(_USERS.c.id == user_id)).scalar_one_or_none() or 0.0)


def balance(ctx: ServiceContext, actor: Actor, project: object = None, now: datetime | None = None) -> BalancePublic:
    """The caller's own balances: the extra balance and, per project (the given one, or each of the caller's
    projects), the free allowance of the current period, what was used of it and what is left.

    Raises:
        InvalidInput: ``project`` not a DNS-1123 label. NotFound: the project does not exist or the caller is
        not a member (nor a platform admin).
    """
    if not can_read_balance(actor):
        raise Forbidden("billing.balance_forbidden")
    period = period_of(now or utcnow())
    with ctx.session(read_only=True) as s:
        if project is not None:
            check_dns1123_label(project, "project")
            found = s.exec(select(Project).where(Project.name == project)).first()
            if found is None or not can_read_project(actor, found.id):
                raise NotFound("project.not_found", "project", name=project)
            chosen = [found]
        else:
            ids = list(actor.project_roles)
            chosen = list(s.exec(select(Project).where(Project.id.in_(ids)).order_by(Project.name))) if ids else []  # type: ignore[union-attr]
        rows = []
        for p in chosen:
            allowance = _allowance(s, actor.user_id, p)
            used = _allowance_used(s, actor.user_id, p.id, period)
            rows.append(ProjectBalancePublic(project=p.name, allowance_points=allowance, used_points=round(used, 6),
                                             left_points=round(max(0.0, allowance - used), 6)))
        return BalancePublic(username=actor.username, billing_enabled=ctx.settings.billing_enabled, period=period,
                             extra_points=round(_extra(s, actor.user_id), 6), projects=rows)


def grant_points(ctx: ServiceContext, actor: Actor, username: object, points: object,
                 note: object = "") -> PointGrantPublic:
    """Add ``points`` to ``username``'s extra balance (negative: take them back), with a ledger row of source
    ``extra`` and an operation-log row ``billing:grant`` (platform admins).

    Raises:
        Forbidden: not a platform admin. InvalidInput: bad username, ``points`` 0 or beyond +-1e9, ``note`` over
        255 characters. NotFound: no such user.
    """
    if not can_manage_billing(actor):
        raise Forbidden("billing.grant_forbidden")
    check_username(username, "username")
    value, text = validate_grant(points, note)
    now = utcnow()
    with ctx.session() as s:
        user = user_by_name(s, username)  # type: ignore[arg-type] - by key: 'Alice' finds 'alice'
        if user is None:
            raise NotFound("billing.unknown_user", "username", name=username)
        s.execute(_USERS.update().where(_USERS.c.id == user.id).values(extra_points=_USERS.c.extra_points + value))
        s.execute(_LEDGER.insert(), {"at": now, "user_id": user.id, "project_id": None, "job_id": None,
                                     "period": period_of(now), "source": "extra", "points": value,
                                     "note": text})
        if text:
            oplog.record(s, actor, "billing:grant", user.username, code="billing.granted_note",
                         args={"points": value, "note": text})
        else:
            oplog.record(s, actor, "billing:grant", user.username, code="billing.granted", args={"points": value})
        after = _extra(s, user.id)
        return PointGrantPublic(username=user.username, points=value, note=text, extra_points=round(after, 6))


def set_project_billing(ctx: ServiceContext, actor: Actor, name: object,
                        member_allowance_points: object) -> ProjectBillingPublic:
    """Set the free points each member of project ``name`` gets per billing period (platform admins); applies to
    the current period at once. Writes ``project:billing:set`` to the operation log.

    Raises:
        InvalidInput: bad name, or the points outside 0..1e9 (field ``member_allowance_points``). NotFound: the
        project is not visible to the caller. Forbidden: visible, but the caller is not a platform admin.
    """
    check_dns1123_label(name, "name")
    with ctx.session() as s:
        project = s.exec(select(Project).where(Project.name == name)).first()
        if project is None or not can_read_project(actor, project.id):
            raise NotFound("project.not_found", "name", name=name)
        if not can_manage_billing(actor):
            raise Forbidden("billing.set_project_forbidden", project=project.name)
        points = validate_allowance(member_allowance_points)
        before = project.member_allowance_points
        project.member_allowance_points = points
        s.add(project)
        oplog.record(s, actor, "project:billing:set", project.name, code="billing.allowance_set",
                     args={"before": before, "after": points})
        return ProjectBillingPublic(project=project.name, member_allowance_points=points)


# ---- admission ----------------------------------------------------------------------------------------------------


def check_can_submit(ctx: ServiceContext, actor: Actor, project_id: int, now: datetime | None = None) -> None:
    """Refuse a submission to ``project_id`` when billing is on and both of the actor's balances are used up
    (nothing left of the free allowance in that project this period, and no positive extra balance).

    Does nothing when ``settings.billing_enabled`` is off (the default).

    Raises:
        PaymentRequired: ``billing.exhausted`` (HTTP 402, field ``project``; ``project``, ``allowance`` and
        ``extra`` points, rounded to 2 decimals).
    """
    if not ctx.settings.billing_enabled:
        return
    period = period_of(now or utcnow())
    with ctx.session(read_only=True) as s:
        project = s.get(Project, project_id)
        if project is None:
            raise NotFound("project.id_not_found", "project", id=project_id)
        allowance = _allowance(s, actor.user_id, project)
        left = allowance - _allowance_used(s, actor.user_id, project_id, period)
        extra = _extra(s, actor.user_id)
    if exhausted(left, extra):
        raise PaymentRequired("billing.exhausted", "project", project=project.name, allowance=round(allowance, 2),
                              extra=round(extra, 2))


# ---- charging -----------------------------------------------------------------------------------------------------


def charge_if_due(ctx: ServiceContext, now: datetime | None = None) -> int:
    """:func:`charge_running` when billing is on and ``settings.billing_charge_interval_s`` passed since the last
    charge of this context (the leader loop calls this every round). Returns how many jobs were charged."""
    if not ctx.settings.billing_enabled:
        return 0
    last = ctx.cache.get(_DUE_KEY)
    if last is not None and time.monotonic() - last < ctx.settings.billing_charge_interval_s:
        return 0
    ctx.cache[_DUE_KEY] = time.monotonic()
    return charge_running(ctx, now or utcnow())


def charge_running(ctx: ServiceContext, now: datetime) -> int:
    """Charge every running job from its ``charged_until`` (or start) to ``now`` and settle every finished job up
    to its ``finished_at``: ledger rows (allowance of the job's project first, then the owner's extra balance),
    ``Job.charged_points``, ``Job.charged_until``. Idempotent (a second call at the same ``now`` charges nothing).

    Does nothing when billing is off. Returns how many jobs moved their ``charged_until``.
    """
    if not ctx.settings.billing_enabled:
        return 0
    c = _JOBS.c
    stmt = sa_select(c.id, c.user_id, c.project_id, c.phase, c.resources, c.cpu_m, c.memory_bytes,
                     c.accelerator_model, c.started_at, c.finished_at, c.charged_until).where(
        c.started_at.is_not(None),
        or_(
            and_(c.phase.in_(_HOLDING), or_(c.charged_until.is_(None), c.charged_until < now)),
            and_(or_(c.phase.in_(_TERMINAL), and_(c.phase.in_(_WAITING), c.attempt > 1)), c.finished_at.is_not(None),
                 or_(and_(c.charged_until.is_not(None), c.charged_until < c.finished_at),
                     and_(c.charged_until.is_(None), c.finished_at >= now - SETTLE_LOOKBACK))),
        ),
    )
    charged = 0
    with ctx.session() as s:
        jobs = s.execute(stmt).all()
        if not jobs:
            return 0
        table = price_table(_prices(s))
        projects: dict[int, Project] = {}
        left: dict[tuple[int, int, str], float] = {}  # (user, project, period) -> allowance left
        for job in jobs:
            start = job.charged_until or job.started_at
            end = now if job.phase in _HOLDING else job.finished_at
            if end > now:
                end = now
            guard = c.charged_until.is_(None) if job.charged_until is None else c.charged_until == job.charged_until
            if end <= start:
                if job.charged_until is None and job.phase not in _HOLDING:  # never ran long enough: mark it settled
                    s.execute(_JOBS.update().where(c.id == job.id, guard).values(charged_until=job.finished_at))
                continue
            rate = hourly_rate(table, job.cpu_m, job.memory_bytes, parse_resources(job.resources).accelerators,
                               job.accelerator_model)
            pieces = [(period, cost(rate, seconds)) for period, seconds in split(start, end, "month")]
            total = sum(points for _, points in pieces)
            moved = s.execute(_JOBS.update().where(c.id == job.id, guard).values(
                charged_until=end, charged_points=c.charged_points + total)).rowcount
            if moved != 1:  # charged meanwhile by another process: that charge stands
                continue
            charged += 1
            project = projects.get(job.project_id)
            if project is None:
                project = projects[job.project_id] = s.get(Project, job.project_id)  # type: ignore[assignment]
            for period, points in pieces:
                if points <= 0:
                    continue
                key = (job.user_id, job.project_id, period)
                if key not in left:
                    left[key] = _allowance(s, job.user_id, project) - _allowance_used(s, job.user_id, job.project_id,
                                                                                       period)
                from_allowance, from_extra = split_charge(points, left[key])
                left[key] -= from_allowance
                note = ""  # the row names the job (job_id)
                if from_allowance > 0:
                    s.execute(_LEDGER.insert(), {"at": now, "user_id": job.user_id, "project_id": job.project_id,
                                                 "job_id": job.id, "period": period, "source": "allowance",
                                                 "points": -from_allowance, "note": note})
                if from_extra > 0:
                    s.execute(_LEDGER.insert(), {"at": now, "user_id": job.user_id, "project_id": job.project_id,
                                                 "job_id": job.id, "period": period, "source": "extra",
                                                 "points": -from_extra, "note": note})
                    s.execute(_USERS.update().where(_USERS.c.id == job.user_id).values(
                        extra_points=_USERS.c.extra_points - from_extra))
    return charged
