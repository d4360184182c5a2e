"""Admission: which jobs may start now, under project quotas, member shares, user limits and fair share.

Two entry points, both one database transaction that cannot over-admit under concurrency:

- :func:`admit_submissions` - inside the (group-committed) submission transaction of ``services.jobs``: each new
  job is refused (never admissible: :class:`AdmissionRefused` with the numbers; the project has expired:
  :class:`~crater_app.domain.errors.Forbidden` with the date), written ``Queued`` (admitted, handed to the
  backend) or written ``Held`` with a sentence, a ``reason_code`` and its ``reason_args``. Jobs above
  ``settings.approval_gpu_threshold`` accelerators (not submitted by a platform admin) are held with
  ``reason_code`` ``approval`` and an ``approvals`` row in the same transaction.
- :func:`admission_round` - the leader loop's pass: re-decide every held job, admit those that fit now, refresh
  the hold sentences that changed and carry out the preemptions fair share asks for.

Concurrency: the transaction first locks the rows of the projects it admits into (``SELECT ... FOR UPDATE``,
ordered by id so that two transactions never wait on each other in a cycle) and only then reads the admitted
usage; a second transaction admitting into the same project waits for the first to commit and then sees its
jobs. On SQLite, every write transaction is ``BEGIN IMMEDIATE`` (one writer at a time; see
``services.context``), so the same read-then-write is serialised by the database itself. The rule of Kubernetes'
ResourceQuota admission (a quota's usage is checked and charged in one compare-and-swap) and of Kueue's
ClusterQueue admission (one admission at a time per cohort), applied to rows.

The rules themselves live in :mod:`crater_app.domain.admission` (``decide``, ``never_admissible``); this module
only reads what they need with a few indexed queries (``ix_jobs_phase_project_user``: active usage grouped per
project, user and request shape) and writes what they decided.

Machine capacity takes part in admission once fair share is configured (some project has a ``guarantee`` or a
``deserved`` amount): then a job waits ``Held`` when the machine is full and preemptions give projects below their
deserved share their due. Without any guarantee/deserved, the machine is first come, first served in the
backend's own queue (a job is ``Queued`` and says which devices it waits for), as in a single-team setup.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from typing import Iterable

from sqlalchemy import and_, bindparam, case, cast, func, or_
from sqlalchemy import select as sa_select
from sqlalchemy.types import Text

from crater_app import i18n
from crater_app.cluster.base import Workload
from crater_app.db.models import Job, JobEvent, OperationLog, Project, ProjectMember, User
from crater_app.db.types import utcnow
from crater_app.domain import quota as q
from crater_app.domain.admission import Demand, Hold, Plan, ProjectQuota, UserLimits, decide, never_admissible
from crater_app.domain.errors import Forbidden, Unschedulable
from crater_app.domain.jobs import JobPhase
from crater_app.domain.policy import Actor, needs_approval
from crater_app.domain.resources import parse_resources
from crater_app.services import oplog
from crater_app.services.context import ServiceContext

log = logging.getLogger(__name__)

ACTIVE_PHASES = (JobPhase.QUEUED.value, JobPhase.RUNNING.value)
HELD = JobPhase.HELD.value
APPROVAL = "approval"
PREEMPTED = "preempted"
#: an amount no machine reaches: the capacity of a resource when the machine does not limit admission
UNBOUNDED = 2**62
#: the most held jobs one admission decision looks at (oldest/highest priority first)
MAX_HELD = 5000
#: a submission decides against the first this many held jobs of each project's queue (their order and count are
#: read in full, so positions stay exact); a job behind a longer queue waits behind it
HELD_WINDOW = 16
#: the loop re-decides at least this often even when nothing it watches changed (quota edits by other replicas)
FULL_PASS_EVERY_S = 5.0
#: new held jobs alone (decided at submission) bring a full pass at most this often
NEW_HELD_PASS_EVERY_S = 2.0
#: how long a process trusts its view of "is fair share configured" (any guarantee/deserved set)
FAIRSHARE_FLAG_TTL_S = 2.0
#: how long a submission trusts user limits and member shares this process read (changes made here drop them at
#: once; the project's capability is always read under the row lock)
LIMITS_TTL_S = 2.0

_JOBS, _PROJECTS, _USERS = Job.__table__, Project.__table__, User.__table__
_MEMBERS, _EVENTS, _OPLOG = ProjectMember.__table__, JobEvent.__table__, OperationLog.__table__


class AdmissionRefused(Unschedulable):
    """The job could never be admitted (over the project's capability, the member's share, the user's max
    accelerators per job or max runtime); the message gives the limit and the request. HTTP 422."""

    kind = "never_admissible"


#: the ``reason_code`` values that have a translated sentence (``hold.<code>`` in ``i18n/admission``)
TRANSLATED_CODES = ("quota", "share", "sessions", "capacity", "fairshare", "queue", "reclaim", APPROVAL, PREEMPTED)


def _format(lang: object, key: str, args: dict, fallback: str) -> str:
    template = i18n.messages(lang).get(key)
    try:
        return template.format_map(args) if template else fallback
    except (KeyError, ValueError, IndexError, AttributeError):
        return fallback


def reason_text(lang: object, reason_code: str, reason_args: dict, reason: str) -> str:
    """A job's ``reason`` in ``lang``: for a code of :data:`TRANSLATED_CODES` the ``hold.<code>`` template filled
    from ``reason_args`` (in English the stored sentence itself, which has exact plurals); anything else - or
    arguments that do not fit the template - gives ``reason`` unchanged."""
    if reason_code not in TRANSLATED_CODES or i18n.normalize(lang) == i18n.DEFAULT_LANGUAGE:
        return reason
    args = dict(reason_args or {})
    if "blocker" in args:
        args["blocker"] = i18n.translate(lang, f"holdcode.{args['blocker']}")
    return _format(lang, f"hold.{reason_code}", args, reason)


# ---- reading what the rules need -------------------------------------------------------------------------------


def _usage_of_shape(resources_json: str | dict, model: str | None) -> tuple[tuple[str, int], ...]:
    """Usage of a stored ``resources`` JSON text (the cache key: rows read with a text cast are parsed once per
    distinct text). A dict (drivers that decode JSON themselves) goes through sorted-key JSON text."""
    if not isinstance(resources_json, str):
        resources_json = json.dumps(resources_json or {}, sort_keys=True)
    return _usage_of_text(resources_json, model)


@lru_cache(maxsize=4096)
def _usage_of_text(resources_json: str, model: str | None) -> tuple[tuple[str, int], ...]:
    resources = parse_resources(json.loads(resources_json) if resources_json else {})
    return tuple(sorted(q.usage_of(resources, model).items()))


def job_usage(resources: dict, model: str | None) -> q.Usage:
    """What a job with this ``resources`` list (as stored) and ``accelerator_model`` holds, as a usage (cpu
    millicores, memory bytes, devices under the resource name and under ``name:model``). Cached per shape."""
    return dict(_usage_of_shape(resources, model))


@lru_cache(maxsize=4096)
def _parsed_list(text: str, section: str) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(q.parse_quota_list(json.loads(text) if text else {}, section).items()))


def _quota_list(raw: object, section: str) -> q.Usage:
    """A stored quota list as a usage: ``raw`` is the JSON text (a column read through a text cast: the cache key,
    parsed once per distinct text) or the decoded dict."""
    if not isinstance(raw, str):
        raw = json.dumps(raw or {}, sort_keys=True)
    return dict(_parsed_list(raw, section))


def project_quota(project_id: int, name: str, guarantee: object, deserved: object, capability: object) -> ProjectQuota:
    """A project's stored quota (resource lists as JSON) as the domain's :class:`ProjectQuota`."""
    return ProjectQuota(project_id=project_id, name=name, guarantee=_quota_list(guarantee, "guarantee"),
                        deserved=_quota_list(deserved, "deserved"), capability=_quota_list(capability, "capability"))


@dataclass
class Snapshot:
    """What one admission decision sees: demands (admitted usage and held jobs), quotas, shares, limits and the
    capacity; ``names`` project id -> name; ``expires`` project id -> expiry (locked projects only)."""

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
        return decide(demands, self.quotas, self.shares, self.limits, capacity)

    def expired(self, project_id: int, now: datetime) -> bool:
        """Whether locked project ``project_id`` has an expiry at or before ``now`` (UTC); the rule of
        ``services.projects.project_expired``, on the expiry read under the row lock."""
        expiry = self.expires.get(project_id)
        return expiry is not None and expiry <= now


def _projects_of(snap: Snapshot) -> set[int]:
    return {d.project_id for d in snap.demands} | {g[0] for g in snap.groups}


def _users_of(snap: Snapshot) -> set[int]:
    return {d.user_id for d in snap.demands} | {g[1] for g in snap.groups}


def _lock_projects(s, project_ids: Iterable[int], snap: Snapshot) -> None:
    """Lock (PostgreSQL: ``FOR UPDATE``, in id order; SQLite: the transaction already holds the write lock) and
    read the rows of ``project_ids``: quotas, expiry and how many jobs each holds ``Held`` go into ``snap``."""
    ids = sorted(set(project_ids))
    if not ids:
        return
    p, c = _PROJECTS.c, _JOBS.c
    held = (sa_select(func.count()).where(c.phase == HELD, c.project_id == p.id)
            .correlate(_PROJECTS).scalar_subquery())
    rows = s.execute(
        sa_select(p.id, p.name, p.expires_at, cast(p.guarantee, Text), cast(p.deserved, Text),
                  cast(p.capability, Text), held)
        .where(p.id.in_(ids)).order_by(p.id).with_for_update(of=_PROJECTS)
    ).all()
    for pid, name, expires_at, guarantee, deserved, capability, held_jobs in rows:
        snap.quotas[pid] = project_quota(pid, name, guarantee, deserved, capability)
        snap.expires[pid] = expires_at
        snap.held_counts[pid] = held_jobs


def _read_quotas(s, project_ids: Iterable[int], snap: Snapshot) -> None:
    """Read (no lock) the quotas of the projects in ``project_ids`` not already in ``snap``."""
    ids = sorted(set(project_ids) - set(snap.quotas))
    p = _PROJECTS.c
    for start in range(0, len(ids), 900):
        for pid, name, guarantee, deserved, capability in s.execute(
            sa_select(p.id, p.name, cast(p.guarantee, Text), cast(p.deserved, Text), cast(p.capability, Text))
            .where(p.id.in_(ids[start:start + 900]))
        ).all():
            snap.quotas[pid] = project_quota(pid, name, guarantee, deserved, capability)


def _fresh(ctx: ServiceContext | None, name: str) -> dict | None:
    """The context's cache ``name`` (a dict of key -> (value, monotonic time read)), or ``None`` without a context."""
    if ctx is None:
        return None
    return ctx.cache.setdefault(name, {})


