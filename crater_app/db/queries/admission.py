"""The SQL of admission: what one decision reads (a :class:`Snapshot`), in a few indexed queries.

Active usage is read from ``active_usage`` (counts per project, user, kind and request shape, kept by triggers on
``jobs``), so that jobs of one shape are parsed once; held jobs are read in queue order (``priority`` desc,
``created_at``, ``id``; :mod:`crater_app.db.queries.held_jobs`);
the rows of the projects an admission writes into are locked first (``SELECT ... FOR UPDATE`` in id order on
PostgreSQL; on SQLite the transaction already holds the write lock), and, when the decision reads every project's
usage against the machine's capacity (fair share), one machine-wide lock after them (:func:`lock_machine`). The
callers own the transactions (``services.admission``, ``services.admission_loop``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable

from sqlalchemy import bindparam, cast, func, or_, text
from sqlalchemy import select as sa_select
from sqlalchemy.types import Text

from crater_app.db.models import ActiveUsage, Job, Project, ProjectMember, User
from crater_app.db.queries.held_jobs import (  # noqa: F401 - the held-queue readers are part of this interface
    APPROVAL, HELD, HELD_WINDOW, MAX_HELD, HeldJob, HeldQueues, held_demand, held_fingerprint, held_projects,
    held_users, read_held, read_held_window,
)
from crater_app.db.queries.resource_lists import (  # noqa: F401 - job_usage: part of this interface
    job_usage, project_quota, quota_list, usage_of_shape,
)
from crater_app.domain import backfill
from crater_app.domain import quota as q
from crater_app.domain.admission import Demand, Plan, ProjectQuota, UserLimits, decide
from crater_app.domain.jobs import JobPhase

#: phases in which a job holds what it asked for: admitted and not finished (a ``Stopping`` job holds its
#: devices until its last process has exited)
ACTIVE_PHASES = (JobPhase.QUEUED.value, JobPhase.RUNNING.value, JobPhase.STOPPING.value)
PREEMPTED = "preempted"
#: an amount no machine reaches: the capacity of a resource when the machine does not limit admission
UNBOUNDED = 2**62
#: the PostgreSQL advisory lock (one 64-bit key) that admission decisions reading the whole machine take: the
#: bytes of "crater" and 1
MACHINE_LOCK_KEY = 0x6372617465720001

_JOBS, _PROJECTS, _USERS, _MEMBERS = Job.__table__, Project.__table__, User.__table__, ProjectMember.__table__
_USAGE = ActiveUsage.__table__
#: the submission time of a group of admitted jobs (a group is never a preemption candidate, the one place where an
#: admitted job's time counts: ``domain.admission.reclaim``)
_GROUPED_AT = datetime(1970, 1, 1, tzinfo=timezone.utc)


# ---- the snapshot --------------------------------------------------------------------------------------------

@dataclass
class Snapshot:
    """What one admission decision sees: demands (admitted usage and held jobs), quotas, shares, limits and the
    capacity; ``expires`` project id -> expiry (locked projects only); ``holdings`` the admitted jobs' holdings for
    backfill (a lazy mapping, see ``services.admission_inputs``); ``now`` the decision's instant (UTC)."""

    demands: list[Demand] = field(default_factory=list)
    quotas: dict[int, ProjectQuota] = field(default_factory=dict)
    shares: dict[tuple[int, int], q.Usage] = field(default_factory=dict)
    limits: dict[int, UserLimits] = field(default_factory=dict)
    capacity: q.Usage = field(default_factory=dict)
    expires: dict[int, datetime | None] = field(default_factory=dict)
    fair_share: bool = False
    #: admitted batch jobs grouped by project, user and request shape: (project, user, kind, usage, count, oldest)
    groups: list[tuple] = field(default_factory=list)
    #: held jobs per locked project (read with the lock)
    held_counts: dict[int, int] = field(default_factory=dict)
    #: the (project, user) pairs whose member shares were read already
    shares_read: set = field(default_factory=set)
    holdings: object = None
    now: datetime | None = None
    #: the projects whose blocked jobs get a backfill reservation (``None``: all)
    reserve_for: set[int] | None = None

    def plan(self) -> Plan:
        """``decide`` on this snapshot (the capacity is unbounded for every key when fair share is off). Each group
        of ``groups`` is one demand standing for its ``count`` jobs (``Demand.count``: counted as that many jobs in
        the hold sentences and sessions)."""
        demands = list(self.demands)
        for n, (pid, uid, kind, usage, count, first) in enumerate(self.groups, 1):
            demands.append(Demand(key=("admitted", "group", n), project_id=pid, user_id=uid, priority=0,
                                  created_at=first, kind=kind, admitted=True, count=count,
                                  usage={k: v * count for k, v in usage.items()}))
        keys = {k for d in demands for k in d.usage}
        if not self.fair_share:
            capacity = {k: UNBOUNDED for k in keys}
        else:
            capacity = dict(self.capacity)
            for key in keys - set(capacity):
                capacity[key] = 0  # a resource the machine does not have at all
        return decide(demands, self.quotas, self.shares, self.limits, capacity, now=self.now,
                      holdings=self.holdings, reserve_for=self.reserve_for)  # type: ignore[arg-type]

    def expired(self, project_id: int, now: datetime) -> bool:
        """Whether locked project ``project_id`` has an expiry at or before ``now`` (UTC); the rule of
        ``services.projects.project_expired``, on the expiry read under the row lock."""
        expiry = self.expires.get(project_id)
        return expiry is not None and expiry <= now

    def projects(self) -> set[int]:
        """The projects of every demand and admitted group."""
        return {d.project_id for d in self.demands} | {g[0] for g in self.groups}

    def users(self) -> set[int]:
        """The users of every demand and admitted group."""
        return {d.user_id for d in self.demands} | {g[1] for g in self.groups}

    def pairs(self) -> set[tuple[int, int]]:
        """The (project, user) pairs of every demand and admitted group."""
        return {(d.project_id, d.user_id) for d in self.demands} | {(g[0], g[1]) for g in self.groups}


