"""Approval requests: their kinds and states, the checks of their payloads, and the auto-approval rule (pure).

Kinds (Crater's "approval orders", seed ``000_dff36a5b8fe0cc9d.txt``):

- ``quota``: more quota for a project; payload ``{"guarantee"|"deserved"|"capability": resource list}``.
- ``extend_runtime``: a longer ``max_runtime`` for a job; payload ``{"max_runtime": seconds}``.
- ``reclaim_lock``: a lock against automatic reclamation (preemption) for a job; no payload.
- ``large_job``: a job above ``approval_gpu_threshold`` accelerators waits (``Held``) until approved; written
  by the submission path, never requested by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from crater_app.domain import field_paths
from crater_app.domain import quota as quota_lists
from crater_app.domain.errors import InvalidInput
from crater_app.domain.naming import is_text
from crater_app.domain.resources import CPU, MEMORY, canonical_quantity

KINDS = ("quota", "extend_runtime", "reclaim_lock", "large_job")
#: the kinds a user may ask for (``large_job`` requests come from the submission path)
REQUESTABLE_KINDS = ("quota", "extend_runtime", "reclaim_lock")
#: kinds whose target is a job (``job_id``); ``quota`` targets a project
JOB_KINDS = ("extend_runtime", "reclaim_lock", "large_job")
STATUSES = ("pending", "approved", "rejected", "closed")
QUOTA_SECTIONS = quota_lists.SECTIONS
MAX_REASON_CHARS = 1000
MAX_NOTE_CHARS = 1000
#: the most entries one section of a quota request may name
MAX_PAYLOAD_ENTRIES = 16


def check_reason(value: object) -> str:
    """The request's reason: required text of 1..1000 characters (surrounding blanks dropped).

    Raises:
        InvalidInput: (field ``reason``, argument ``max``) ``approval.reason_required`` (missing),
        ``approval.reason_type`` (not a string, or not storable text), ``approval.reason_empty`` (blank),
        ``approval.reason_too_long`` (over 1000 characters; ``length``).
    """
    if value is None:
        raise InvalidInput("approval.reason_required", "reason", max=MAX_REASON_CHARS)
    if not isinstance(value, str) or not is_text(value):
        raise InvalidInput("approval.reason_type", "reason", max=MAX_REASON_CHARS)
    text = value.strip()
    if not text:
        raise InvalidInput("approval.reason_empty", "reason", max=MAX_REASON_CHARS)
    if len(text) > MAX_REASON_CHARS:
        raise InvalidInput("approval.reason_too_long", "reason", length=len(text), max=MAX_REASON_CHARS)
    return text


def check_note(value: object) -> str:
    """A decision's note: optional text of at most 1000 characters (``None`` -> ``""``).

    Raises:
        InvalidInput: (field ``note``, argument ``max``) ``approval.note_type`` (not a string, or not storable
        text), ``approval.note_too_long`` (over 1000 characters; ``length``).
    """
    if value is None:
        return ""
    if not isinstance(value, str) or not is_text(value):
        raise InvalidInput("approval.note_type", "note", max=MAX_NOTE_CHARS)
    text = value.strip()
    if len(text) > MAX_NOTE_CHARS:
        raise InvalidInput("approval.note_too_long", "note", length=len(text), max=MAX_NOTE_CHARS)
    return text


def _quota_entry(name: object, quantity: object, field: str) -> tuple[str, str | int]:
    """One checked entry of a quota resource list (rules of :func:`crater_app.domain.quota.parse_quota_list`):
    ``(name, value)`` with devices as ``int`` and CPU/memory as the quantity given, in canonical form."""
    if not isinstance(name, str):
        raise InvalidInput("quota.key_type", field, field_name=field)
    amount = quota_lists.parse_quota_list({name: quantity}, field)[name]
    if quota_lists.split_key(name)[0] in (CPU, MEMORY):
        return name, canonical_quantity(quantity)
    return name, amount


def check_quota_payload(payload: object) -> dict[str, dict[str, str | int]]:
    """Check a ``quota`` request's payload: an object with one or more of ``guarantee``, ``deserved``,
    ``capability``, each a resource list (``cpu``, ``memory``, accelerator names such as ``nvidia.com/gpu``,
    optionally ``nvidia.com/gpu:<model>`` for one accelerator model), at most 16 entries each.

    Returns:
        The payload with checked values: accelerators as whole devices (``int``), CPU and memory as Kubernetes
        quantities in canonical form (``"32"``, ``"500m"``, ``"256Gi"``; ``" 0.5 "`` -> ``"500m"``).

    Raises:
        InvalidInput: naming the field: ``approval.quota_payload`` (``payload``: not an object with a section),
        ``approval.quota_payload_key`` (``payload.<key>``: not a section), ``approval.quota_payload_list`` or
        ``quota.list_too_many`` (``payload.<section>``), and the errors of
        :func:`crater_app.domain.quota.parse_quota_list` (``payload.capability.cpu``, ...).
    """
    if not isinstance(payload, dict) or not payload:
        raise InvalidInput("approval.quota_payload", "payload", sections=list(QUOTA_SECTIONS))
    out: dict[str, dict[str, str | int]] = {}
    for section, entries in payload.items():
        field = field_paths.key("payload", section)
        if section not in QUOTA_SECTIONS:
            raise InvalidInput("approval.quota_payload_key", field, key=str(section)[:64],
                               sections=list(QUOTA_SECTIONS))
        if not isinstance(entries, dict) or not entries:
            raise InvalidInput("approval.quota_payload_list", field, field_name=field)
        if len(entries) > MAX_PAYLOAD_ENTRIES:
            raise InvalidInput("quota.list_too_many", field, field_name=field, count=len(entries),
                               max=MAX_PAYLOAD_ENTRIES)
        out[section] = dict(_quota_entry(name, quantity, field) for name, quantity in entries.items())
    return out


def merged_quota(current: dict[str, dict | None], payload: dict[str, dict]) -> quota_lists.Quota:
    """The project's quota after a ``quota`` request, parsed and checked by the rules of a quota set by hand
    (:func:`crater_app.domain.quota.parse_quota`): every section of ``current`` (``guarantee``, ``deserved``,
    ``capability``, as stored) with the payload's entries set over it (resources the request does not name stay).

    Returns:
        A :class:`crater_app.domain.quota.Quota` (cpu millicores, memory bytes, accelerators devices); store it with
        :func:`crater_app.domain.quota.render_quota_list`.

    Raises:
        InvalidInput: ``guarantee <= deserved <= capability`` broken on some key (field ``guarantee.<key>`` or
        ``deserved.<key>``, both amounts named; see :func:`crater_app.domain.quota.check_order`).
    """
    return quota_lists.parse_quota(
        {section: {**(current.get(section) or {}), **(payload.get(section) or {})} for section in QUOTA_SECTIONS})


@dataclass(frozen=True)
class AutoRule:
    """The auto-approval rule for ``extend_runtime`` requests (Crater's default: an extension under 12 h is
    granted at once, at most once per 48 h per user). ``max_s`` 0 turns it off."""

    max_s: int
    window_s: int

    def applies(self, added_s: int, last_auto_at: datetime | None, now: datetime,
                new_runtime_s: int, user_limit_s: int | None) -> bool:
        """Whether an extension adding ``added_s`` seconds is granted automatically.

        Args:
            added_s: the new ``max_runtime`` minus the current one, seconds (> 0).
            last_auto_at: when the user's latest auto-approved request was granted (UTC), or ``None``.
            new_runtime_s: the ``max_runtime`` asked for; ``user_limit_s``: the user's own ceiling on
                ``max_runtime`` (``None``: none). The rule never grants beyond a user's ceiling.
        """
        if self.max_s <= 0 or not 0 < added_s < self.max_s:
            return False
        if user_limit_s is not None and new_runtime_s > user_limit_s:
            return False
        return last_auto_at is None or last_auto_at <= now - timedelta(seconds=self.window_s)