def _read_limits(s, ctx: ServiceContext, user_ids: Iterable[int], snap: Snapshot, cached: bool = False) -> None:
    """Per-user limits of ``user_ids`` (a user's own, else the platform default from settings). ``cached``: values
    read by this process less than :data:`LIMITS_TTL_S` ago are used as they are (submissions)."""
    wanted = set(user_ids) - set(snap.limits)
    cache = _fresh(ctx, "admission-limits") if cached else None
    now = time.monotonic()
    if cache is not None:
        for uid in list(wanted):
            hit = cache.get(uid)
            if hit is not None and now - hit[1] < LIMITS_TTL_S:
                snap.limits[uid] = hit[0]
                wanted.discard(uid)
    ids = sorted(wanted)
    st = ctx.settings
    u = _USERS.c
    for start in range(0, len(ids), 900):
        for uid, sessions, per_job, runtime in s.execute(
            sa_select(u.id, u.max_sessions, u.max_accelerators_per_job, u.max_runtime_s)
            .where(u.id.in_(ids[start:start + 900]))
        ).all():
            snap.limits[uid] = UserLimits(
                max_sessions=sessions if sessions is not None else st.default_max_sessions,
                max_accelerators_per_job=per_job if per_job is not None else st.default_max_accelerators_per_job,
                max_runtime_s=runtime if runtime is not None else st.default_max_runtime_s,
            )
            if cache is not None:
                cache[uid] = (snap.limits[uid], now)