def _lock_projects_statement():
    p, c = _PROJECTS.c, _JOBS.c
    held = (sa_select(func.count()).where(c.phase == HELD, c.project_id == p.id)
            .correlate(_PROJECTS).scalar_subquery())
    return (sa_select(p.id, p.name, p.expires_at, cast(p.guarantee, Text), cast(p.deserved, Text),
                      cast(p.capability, Text), held)
            .where(p.id.in_(bindparam("ids", expanding=True))).order_by(p.id).with_for_update(of=_PROJECTS))


# Statements that every submission's write transaction runs are built once: building a statement and deriving its
# cache key cost ~0.3 ms of Python each time (5x the query itself), under the write lock (bench/README.md).
_LOCK_PROJECTS = _lock_projects_statement()
_U = _USAGE.c
_ACTIVE_USAGE = sa_select(_U.project_id, _U.user_id, _U.kind, _U.preemptible, _U.accelerator_model, _U.resources,
                          _U.jobs).where(_U.jobs > 0)
_ACTIVE_USAGE_OF = _ACTIVE_USAGE.where(_U.project_id.in_(bindparam("ids", expanding=True)))


def lock_projects(s, project_ids: Iterable[int], snap: Snapshot) -> None:
    """Lock (PostgreSQL: ``FOR UPDATE``, in id order; SQLite: the transaction already holds the write lock) and
    read the rows of ``project_ids``: quotas, expiry and how many jobs each holds ``Held`` go into ``snap``."""
    ids = sorted(set(project_ids))
    if not ids:
        return
    rows = s.execute(_LOCK_PROJECTS, {"ids": ids}).all()
    for pid, name, expires_at, guarantee, deserved, capability, held_jobs in rows:
        snap.quotas[pid] = project_quota(pid, name, guarantee, deserved, capability)
        snap.expires[pid] = expires_at
        snap.held_counts[pid] = held_jobs


def lock_machine(s) -> None:
    """Serialise, until the transaction ends, every admission decision that reads the whole machine's usage.

    Under fair share a decision checks every project's admitted usage against the machine's capacity, so two
    transactions that lock different projects could both take the machine's last device. On PostgreSQL this takes
    the transaction-level advisory lock :data:`MACHINE_LOCK_KEY` (``pg_advisory_xact_lock``: released at commit or
    rollback); a second decision waits here and then reads the first one's committed jobs (READ COMMITTED: each
    statement sees what was committed before it began). On SQLite the transaction already holds the database's
    write lock (``BEGIN IMMEDIATE``), which serialises the same way: nothing to do.

    Take it after :func:`lock_projects` (every caller locks in that order, so no two wait on each other in a cycle)
    and before reading any usage. It costs one statement per decision, and fair-share decisions into different
    projects run one at a time (decisions without fair share never take it).
    """
    if s.get_bind().dialect.name == "postgresql":
        s.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MACHINE_LOCK_KEY})


