"""Why a job waits, or could never start: :class:`Hold`, :class:`Preemption` and :class:`Refusal` as codes and
arguments, and the ceilings a job could never get under (:func:`never_admissible`).

A reason is a code plus JSON arguments in Crater's units; its sentence is ``hold.<code>`` (holds, preemptions)
or ``error.<code>`` (refusals) in ``i18n/admission``, rendered in any language by :func:`render` - English for the
``reason`` column and the events. Amounts are resource lists (``{"nvidia.com/gpu": 2}``; a key may carry a model
after a colon), so that each language writes them its own way (``{limit:resources}``).

A hold that carries ``expected_at`` (ISO 8601 UTC, or ``None``: no estimate) ends with the estimate sentence,
``hold.estimate`` ("Expected start within 14m", from ``wait`` seconds) or ``hold.no_estimate``, joined as the
language joins sentences (``hold.with_estimate``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crater_app import i18n
from crater_app.domain.admission.demands import Demand, ProjectQuota, UserLimits, Usage
from crater_app.domain.quota import devices, is_accelerator, split_key

#: hold codes that block the later jobs of their project (they get a backfill reservation)
BLOCKING = frozenset({"quota", "capacity", "fairshare"})
#: (code, argument) -> the template a hold of that code is written with when it lacks that argument: a ``queue``
#: hold behind jobs not looked at one by one (a long queue at submission), an ``approval`` hold before the
#: threshold is known
_VARIANTS = {("queue", "blocker_id"): "queue_window", ("approval", "threshold"): "approval_pending"}
#: (code, argument) -> the template a hold of that code is written with when it has that argument: a ``queue`` hold
#: behind a job of another project (``blocker_project``)
_WITH = {("queue", "blocker_project"): "queue_other"}


def render(lang: object, code: str, args: dict | None) -> str | None:
    """The sentence of hold (or preemption) ``code`` with ``args`` in ``lang``, the blocking hold's code of a
    ``queue`` hold in words (``holdcode.<code>``) and the estimate sentence when ``args`` has ``expected_at``;
    ``None`` when the catalogue has no ``hold.<code>`` or the arguments do not fit it."""
    values = dict(args or {})
    for (of, needs), variant in _VARIANTS.items():
        if code == of and needs not in values:
            code = variant
    for (of, has), variant in _WITH.items():
        if code == of and has in values:
            code = variant
    key = f"hold.{code}"
    if i18n.lookup(lang, key) is None:
        return None
    if "blocker" in values and isinstance(values["blocker"], str):
        values["blocker"] = i18n.translate(lang, f"holdcode.{values['blocker']}")
    missing = object()
    text = i18n.render(lang, key, values, fallback=missing)  # type: ignore[arg-type]
    if text is missing:
        return None
    if "expected_at" in values:
        estimate = None
        if not values["expected_at"]:
            estimate = "hold.no_estimate"
        elif "wait" in values:
            estimate = "hold.estimate"
        if estimate is not None:
            text = i18n.render(lang, "hold.with_estimate", {"reason": text,
                                                            "estimate": i18n.render(lang, estimate, values)})
    return text


@dataclass(frozen=True)
class Hold:
    """Why a job waits: ``code`` (``quota`` | ``share`` | ``sessions`` | ``capacity`` | ``fairshare`` |
    ``approval`` | ``queue``) and ``args`` (JSON values for the sentence ``hold.<code>``); ``sentence`` is it in
    English.

    ``args`` always has ``project`` (name), ``position`` and ``held`` (ints: place in the project's queue, 1-based,
    and jobs held there). Amounts are resource lists ``{key: amount}`` (cpu millicores, memory bytes, devices):

    - ``quota``: ``resource`` (the key), ``limit`` (capability), ``used`` (project), ``request``, ``jobs``,
      ``users``.
    - ``share``: ``resource``, ``limit`` (the member's share), ``used`` (the user's), ``request``, ``jobs``.
    - ``sessions``: ``limit``, ``used`` (ints).
    - ``approval``: ``requested`` (devices).
    - ``capacity``: ``resource``, ``limit`` (the machine's), ``used`` (all projects), ``reserved`` (other
      projects' unused guarantees), ``request``, ``jobs``, ``users``.
    - ``fairshare``: the ``capacity`` args plus ``deserved`` and ``project_used`` (the project's) and
      ``reclaimable`` (what preemptible jobs of projects above their deserved share could give back).
    - ``queue``: ``ahead`` (position of the held job that blocks it, in that job's project), ``blocker`` (that
      job's code), ``blocker_id`` (its key) and ``blocker_request`` (what it lacks); ``blocker_project`` (its
      project's name) when it is a job of another project (the pass's first job blocked on the machine, which
      later jobs of every project must not delay).

    ``quota``, ``capacity``, ``fairshare`` and ``queue`` also carry the blocking job's estimate: ``expected_at``
    (its backfill shadow time, ISO 8601 UTC; ``None``: no estimate) and ``wait`` (seconds from the decision).
    """

    code: str
    args: dict

    @property
    def sentence(self) -> str:
        """The reason in English (the ``reason`` column, events)."""
        return render(i18n.DEFAULT_LANGUAGE, self.code, self.args) or self.code


@dataclass(frozen=True)
class Preemption:
    """Stop ``victim`` (a preemptible admitted job of a project above its deserved share) so that ``beneficiary``
    (a held job of a project below its deserved share) can start. ``code`` (``reclaim``) and ``args``
    (``project`` the victim's, ``beneficiary_project``, ``resource``, ``used`` and ``deserved`` of the victim's
    project, ``beneficiary_used``, ``beneficiary_deserved``: resource lists) name both projects and the numbers;
    ``sentence`` is ``hold.reclaim`` in English (the reason of the beneficiary while the victims stop)."""

    victim: object
    beneficiary: object
    code: str = "reclaim"
    args: dict = field(default_factory=dict)

    @property
    def sentence(self) -> str:
        """``hold.reclaim`` in English."""
        return render(i18n.DEFAULT_LANGUAGE, self.code, self.args) or self.code


@dataclass(frozen=True)
class Refusal:
    """A job that can never be admitted: ``field`` (e.g. ``resources.nvidia.com/gpu``, ``max_runtime``), ``code``
    (``admission.over_capability``, ``admission.over_share``, ``admission.over_accelerators``,
    ``admission.over_max_runtime``: ``error.<code>`` in ``i18n/admission``) and ``args`` (limit and request)."""

    field: str
    code: str
    args: dict

    @property
    def sentence(self) -> str:
        """The refusal in English."""
        return i18n.render(i18n.DEFAULT_LANGUAGE, f"error.{self.code}", self.args, fallback=self.code)


def amount(key: str, value: int) -> Usage:
    """One resource amount as a reason's argument (``{key: value}``)."""
    return {key: value}


def _resource_field(key: str) -> str:
    """The JobSpec field a usage key comes from (``nvidia.com/gpu:M`` -> ``resources.nvidia.com/gpu``)."""
    return f"resources.{split_key(key)[0]}"


def never_admissible(demand: Demand, quota: ProjectQuota, share: Usage, limits: UserLimits,
                     max_runtime_s: int | None) -> Refusal | None:
    """Whether ``demand`` exceeds a ceiling it could never get under: the project's capability, the member's
    ``share``, the user's max accelerators per job, a ``max_sessions`` of 0 for an ``interactive`` job, or the
    user's max runtime. ``None`` when it could fit some day.

    Args:
        demand: the job (its ``usage``).
        quota: its project's quota; only ``capability`` matters here (an absent key has no ceiling).
        share: the member's share in the project (``{}`` = no limit; an absent key has no limit).
        limits: the user's limits; ``max_accelerators_per_job`` counts devices over all accelerator names (a
            model key repeats its name's devices and is not counted twice); ``max_runtime_s`` is the largest
            ``max_runtime`` the user may ask for.
        max_runtime_s: the job's ``max_runtime`` in seconds, ``None`` when it sets none (not refused here: the
            caller applies the user's limit as the default).

    Returns:
        :class:`Refusal` for the first ceiling broken in the order above (``field`` ``resources.<name>``, ``kind``
        or ``max_runtime``; ``args`` ``project``, ``request`` and ``limit`` - resource lists, device counts or
        seconds); else ``None``.
    """
    for key in sorted(demand.usage):
        value = demand.usage[key]
        if value > 0 and key in quota.capability and value > quota.capability[key]:
            return Refusal(_resource_field(key), "admission.over_capability", {
                "project": quota.name, "request": amount(key, value), "limit": amount(key, quota.capability[key])})
    for key in sorted(demand.usage):
        value = demand.usage[key]
        if value > 0 and key in share and value > share[key]:
            return Refusal(_resource_field(key), "admission.over_share", {
                "project": quota.name, "request": amount(key, value), "limit": amount(key, share[key])})
    count = devices(demand.usage)
    if limits.max_accelerators_per_job is not None and count > limits.max_accelerators_per_job:
        names = sorted(key for key in demand.usage if split_key(key)[1] is None and is_accelerator(key))
        return Refusal(_resource_field(names[0]) if names else "resources", "admission.over_accelerators",
                       {"request": count, "limit": limits.max_accelerators_per_job})
    if demand.kind == "interactive" and limits.max_sessions == 0:  # no session could ever start
        return Refusal("kind", "admission.no_sessions", {"limit": limits.max_sessions})
    if limits.max_runtime_s is not None and max_runtime_s is not None and max_runtime_s > limits.max_runtime_s:
        return Refusal("max_runtime", "admission.over_max_runtime",
                       {"request": max_runtime_s, "limit": limits.max_runtime_s})
    return None