def _read_shares(s, pairs: Iterable[tuple[int, int]], snap: Snapshot, ctx: ServiceContext | None = None) -> None:
    """Member shares of the ``(project id, user id)`` ``pairs`` (only non-empty shares: ``{}`` is no per-member
    limit). With ``ctx``: shares read by this process less than :data:`LIMITS_TTL_S` ago are used as they are."""
    wanted = set(pairs) - snap.shares_read
    if not wanted:
        return
    snap.shares_read |= wanted
    cache = _fresh(ctx, "admission-shares")
    now = time.monotonic()
    if cache is not None:
        for pair in list(wanted):
            hit = cache.get(pair)
            if hit is not None and now - hit[1] < LIMITS_TTL_S:
                if hit[0]:
                    snap.shares[pair] = hit[0]
                wanted.discard(pair)
        if not wanted:
            return
    m = _MEMBERS.c
    found: dict[tuple[int, int], q.Usage] = {}
    pids, uids = sorted({p for p, _ in wanted}), sorted({u for _, u in wanted})
    for pid, uid, share in s.execute(
        sa_select(m.project_id, m.user_id, cast(m.share, Text)).where(m.project_id.in_(pids), m.user_id.in_(uids))
    ).all():
        if (pid, uid) in wanted:
            found[(pid, uid)] = _quota_list(share, "share") if share else {}
    for pair in wanted:
        share = found.get(pair, {})
        if share:
            snap.shares[pair] = share
        if cache is not None:
            cache[pair] = (share, now)


def _pairs(snap: Snapshot) -> set[tuple[int, int]]:
    """The (project, user) pairs of every demand and admitted group of ``snap``."""
    return {(d.project_id, d.user_id) for d in snap.demands} | {(g[0], g[1]) for g in snap.groups}


def _read_admitted(s, snap: Snapshot, project_ids: list[int] | None, individual_preemptible: bool,
                   user_ids: Iterable[int] = ()) -> None:
    """Add the admitted (``Queued``/``Running``) usage to ``snap.demands``: of ``project_ids`` (``None``: every
    project), plus the interactive sessions of ``user_ids`` anywhere (they count towards ``max_sessions``).

    One grouped query over ``ix_jobs_phase_project_user`` (jobs of the same project, user, kind and request shape
    are parsed once) into ``snap.groups`` (one demand per group, see :meth:`Snapshot.plan`); with
    ``individual_preemptible``, preemptible jobs are read one by one (they are the candidates a preemption names,
    keyed by their job id, with priority and submission time). Jobs already being stopped by a preemption
    (``reason_code`` :data:`PREEMPTED`) are left out: their room went to the job they were stopped for.
    """
    c = _JOBS.c
    shape = cast(c.resources, Text)
    # A job being stopped by a preemption no longer counts: its room was given to the job it was stopped for.
    where = [c.phase.in_(ACTIVE_PHASES), c.reason_code != PREEMPTED]
    if project_ids is not None:
        where.append(c.project_id.in_(sorted(set(project_ids))))
    rows = s.execute(
        sa_select(c.project_id, c.user_id, c.kind, c.preemptible, c.accelerator_model, shape, func.count(),
                  func.min(c.created_at))
        # Grouped with the project last: SQLite (with statistics) would otherwise walk a project index for the
        # grouping order over every job instead of seeking the few active ones in the phase indexes.
        .where(*where).group_by(c.kind, c.preemptible, c.accelerator_model, shape, c.user_id, c.project_id)
    ).all()
    n = 0
    sessions_seen: set[int] = set()
    for pid, uid, kind, preemptible, model, resources, count, first in rows:
        if kind == "interactive":
            sessions_seen.add(uid)
        if preemptible and individual_preemptible and kind != "interactive":
            continue  # read one by one below
        snap.groups.append((pid, uid, kind, dict(_usage_of_shape(resources, model)), count, first))
    extra_users = sorted(set(user_ids) - sessions_seen)
    if extra_users and project_ids is not None:
        # Sessions of these users in projects outside ``project_ids`` (max_sessions counts all of a user's sessions).
        for pid, uid, model, resources in s.execute(
            sa_select(c.project_id, c.user_id, c.accelerator_model, shape).where(
                c.phase.in_(ACTIVE_PHASES), c.user_id.in_(extra_users), c.kind == "interactive",
                c.project_id.not_in(sorted(set(project_ids))))
        ).all():
            n += 1
            snap.demands.append(Demand(key=("admitted", n), project_id=pid, user_id=uid, priority=0,
                                       created_at=utcnow(), usage=dict(_usage_of_shape(resources, model)),
                                       kind="interactive", admitted=True))
    if individual_preemptible:
        stmt = sa_select(c.id, c.project_id, c.user_id, c.priority, c.created_at, c.kind, c.accelerator_model,
                         shape, c.reclaim_lock, c.reason_code).where(
            *where, c.preemptible.is_(True), c.kind != "interactive")
        for jid, pid, uid, prio, created, kind, model, resources, lock, code in s.execute(stmt).all():
            snap.demands.append(Demand(
                key=jid, project_id=pid, user_id=uid, priority=prio, created_at=created,
                usage=dict(_usage_of_shape(resources, model)), kind=kind, preemptible=True, reclaim_lock=lock,
                admitted=True,
            ))