def read_quotas(s, project_ids: Iterable[int], snap: Snapshot) -> None:
    """Read (no lock) the quotas of the projects in ``project_ids`` not already in ``snap``."""
    ids = sorted(set(project_ids) - set(snap.quotas))
    p = _PROJECTS.c
    for start in range(0, len(ids), 900):
        for pid, name, guarantee, deserved, capability in s.execute(
            sa_select(p.id, p.name, cast(p.guarantee, Text), cast(p.deserved, Text), cast(p.capability, Text))
            .where(p.id.in_(ids[start:start + 900]))
        ).all():
            snap.quotas[pid] = project_quota(pid, name, guarantee, deserved, capability)


def limit_rows(s, user_ids: list[int]) -> list[tuple]:
    """``(user id, max_sessions, max_accelerators_per_job, max_runtime_s)`` of ``user_ids`` as stored (``None``:
    the platform default applies)."""
    u = _USERS.c
    out: list[tuple] = []
    for start in range(0, len(user_ids), 900):
        out.extend(s.execute(
            sa_select(u.id, u.max_sessions, u.max_accelerators_per_job, u.max_runtime_s)
            .where(u.id.in_(user_ids[start:start + 900]))
        ).all())
    return out


def share_rows(s, pairs: set[tuple[int, int]]) -> dict[tuple[int, int], q.Usage]:
    """The member shares of ``pairs`` (``(project id, user id)``), as usages (``{}``: no per-member limit)."""
    m = _MEMBERS.c
    found: dict[tuple[int, int], q.Usage] = {}
    pids, uids = sorted({p for p, _ in pairs}), sorted({u for _, u in pairs})
    for pid, uid, share in s.execute(
        sa_select(m.project_id, m.user_id, cast(m.share, Text)).where(m.project_id.in_(pids), m.user_id.in_(uids))
    ).all():
        if (pid, uid) in pairs:
            found[(pid, uid)] = quota_list(share, "share") if share else {}
    return found


def read_admitted(s, snap: Snapshot, project_ids: list[int] | None, individual_preemptible: bool,
                  user_ids: Iterable[int] = ()) -> None:
    """Add the admitted (``Queued``/``Running``/``Stopping``) usage to ``snap.demands``: of ``project_ids``
    (``None``: every project), plus the interactive sessions of ``user_ids`` anywhere (they count towards
    ``max_sessions``).

    The counts of ``active_usage`` (kept by triggers on ``jobs``, migration 0006: a few rows per project, however
    many jobs it runs) into ``snap.groups`` (one demand per group, see :meth:`Snapshot.plan`); with
    ``individual_preemptible``, preemptible jobs are read one by one (they are the candidates a preemption names,
    keyed by their job id, with priority and submission time); only ``Running`` ones are candidates (``Demand``
    ``preemptible``): a job admitted but not started yet holds no device on the backend, and preempting it would
    spend one of its attempts (``settings.max_attempts``) without a run - once it runs it is a candidate (Volcano's
    ``reclaim`` action likewise evicts only running tasks). Jobs being stopped by a preemption (``reason_code``
    :data:`PREEMPTED`) are left out: their room went to the job they were stopped for.
    """
    if project_ids is not None:
        found = s.execute(_ACTIVE_USAGE_OF, {"ids": sorted(set(project_ids))}).all()
    else:
        found = s.execute(_ACTIVE_USAGE).all()
    rows = [(pid, uid, kind, preemptible, model or None, resources, count, _GROUPED_AT)
            for pid, uid, kind, preemptible, model, resources, count in found]
    n = 0
    sessions_seen: set[int] = set()
    for pid, uid, kind, preemptible, model, resources, count, first in rows:
        if kind == "interactive":
            sessions_seen.add(uid)
        if preemptible and individual_preemptible and kind != "interactive":
            continue  # read one by one below
        snap.groups.append((pid, uid, kind, dict(usage_of_shape(resources, model)), count, first))
    extra_users = sorted(set(user_ids) - sessions_seen)
    c = _JOBS.c
    shape = cast(c.resources, Text)
    where = [c.phase.in_(ACTIVE_PHASES), c.reason_code != PREEMPTED]
    if project_ids is not None:
        where.append(c.project_id.in_(sorted(set(project_ids))))
    if extra_users and project_ids is not None:
        # Sessions of these users in projects outside ``project_ids`` (max_sessions counts all of a user's sessions).
        for pid, uid, model, resources, created in s.execute(
            sa_select(c.project_id, c.user_id, c.accelerator_model, shape, c.created_at).where(
                c.phase.in_(ACTIVE_PHASES), c.user_id.in_(extra_users), c.kind == "interactive",
                c.project_id.not_in(sorted(set(project_ids))))
        ).all():
            n += 1
            snap.demands.append(Demand(key=("admitted", n), project_id=pid, user_id=uid, priority=0,
                                       created_at=created, usage=dict(usage_of_shape(resources, model)),
                                       kind="interactive", admitted=True))
    if individual_preemptible:
        stmt = sa_select(c.id, c.project_id, c.user_id, c.priority, c.created_at, c.kind, c.accelerator_model,
                         shape, c.reclaim_lock, c.phase).where(*where, c.preemptible.is_(True), c.kind != "interactive")
        for jid, pid, uid, prio, created, kind, model, resources, lock, phase in s.execute(stmt).all():
            snap.demands.append(Demand(  # only a running job is a candidate: not one still Queued (it has not
                # run: stopping it would spend an attempt for nothing) nor one already Stopping (cancelled, past its
                # deadline)
                key=jid, project_id=pid, user_id=uid, priority=prio, created_at=created,
                usage=dict(usage_of_shape(resources, model)), kind=kind,
                preemptible=phase == JobPhase.RUNNING.value, reclaim_lock=lock, admitted=True,
            ))


