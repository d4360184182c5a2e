"""Projects' Volcano Queues kept as their quotas say: what :meth:`KubernetesBackend.ensure_queue` asked for is the
desired state, the queues reflector's cache the actual one; every difference (a Queue missing, edited or deleted by
hand, a child queue of a member no longer sharing) is put right at once and again on every tick.

A Queue's ``spec`` is compared on the fields Crater sets (``capability``, ``deserved``, ``guarantee``, ``parent``,
``weight``, ``reclaimable``); fields Volcano defaults (``dequeueStrategy``) or others add are left alone. A Queue
that differs is replaced (PUT with its ``resourceVersion``: a concurrent edit makes it a 409, tried again next
tick), so a resource key removed from a quota leaves the Queue too (a merge patch would keep it). Parents are
applied before their children (Volcano's admission refuses a child of a missing parent).
"""

from __future__ import annotations

import copy
import logging
import threading
from typing import Callable

from crater_app.cluster.kube.calls import ApiError, Calls
from crater_app.domain.naming import LABEL_PROJECT

log = logging.getLogger(__name__)
#: the spec fields of a Queue that Crater owns
OWNED_FIELDS = ("capability", "deserved", "guarantee", "parent", "weight", "reclaimable")


def _owned(spec: dict | None) -> dict:
    spec = spec or {}
    return {k: spec.get(k) for k in OWNED_FIELDS if spec.get(k) not in (None, {}, {"resource": {}})}


def differs(desired: dict, actual: dict | None) -> bool:
    """Whether ``actual`` (a Queue from the API, or ``None``) is not what ``desired`` says (:data:`OWNED_FIELDS`
    and Crater's labels)."""
    if actual is None:
        return True
    want_labels = (desired.get("metadata") or {}).get("labels") or {}
    have_labels = (actual.get("metadata") or {}).get("labels") or {}
    if any(have_labels.get(k) != v for k, v in want_labels.items()):
        return True
    return _owned(desired.get("spec")) != _owned(actual.get("spec"))


class QueueSync:
    """Desired Queues per project and their repair. ``actual(name)`` reads the queues cache (thread-safe)."""

    def __init__(self, calls: Calls, actual: Callable[[str], dict | None]) -> None:
        self._calls = calls
        self._actual = actual
        self._desired: dict[str, list[dict]] = {}  # project -> its queues, parents first
        self._lock = threading.Lock()

    def want(self, project: str, queues: list[dict]) -> None:
        """Make ``queues`` (the builder's, parents first) the desired state of ``project``."""
        with self._lock:
            self._desired[project] = [copy.deepcopy(q) for q in queues]

    def names(self) -> set[str]:
        """Every Queue name some project wants."""
        with self._lock:
            return {q["metadata"]["name"] for qs in self._desired.values() for q in qs}

    def sync(self, project: str | None = None, stale: list[dict] | None = None) -> list[str]:
        """Create or replace every desired Queue (of ``project``, or of all) that :func:`differs` from the cache,
        and delete ``stale`` ones (Crater's queues of the project that no project wants any more). Returns the
        names of the queues that could not be put right (tried again next time)."""
        with self._lock:
            projects = [project] if project is not None else list(self._desired)
            wanted = [(p, [copy.deepcopy(q) for q in self._desired.get(p, [])]) for p in projects]
        failed = []
        for _, queues in wanted:
            for desired in queues:
                name = desired["metadata"]["name"]
                actual = self._actual(name)
                if not differs(desired, actual):
                    continue
                try:
                    if actual is None:
                        actual = self._create(desired)
                    if actual is not None:
                        body = copy.deepcopy(desired)
                        body["metadata"]["resourceVersion"] = (actual.get("metadata") or {}).get("resourceVersion")
                        body["spec"] = {**(actual.get("spec") or {}), **(desired.get("spec") or {})}
                        for key in OWNED_FIELDS:
                            if key not in (desired.get("spec") or {}):
                                body["spec"].pop(key, None)
                        self._calls.replace(body)
                except ApiError as exc:
                    log.warning("Queue %s not put right: %s", name, exc)
                    failed.append(name)
        for queue in stale or []:
            name = queue["metadata"]["name"]
            try:
                self._calls.delete("Queue", None, name, foreground=False)
            except ApiError as exc:
                if exc.status != 404:
                    failed.append(name)
        return failed

    def _create(self, desired: dict) -> dict | None:
        """Create ``desired``; ``None`` when done, else the Queue that is already there (the cache was behind), to
        be compared and replaced."""
        try:
            self._calls.create(desired)
            return None
        except ApiError as exc:
            if exc.status != 409:
                raise
        current = self._calls.get("Queue", None, desired["metadata"]["name"])
        return current if differs(desired, current) else None

    def stale(self, cached: list[dict]) -> list[dict]:
        """Crater's Queues in ``cached`` (label ``crater.io/project`` of a project it has desired queues for)
        that none of the desired states names: the child queues of members who lost their share."""
        with self._lock:
            slugs = {((q.get("metadata") or {}).get("labels") or {}).get(LABEL_PROJECT)
                     for qs in self._desired.values() for q in qs}
            names = {q["metadata"]["name"] for qs in self._desired.values() for q in qs}
        return [q for q in cached
                if ((q.get("metadata") or {}).get("labels") or {}).get(LABEL_PROJECT) in slugs
                and q["metadata"]["name"] not in names]