@dataclass(frozen=True)
class HeldJob:
    """A ``Held`` job as admission reads it; ``resources`` and ``reason_args`` are the stored JSON texts (parsed
    only when needed: the usage through a cache per distinct text, the arguments only to rewrite a sentence)."""

    id: int
    uid: str
    name: str
    project_id: int
    user_id: int
    priority: int
    created_at: datetime
    kind: str
    preemptible: bool
    resources: str
    accelerator_model: str | None
    reason: str
    reason_code: str
    reason_args: str


def _held_columns():
    c = _JOBS.c
    return (c.id, c.uid, c.name, c.project_id, c.user_id, c.priority, c.created_at, c.kind, c.preemptible,
            cast(c.resources, Text), c.accelerator_model, c.reason, c.reason_code, cast(c.reason_args, Text))


def _queue_order(priority: int, created_at: datetime, key: object) -> tuple:
    """The order of a project's queue (``domain.admission``): higher priority first, then older, then by key."""
    return (-priority, created_at, (0, key, "") if isinstance(key, int) else (1, 0, str(key)))


def _read_held(s, project_ids: list[int] | None) -> list[HeldJob]:
    """Held jobs (of ``project_ids``; ``None``: all), highest priority first, then oldest (at most MAX_HELD)."""
    c = _JOBS.c
    stmt = sa_select(*_held_columns()).where(c.phase == HELD)
    if project_ids is not None:
        stmt = stmt.where(c.project_id.in_(sorted(set(project_ids))))
    stmt = stmt.order_by(c.priority.desc(), c.created_at, c.id).limit(MAX_HELD)
    return [HeldJob(*row) for row in s.execute(stmt).all()]


@dataclass
class HeldQueues:
    """The held jobs a submission decides against: ``window`` the first :data:`HELD_WINDOW` of each project's
    queue (full rows) and ``counts`` project id -> priority -> how many jobs are held there (for true positions)."""

    window: list[HeldJob]
    counts: dict[int, dict[int, int]]

    def truncated(self, project_id: int) -> bool:
        """Whether the project has more held jobs than the window holds."""
        return sum(self.counts.get(project_id, {}).values()) > HELD_WINDOW

    def ahead(self, project_id: int, priority: int) -> int:
        """Held jobs of the project a new job of ``priority`` queues behind (those of the same or a higher
        priority: they were submitted earlier)."""
        return sum(n for p, n in self.counts.get(project_id, {}).items() if p >= priority)


def _read_held_window(s, project_ids: list[int] | None, mine: Iterable[int] = ()) -> HeldQueues:
    """:class:`HeldQueues` of ``project_ids`` (``None``: every project) in two indexed queries: the held counts per
    project and priority, and the head of each queue (``ROW_NUMBER() OVER (PARTITION BY project_id ...)``, so
    that only the windows' rows reach Python). With ``mine`` (fair share: every project is read), the projects
    not in ``mine`` contribute only the first job of their queue - the one competing for capacity now."""
    c = _JOBS.c
    where = [c.phase == HELD]
    if project_ids is not None:
        where.append(c.project_id.in_(sorted(set(project_ids))))
    counts: dict[int, dict[int, int]] = {}
    for pid, priority, n in s.execute(
        sa_select(c.project_id, c.priority, func.count()).where(*where).group_by(c.project_id, c.priority)
    ).all():
        counts.setdefault(pid, {})[priority] = n
    if not counts:
        return HeldQueues([], counts)
    rank = func.row_number().over(partition_by=c.project_id, order_by=(c.priority.desc(), c.created_at, c.id))
    ranked = sa_select(c.id.label("id"), rank.label("rank")).where(*where).subquery()
    mine = sorted(set(mine))
    limit = ranked.c.rank <= HELD_WINDOW
    if project_ids is None and mine:
        limit = or_(ranked.c.rank <= 1, and_(ranked.c.rank <= HELD_WINDOW, c.project_id.in_(mine)))
    window = [HeldJob(*row) for row in s.execute(
        sa_select(*_held_columns()).join(ranked, ranked.c.id == c.id).where(limit)
        .order_by(c.project_id, c.priority.desc(), c.created_at, c.id)
    ).all()]
    return HeldQueues(window, counts)


def _held_demand(job: HeldJob) -> Demand:
    return Demand(key=job.id, project_id=job.project_id, user_id=job.user_id, priority=job.priority,
                  created_at=job.created_at, usage=dict(_usage_of_shape(job.resources, job.accelerator_model)),
                  kind=job.kind, preemptible=job.preemptible, approval_pending=job.reason_code == APPROVAL)


def machine_capacity(ctx: ServiceContext) -> q.Usage:
    """The machine's total: the sum over ``backend.inventory()`` nodes of cpu (millicores), memory (bytes) and
    devices per resource name and per ``name:model``."""
    total: q.Usage = {}
    for node in ctx.backend.inventory():
        total["cpu"] = total.get("cpu", 0) + node.cpu_m
        total["memory"] = total.get("memory", 0) + node.memory_bytes
        for d in node.devices:
            for key in (d.resource, q.model_key(d.resource, d.model)):
                total[key] = total.get(key, 0) + 1
    return total