def holding_rows(s, project_id: int | None) -> list[tuple]:
    """What the admitted jobs (of ``project_id``; ``None``: all) hold and for how long, for backfill:
    ``(job id, user id, phase, resources JSON text, accelerator_model, started_at or admitted_at, max_runtime_s)``,
    jobs being stopped by a preemption left out (as in :func:`read_admitted`)."""
    c = _JOBS.c
    where = [c.phase.in_(ACTIVE_PHASES), c.reason_code != PREEMPTED]
    if project_id is not None:
        where.append(c.project_id == project_id)
    return s.execute(sa_select(c.id, c.user_id, c.phase, cast(c.resources, Text), c.accelerator_model,
                               func.coalesce(c.started_at, c.admitted_at), c.max_runtime_s).where(*where)).all()


def holdings_of(rows: list[tuple], bound_of, now: datetime) -> list[backfill.Holding]:
    """:func:`holding_rows` as backfill holdings: each job's usage until its expected end - its start plus
    ``bound_of(user id, max_runtime_s)`` seconds; for a job admitted but not started yet, from its admission (a
    stable estimate, if an early one); a ``Stopping`` job ends any moment."""
    out = []
    for jid, uid, phase, resources, model, since, max_runtime_s in rows:
        if phase == JobPhase.STOPPING.value:
            ends = now
        else:
            if isinstance(since, str):  # SQLite returns COALESCE of two datetimes as text
                since = datetime.fromisoformat(since)
            if since is not None and since.tzinfo is None:
                since = since.replace(tzinfo=timezone.utc)
            ends = backfill.expected_end(since, bound_of(uid, max_runtime_s), now)
        out.append(backfill.Holding(dict(usage_of_shape(resources, model)), ends, jid))
    return out


def fair_share_flag(s) -> bool:
    """Whether some project has a non-empty ``guarantee`` or ``deserved``."""
    p = _PROJECTS.c
    stmt = sa_select(p.id).where(or_(cast(p.guarantee, Text) != "{}", cast(p.deserved, Text) != "{}")).limit(1)
    return s.execute(stmt).first() is not None


def project_usage(s, project_id: int) -> tuple[q.Usage, int, int]:
    """``(admitted usage, admitted jobs, held jobs)`` of one project now (jobs being stopped still count here:
    they hold their devices until they stop)."""
    c = _JOBS.c
    used: q.Usage = {}
    admitted = 0
    for model, resources, count in s.execute(
        sa_select(c.accelerator_model, cast(c.resources, Text), func.count())
        .where(c.phase.in_(ACTIVE_PHASES), c.project_id == project_id)
        .group_by(c.accelerator_model, cast(c.resources, Text))
    ).all():
        admitted += count
        for key, value in usage_of_shape(resources, model):
            used[key] = used.get(key, 0) + value * count
    held = s.execute(sa_select(func.count()).where(c.phase == HELD, c.project_id == project_id)).scalar_one()
    return used, admitted, held
