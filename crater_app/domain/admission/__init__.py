"""Admission: which held jobs may start, given project quotas, member shares, user limits, the machine's capacity
and fair share across projects.

Pure: no I/O, no clock (the caller passes ``now``). Units: ``cpu`` millicores, ``memory`` bytes, accelerators in
devices, times UTC. A *usage* is a dict resource key -> integer amount, where a key is a resource name (``cpu``,
``memory``, ``nvidia.com/gpu``) or an accelerator resource with a model after a colon
(``nvidia.com/gpu:NVIDIA-A100-SXM4-80GB``). A job that asks for ``n`` devices of model ``M`` counts ``n`` towards
``nvidia.com/gpu`` AND ``nvidia.com/gpu:M``; a job without a model counts only towards ``nvidia.com/gpu`` (see
:func:`crater_app.domain.quota.usage_of`).

Semantics of :func:`decide` (one pass over the held jobs; admissions made during the pass count at once, so one
call never over-admits however many jobs are held):

1. **Hard limits** (checked first, per held job): the project's ``capability`` (admitted usage of the project plus
   the job <= capability, for every key the capability gives; Volcano ``capacity`` plugin, Kueue ClusterQueue
   ``borrowingLimit``), the member's ``share`` inside the project (same rule on the user's admitted usage in that
   project), the user's ``max_sessions`` (admitted ``interactive`` jobs of the user, all projects), and a pending
   approval. Hold codes ``quota``, ``share``, ``sessions``, ``approval``.
2. **Machine capacity**: the total admitted usage plus the job must fit ``capacity`` for every key the job asks
   for (a key absent from ``capacity`` is zero: the machine has none of it, e.g. no device of that model).
   The unused part of every *other* project's ``guarantee`` is reserved and never lent (Volcano ``capacity``
   plugin: a queue's guarantee is kept back from other queues). Hold code ``capacity``.
3. **Fair share when contended**: a project at or above its ``deserved`` may still use idle capacity (lending, Kueue
   cohort borrowing). When a held job does not fit the machine, its project may reclaim (Volcano ``capacity`` plugin
   ``reclaim`` action; Kueue ``preemption.reclaimWithinCohort: Any``) if its ``deserved`` covers a key the machine
   lacks and, with the job added, the project stays within its ``deserved`` on every key of the job that
   ``deserved`` covers (Volcano compares only the dimensions ``deserved`` names: ``LessEqualWithDimension``).
   Victims are admitted, ``preemptible``, not ``reclaim_lock`` jobs of other projects (the caller marks only running
   jobs ``preemptible``: one admitted but not started yet holds nothing on the backend and would spend an attempt
   without a run; Volcano's ``reclaim`` action evicts only running tasks) that free a lacking key the beneficiary's
   ``deserved`` covers, taken lowest priority first, then most recent (``created_at`` latest) first (Kueue's
   candidate order), never bringing a victim's project below its ``deserved`` on a lacking key (a key absent from
   the victim's ``deserved`` counts as deserved 0); the set is then trimmed to the victims still needed, latest
   chosen first (Kueue's minimal preemption set). If the candidates cannot free enough, nothing is preempted and the
   job waits: code ``fairshare`` with the deserved, used and reclaimable numbers, or ``capacity`` when its project
   may not reclaim or the machine could not hold the job even empty. Non-preemptible jobs are never stopped. A job
   is never preempted for a job of its own project (Kueue ``withinClusterQueue: Never``; priority inside a project
   only orders its queue). The beneficiary is admitted in the same plan: the caller stops the victims in the same
   transaction, after which they no longer count. Jobs admitted in the same pass are not victims.
4. **Order**: projects furthest below their deserved share first, by dominant resource share (DRF): the largest
   ``admitted / deserved`` over the keys ``deserved`` gives (Volcano ``proportion`` plugin's queue order; 0/0 = 0
   as Volcano's ``api.Share``, but x/0 = infinity where Volcano says 1, so that a project deserving nothing and
   using something sorts after every project within its share), recomputed after every admission and
   preemption; ties by the head job's priority (higher first), ``created_at`` (older first), key. Other projects
   go on when one project's job is blocked (they may use what it could not, within rule 5). Per-user holds
   (``share``, ``sessions``, ``approval``) block nobody: the project's next job is considered.
5. **Backfill** (EASY backfill, :mod:`crater_app.domain.backfill`: Lifka 1995; Mu'alem & Feitelson 2001; Slurm
   ``sched/backfill``): the first job of a project held by ``quota``, ``capacity`` or ``fairshare`` is the project's
   *head*; it gets a reservation on what blocks it - the project's capability for ``quota`` (from the project's
   admitted jobs), the machine for the others (from every admitted job) - with a shadow time from the admitted jobs'
   ``ends_at`` bounds (jobs admitted earlier in the pass count too, until ``now`` + their ``bound_s``). A later job
   of the project that fits now (and breaks no hard limit) is admitted ahead of it only when it cannot delay it: it
   ends by the shadow time (``now`` + its ``bound_s``), or it uses only capacity the head will not need then.
   Otherwise it waits with code ``queue`` (its own hard limit first, if it breaks one), naming the head
   (``blocker_id``, what it lacks) and its expected start. Across projects, the pass's first head blocked on the
   machine (``capacity``/``fairshare``) is the *machine head*: every later admission of another project - directly
   or by a reclaim - must pass the same test against its reservation (what a job takes out of its own project's
   unused guarantee does not count: that was never the head's), or waits with a ``queue`` hold that names the head
   and its project (``blocker_project``); as in Slurm's backfill, where the reservation of a higher-priority pending
   job binds every lower-priority job of the partition, whoever's it is. Exceptions: a machine head that borrows
   (``capacity``: its project would go above its deserved share) does not hold back a job that keeps its own project
   within its deserved share (that share is the project's due; it could reclaim it); and a blocked job without an
   estimate (it waits for jobs without a bound), or one the empty machine could not hold, is no machine head - the
   next blocked one may be (Slurm's backfill likewise reserves only for jobs that can start within its
   ``bf_window``, so that a job with no foreseeable start does not hold the machine idle). Kueue's
   ``BestEffortFIFO`` lets any later job pass; Slurm's backfill, like this rule, only those that cannot delay the
   reservation.

A ``guarantee`` counts as deserved at least (Volcano requires ``guarantee <= deserved``; a project given only a
guarantee may reclaim up to it). ``deserved`` on a model key: when ``deserved`` gives ``nvidia.com/gpu`` but not
``nvidia.com/gpu:M``, the model's share is bounded by the generic key (a project deserving 4 GPUs deserves 4 of
any model).

Every :class:`Hold` carries its project queue ``position`` and ``held`` (jobs held in that project), and counts of
jobs and distinct users behind a usage (aggregates only, never names). The package's modules: ``demands`` (the
inputs), ``ledger`` (admitted usage during a pass), ``reclaim`` (fair-share preemption), ``decision`` (the pass),
``reasons`` (holds, preemptions, refusals as codes + args).
"""

from crater_app.domain.admission.decision import MACHINE, Plan, decide
from crater_app.domain.admission.demands import Demand, ProjectQuota, Usage, UserLimits, queue_order
from crater_app.domain.admission.reasons import BLOCKING, Hold, Preemption, Refusal, never_admissible, render

__all__ = [
    "BLOCKING", "MACHINE", "Demand", "Hold", "Plan", "Preemption", "ProjectQuota", "Refusal", "Usage", "UserLimits",
    "decide", "never_admissible", "queue_order", "render",
]