def fair_share_configured(ctx: ServiceContext, s=None) -> bool:
    """Whether some project has a non-empty ``guarantee`` or ``deserved`` (then the machine's capacity and fair
    share take part in admission). Cached per context for :data:`FAIRSHARE_FLAG_TTL_S` seconds;
    :func:`invalidate` drops the cache (quota changes)."""
    cached = ctx.cache.get("admission-fairshare")
    now = time.monotonic()
    if cached is not None and now - cached[1] < FAIRSHARE_FLAG_TTL_S:
        return cached[0]
    p = _PROJECTS.c
    stmt = sa_select(p.id).where(or_(cast(p.guarantee, Text) != "{}", cast(p.deserved, Text) != "{}")).limit(1)
    if s is None:
        with ctx.session(read_only=True) as rs:
            flag = rs.execute(stmt).first() is not None
    else:
        flag = s.execute(stmt).first() is not None
    ctx.cache["admission-fairshare"] = (flag, now)
    return flag


def invalidate(ctx: ServiceContext) -> None:
    """Forget the cached fair-share flag, user limits and member shares, and ask the loop for a full admission
    pass (after a quota, share or limit change)."""
    for name in ("admission-fairshare", "admission-limits", "admission-shares"):
        ctx.cache.pop(name, None)
    ctx.cache["admission-dirty"] = True
    ctx.kick.set()


def project_usage(s, project_id: int) -> tuple[q.Usage, int, int]:
    """``(admitted usage, admitted jobs, held jobs)`` of one project now (jobs being stopped by a preemption
    still count here: they hold their devices until they stop)."""
    c = _JOBS.c
    used: q.Usage = {}
    admitted = 0
    for model, resources, count in s.execute(
        sa_select(c.accelerator_model, cast(c.resources, Text), func.count())
        .where(c.phase.in_(ACTIVE_PHASES), c.project_id == project_id)
        .group_by(c.accelerator_model, cast(c.resources, Text))
    ).all():
        admitted += count
        for key, amount in _usage_of_shape(resources, model):
            used[key] = used.get(key, 0) + amount * count
    held = s.execute(sa_select(func.count()).where(c.phase == HELD, c.project_id == project_id)).scalar_one()
    return used, admitted, held


# ---- submission ----------------------------------------------------------------------------------------------


@dataclass
class NewJob:
    """One submission as admission sees it: the prepared ``values`` of the jobs row (updated in place with the
    outcome: ``phase``, ``reason``, ``reason_code``, ``reason_args``, ``admitted_at``, ``max_runtime_s``), the
    submitter and the ``workload`` for the backend."""

    values: dict
    actor: Actor
    workload: Workload
    events: list[tuple[str, str]]
    target: str = ""
    approval: bool = False
    error: Exception | None = None

    @property
    def admitted(self) -> bool:
        """Whether the job goes to the backend now."""
        return self.error is None and self.values["phase"] == JobPhase.QUEUED.value


def admit_submissions(s, ctx: ServiceContext, batch: list[NewJob]) -> None:
    """Decide every submission of ``batch`` in the caller's write transaction ``s`` (see the module docstring).

    Sets ``item.error`` (nothing is written for it) to :class:`Forbidden` (the project has expired: the date in
    the message, field ``project``) or :class:`AdmissionRefused` (never admissible: the limit and the request), or
    fills ``item.values`` with ``Queued`` + ``admitted_at`` or ``Held`` + the reason. Jobs that need an approval are
    held with ``reason_code`` ``approval`` (the caller inserts the approvals rows once the jobs have ids).
    """
    now = utcnow()
    for item in batch:  # a batch that failed is decided again item by item (GroupCommit)
        item.error, item.approval = None, False
    projects = {item.values["project_id"] for item in batch}
    users = {item.values["user_id"] for item in batch}
    snap = Snapshot()
    _lock_projects(s, projects, snap)
    snap.fair_share = fair_share_configured(ctx, s)
    _read_limits(s, ctx, users, snap, cached=True)
    _read_shares(s, {(item.values["project_id"], item.values["user_id"]) for item in batch}, snap, ctx)
    candidates: list[tuple[NewJob, Demand]] = []
    for i, item in enumerate(batch):
        v = item.values
        pid, uid = v["project_id"], v["user_id"]
        if snap.expired(pid, now):
            item.error = Forbidden(
                f"project '{snap.quotas[pid].name}' expired on {snap.expires[pid].strftime('%Y-%m-%d %H:%M UTC')}; "
                "no new jobs "
                "can be submitted to it (ask a platform admin to extend it)", "project")
            continue
        limits = snap.limits.get(uid, UserLimits())
        if v["max_runtime_s"] is None and limits.max_runtime_s is not None:
            v["max_runtime_s"] = limits.max_runtime_s  # the user's ceiling is also the default
            item.workload = replace(item.workload, max_runtime_s=limits.max_runtime_s)
        usage = job_usage(v["resources"], v["accelerator_model"])
        item.approval = needs_approval(item.actor, q.devices(usage), ctx.settings.approval_gpu_threshold)
        demand = Demand(key=("new", i), project_id=pid, user_id=uid, priority=v["priority"], created_at=v["created_at"],
                        usage=usage, kind=v["kind"], preemptible=v["preemptible"], approval_pending=item.approval)
        refusal = never_admissible(demand, snap.quotas[pid], snap.shares.get((pid, uid), {}), limits,
                                   v["max_runtime_s"])
        if refusal is not None:
            item.error = AdmissionRefused(refusal.sentence, refusal.field)
            continue
        candidates.append((item, demand))
    if not candidates:
        return
    # The rules see: the admitted usage (of these projects, or of every project under fair share), the head of the
    # held queues (HELD_WINDOW per project; positions are counted over the whole queue), and the new jobs.
    limited: set[int] = set()
    session_users: set[int] = set()
    if snap.fair_share:
        _read_admitted(s, snap, None, individual_preemptible=True)
        queues = _read_held_window(s, None, mine=projects)
        _read_quotas(s, _projects_of(snap) | set(queues.counts), snap)
        snap.capacity = machine_capacity(ctx)
    else:
        # Only limits that exist need the usage they limit: the projects with a capability or member shares, and
        # the sessions of users with a session limit who submit one (an unlimited project costs no usage read).
        limited = {pid for pid in projects if snap.quotas[pid].capability} | {pid for pid, _ in snap.shares}
        session_users = {d.user_id for _, d in candidates
                         if d.kind == "interactive" and snap.limits.get(d.user_id, UserLimits()).max_sessions is not None}
        if limited or session_users:
            _read_admitted(s, snap, sorted(limited), individual_preemptible=False, user_ids=session_users)
        queued = sorted(pid for pid in projects if snap.held_counts.get(pid))
        queues = _read_held_window(s, queued) if queued else HeldQueues([], {})
    snap.demands.extend(_held_demand(h) for h in queues.window)
    _read_limits(s, ctx, _users_of(snap), snap, cached=True)
    _read_shares(s, _pairs(snap), snap, ctx)
    snap.demands.extend(d for _, d in candidates)
    if not snap.fair_share and not limited and not session_users and not queues.window:
        # Nothing limits these projects and users and nobody waits ahead: every job is admitted but those that
        # need an approval (what ``decide`` would answer, without building its ledger).
        plan = Plan(admit=[d.key for _, d in candidates if not d.approval_pending], preempt=[], hold={
            d.key: Hold(APPROVAL, {"project": snap.quotas[d.project_id].name}, "")
            for _, d in candidates if d.approval_pending})
    else:
        plan = snap.plan()
    # A new job admitted only by preempting others is held here; the loop's next round stops the victims and
    # admits it (it re-decides with the same rules), so that preemptions happen in one place.
    reclaiming = {p.beneficiary: p for p in plan.preempt}
    admitted = set(plan.admit) - set(reclaiming)
    at = utcnow()
    new_keys = {pid: [] for pid in projects}
    for item, demand in candidates:
        new_keys[demand.project_id].append(_queue_order(demand.priority, demand.created_at, demand.key))
    for item, demand in candidates:
        v = item.values
        truncated = queues.truncated(demand.project_id)
        if demand.key in reclaiming and not item.approval:
            p = reclaiming[demand.key]
            args = _plain(p.args)
            hold = Hold("reclaim", args, _format("en", "hold.reclaim", args, p.sentence))
            v.update(phase=HELD, reason=hold.sentence, reason_code=hold.code, reason_args=hold.args, admitted_at=None)
            continue
        if demand.key in admitted and not item.approval and not truncated:
            v.update(phase=JobPhase.QUEUED.value, reason="waiting for placement", reason_code="", reason_args={},
                     admitted_at=at)
            continue
        hold = plan.hold.get(demand.key)
        if demand.key in admitted:  # a queue longer than the window: it waits behind it, the loop admits in order
            hold = Hold("queue", {"project": snap.quotas[demand.project_id].name, "ahead": HELD_WINDOW + 1,
                                  "blocker": "queue"}, "")
        if item.approval:
            hold = approval_hold(q.devices(demand.usage), ctx.settings.approval_gpu_threshold,
                                 hold.args if hold is not None else {})
        if hold is None:  # not admitted and not explained: behind the others
            hold = Hold("queue", {"project": snap.quotas[demand.project_id].name, "ahead": 1, "blocker": "queue"}, "")
        args = _plain(hold.args)
        if truncated or not hold.sentence:
            # The plan saw only the head of the queue: the true position and queue length, and the sentence again.
            mine = _queue_order(demand.priority, demand.created_at, demand.key)
            batch_keys = new_keys[demand.project_id]
            args["position"] = 1 + queues.ahead(demand.project_id, demand.priority) + sum(
                1 for k in batch_keys if k < mine)
            args["held"] = sum(queues.counts.get(demand.project_id, {}).values()) + len(batch_keys)
            if hold.code != APPROVAL:
                hold = Hold(hold.code, args, _format("en", f"hold.{hold.code}", args, hold.sentence))
        v.update(phase=HELD, reason=hold.sentence, reason_code=hold.code, reason_args=args, admitted_at=None)
    if any(key not in {d.key for _, d in candidates} for key in plan.admit) or plan.preempt:
        nudge(ctx)  # held jobs may start, or a preemption is due: the loop carries it out


#: the message of an ``Admitted`` event (the console translates it: ``msg.admitted``)
ADMITTED_MESSAGE = "admitted: it fits the project's quota now"


def preempted_final_message(args: dict) -> str:
    """The reason of a preempted job once it has stopped (English; the console translates it with
    ``hold.preempted``): ``args`` are its ``reason_args`` (``beneficiary_project``, ``beneficiary_id``)."""
    return (f"preempted: project '{args.get('beneficiary_project', '?')}' reclaimed its deserved share "
            f"for job #{args.get('beneficiary_id', '?')}")


def preempted_message(beneficiary_id: int, beneficiary: str, project: str, sentence: str) -> str:
    """The message of a victim's ``Preempted`` event (and its operation-log details): the job it makes room for
    (id, name, project) and the preemption's ``sentence`` (``domain.admission.Preemption.sentence``). The console
    translates the shape (``state.messages``, ``msg.preempted_for``)."""
    return (f"preempted for job #{beneficiary_id} '{beneficiary}' of project '{project}', which is below its "
            f"deserved share: {sentence}")


def reclaiming_message(project: str, victim_id: int, victim: str, victim_project: str) -> str:
    """The message of a beneficiary's ``Reclaiming`` event: the job stopped for it (id, name, project). The console
    translates the shape (``state.messages``, ``msg.reclaiming``)."""
    return (f"reclaiming resources for project '{project}': stopping job #{victim_id} '{victim}' of project "
            f"'{victim_project}' (preemptible, its project is above its deserved share)")


def approval_hold(devices: int, threshold: int, args: dict | None = None) -> Hold:
    """The hold of a job above the approval threshold (``reason_code`` ``approval``; ``args`` from the plan's hold,
    e.g. ``project``/``position``/``held``, plus ``requested`` and ``threshold``)."""
    return Hold(APPROVAL, {**(args or {}), "requested": devices, "threshold": threshold}, (
        f"waiting for approval: it asks for {devices} accelerators, more than the {threshold} a job may use "
        "without an administrator's approval"))


def _plain(args: dict) -> dict:
    """Hold arguments as JSON values (str/int/float/bool; anything else as text)."""
    return {str(k): v if isinstance(v, (str, int, float, bool)) or v is None else str(v) for k, v in args.items()}


def approval_rows(batch: list[NewJob], ids: list[int | None]) -> list[dict]:
    """``approvals`` rows (kind ``large_job``, pending) for the held jobs of ``batch`` that need one."""
    now = utcnow()
    rows = []
    for item, job_id in zip(batch, ids):
        if job_id is None or item.error is not None or not item.approval:
            continue
        v = item.values
        devices = v["gpus"]
        rows.append({
            "kind": "large_job", "status": "pending", "requester_id": v["user_id"], "project_id": v["project_id"],
            "job_id": job_id, "payload": {"accelerators": devices, "threshold": v["reason_args"].get("threshold")},
            "reason": f"job '{v['name']}' asks for {devices} accelerators", "auto": False, "decided_by": None,
            "decision_note": "", "created_at": now, "decided_at": None,
        })
    return rows


# ---- the leader loop's pass ----------------------------------------------------------------------------------


@dataclass
class RoundResult:
    """What one :func:`admission_round` decided: ``admitted`` job ids (now ``Queued``: the caller hands them to the
    backend), ``preempted`` ``(victim uid, reason)`` pairs (the caller cancels them in the backend), and how many
    hold sentences it ``updated``; ``skipped`` when the round found nothing to re-decide."""

    admitted: list[int] = field(default_factory=list)
    preempted: list[tuple[str, str]] = field(default_factory=list)
    updated: int = 0
    skipped: bool = False


def _held_fingerprint(s) -> tuple:
    c = _JOBS.c
    return tuple(s.execute(
        sa_select(func.count(), func.max(c.id), func.sum(case((c.reason_code == APPROVAL, 1), else_=0)))
        .where(c.phase == HELD)
    ).one())


class AdmissionLoop:
    """The admission pass of the leader loop (state kept between rounds: what the last full pass saw).

    A round is one indexed query when nothing is held. The full pass (:func:`admission_round`) runs at once when
    room may have appeared or rules changed: ``changed`` (the reconciler moved jobs: usage may have dropped), a
    quota, share or held-job change in this process (:func:`invalidate`, :func:`nudge`), fewer held jobs than last
    time (a cancel elsewhere) or another count of jobs waiting for approval (one was approved). New held jobs alone
    were decided at their submission by the same rules: they bring a pass at most every
    :data:`NEW_HELD_PASS_EVERY_S` (a job held at submission behind a queue that has since moved). And at least every
    :data:`FULL_PASS_EVERY_S` seconds in any case (changes made by other replicas).
    """

    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx
        self._last: tuple | None = None
        self._last_at = -1e18

    def step(self, changed: bool) -> RoundResult:
        """Run one round; ``changed``: the reconciler applied phase changes since the last round."""
        ctx = self.ctx
        with ctx.session(read_only=True) as s:
            fingerprint = _held_fingerprint(s)
        if not fingerprint[0]:
            self._last = fingerprint
            ctx.cache.pop("admission-dirty", None)
            return RoundResult(skipped=True)
        dirty = ctx.cache.pop("admission-dirty", False)
        last = self._last
        urgent = changed or dirty or last is None or fingerprint[2] != last[2] or fingerprint[0] < (last[0] or 0)
        since = time.monotonic() - self._last_at
        due = since >= FULL_PASS_EVERY_S or (fingerprint != last and since >= NEW_HELD_PASS_EVERY_S)
        if not urgent and not due:
            return RoundResult(skipped=True)
        result = admission_round(ctx)
        with ctx.session(read_only=True) as s:
            self._last = _held_fingerprint(s)
        self._last_at = time.monotonic()
        return result


def _same_but_length(stored: str, args: dict) -> bool:
    """Whether the stored ``reason_args`` (JSON text) equal ``args`` but for ``held`` (the queue's length)."""
    try:
        old = json.loads(stored or "{}")
    except ValueError:
        return False
    return isinstance(old, dict) and {**old, "held": None} == {**args, "held": None}


def nudge(ctx: ServiceContext) -> None:
    """Ask this process's loop for a full admission pass at its next round (e.g. a held job was cancelled: the
    jobs behind it may start)."""
    ctx.cache["admission-dirty"] = True
    ctx.kick.set()


def admission_round(ctx: ServiceContext) -> RoundResult:
    """Re-decide every held job in one transaction: admit (``Held`` -> ``Queued``, ``admitted_at``, event
    ``Admitted``), refresh changed hold sentences, mark preemption victims (``reason_code`` ``preempted``, the
    beneficiary in ``reason_args``) and write ``Preempted``/``Reclaiming`` events and operation-log rows. The caller
    (``services.reconcile.LeaderLoop``) hands the admitted jobs to the backend and cancels the victims after the
    commit.

    A job held for an approval (``reason_code`` ``approval``) is never admitted here, whatever the plan says; nor
    is a held job of a project that has expired (it waits until the project is extended).
    """
    result = RoundResult()
    with ctx.session() as s:
        snap = Snapshot()
        held_ids = s.execute(sa_select(_JOBS.c.project_id).where(_JOBS.c.phase == HELD).distinct()).scalars().all()
        if not held_ids:
            return result
        _lock_projects(s, held_ids, snap)  # after the lock: nobody admits into these projects until we commit
        snap.fair_share = fair_share_configured(ctx, s)
        if snap.fair_share:
            _read_admitted(s, snap, None, individual_preemptible=True)
            snap.capacity = machine_capacity(ctx)
        else:
            held_users = s.execute(
                sa_select(_JOBS.c.user_id).where(_JOBS.c.phase == HELD).distinct()).scalars().all()
            _read_admitted(s, snap, sorted(held_ids), individual_preemptible=False, user_ids=held_users)
        now = utcnow()
        # A held job of a project that has expired since its submission stays held (as a new job would be refused):
        # it starts once a platform admin extends the project.
        held = [h for h in _read_held(s, None) if not snap.expired(h.project_id, now)]
        by_id = {h.id: h for h in held}
        snap.demands.extend(_held_demand(h) for h in held)
        _read_quotas(s, _projects_of(snap), snap)
        _read_limits(s, ctx, _users_of(snap), snap)
        _read_shares(s, _pairs(snap), snap)
        plan = snap.plan()
        c = _JOBS.c
        # Admissions: conditional on the row still being Held (a cancel may have won) and not waiting for approval.
        admitted: list[HeldJob] = []
        for key in plan.admit:
            job = by_id.get(key)
            if job is None or job.reason_code == APPROVAL:
                continue
            done = s.execute(
                _JOBS.update().where(c.id == job.id, c.phase == HELD, c.reason_code != APPROVAL).values(
                    phase=JobPhase.QUEUED.value, reason="waiting for placement", reason_code="", reason_args={},
                    admitted_at=now)
            ).rowcount
            if done:
                admitted.append(job)
        if admitted:
            s.execute(_EVENTS.insert(), [
                {"job_id": j.id, "at": now, "phase": JobPhase.QUEUED.value, "reason": "Admitted",
                 "message": ADMITTED_MESSAGE} for j in admitted])
        # Hold sentences, only where they changed - other than in the queue's length alone, which grows with every
        # submission (rewriting every held row for it would cost a write per held job per pass).
        changes = []
        for key, hold in plan.hold.items():
            job = by_id.get(key)
            if job is None or job.reason_code == APPROVAL:
                continue  # its sentence names the approval threshold; the approvals service moves it on
            args = _plain(hold.args)
            if (job.reason, job.reason_code, job.reason_args) == (hold.sentence, hold.code, json.dumps(args)):
                continue
            if job.reason_code == hold.code and _same_but_length(job.reason_args, args):
                continue
            changes.append({"b_id": job.id, "b_reason": hold.sentence, "b_code": hold.code, "b_args": args})
        if changes:
            s.execute(_JOBS.update().where(c.id == bindparam("b_id"), c.phase == HELD).values(
                reason=bindparam("b_reason"), reason_code=bindparam("b_code"), reason_args=bindparam("b_args")),
                changes)
        result.updated = len(changes)
        # Preemptions: decide admitted each beneficiary in this plan, counting on its victims being stopped; only
        # those whose beneficiary was really admitted above are carried out.
        started = {j.id: j for j in admitted}
        victims_done: set = set()
        for p in plan.preempt:
            beneficiary = started.get(p.beneficiary)
            if beneficiary is None or p.victim in victims_done:
                continue
            row = s.execute(sa_select(c.id, c.uid, c.name, c.project_id, c.phase, c.reason_code)
                            .where(c.id == p.victim).with_for_update()).first()
            if row is None or row.phase not in ACTIVE_PHASES or row.reason_code == PREEMPTED:
                continue
            victims_done.add(p.victim)
            victim_project = snap.quotas[row.project_id].name if row.project_id in snap.quotas else str(row.project_id)
            ben_project = snap.quotas[beneficiary.project_id].name
            reason = preempted_message(beneficiary.id, beneficiary.name, ben_project, p.sentence)
            s.execute(_JOBS.update().where(c.id == row.id).values(
                reason_code=PREEMPTED, reason_args={**_plain(p.args), "beneficiary_id": beneficiary.id,
                                                    "beneficiary": beneficiary.name,
                                                    "beneficiary_project": ben_project}))
            s.execute(_EVENTS.insert(), [
                {"job_id": row.id, "at": now, "phase": row.phase, "reason": "Preempted", "message": reason},
                {"job_id": beneficiary.id, "at": now, "phase": JobPhase.QUEUED.value, "reason": "Reclaiming",
                 "message": reclaiming_message(ben_project, row.id, row.name, victim_project)},
            ])
            s.execute(_OPLOG.insert(), oplog.row(None, "job:preempt", f"{victim_project}/{row.name}#{row.id}",
                                                  details=reason[:1900]))
            result.preempted.append((row.uid, reason))
    result.admitted = [j.id for j in admitted]
    return result
