"""The Kubernetes API mock's state: objects of every served kind, one global ``resourceVersion``, the event history
watches are served from, owner references and garbage collection, and container logs.

Every write takes the next ``resourceVersion`` (one counter for all kinds, as etcd's revision) and appends exactly
one event, so an event's ``resourceVersion`` is its position in the history. The history keeps the last
``history_limit`` events; a watch from an older ``resourceVersion`` gets ``410 Gone`` (as after etcd compaction).
Stored objects are never changed in place (each write stores a new dict), so readers may serialise them unlocked.

Errors are raised as :class:`ApiError` carrying the ``Status`` object the real API server answers.
"""

from __future__ import annotations

import copy
import re
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable

from tests.kube_api import patching, schemas, selectors
from tests.kube_api.collection import GarbageCollection, now_iso
from tests.kube_api.kinds import Kind, all_kinds

Key = tuple[str, str]  # (namespace or "", name)
Check = Callable[[dict], list[str]]
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class ApiError(Exception):
    """An answer other than success: ``code`` (HTTP status), ``reason`` (``NotFound``, ``AlreadyExists``,
    ``Conflict``, ``Invalid``, ``Gone``, ``BadRequest``, ...), ``message`` and ``details`` as in ``Status``."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details or {}

    def status(self) -> dict:
        """The ``v1.Status`` object of this error."""
        out = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            out["details"] = self.details
        return out


class Gone(ApiError):
    """A watch from a ``resourceVersion`` older than the retained history."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(410, "Expired", f"too old resource version: {requested} ({oldest})")


class Dropped(Exception):
    """The server restarted: every open watch ends."""


@dataclass(frozen=True)
class Event:
    """One history entry: ``rv``, the kind's ``(group, plural)``, ``type`` (ADDED, MODIFIED, DELETED), the
    object after the write and ``prev`` (the object before it; ``None`` for ADDED)."""

    rv: int
    resource: tuple[str, str]
    type: str
    obj: dict
    prev: dict | None


class Store(GarbageCollection):
    """Objects, history and logs; thread-safe. ``history_limit`` events are kept for watches; ``graceful_pods``
    makes a pod delete set ``deletionTimestamp`` and leaves the removal to the kubelet (the cluster simulator's
    :meth:`finish_pod_deletion`) instead of removing it at once; ``namespaces`` are created up front and other
    namespaced objects need their namespace to exist (``404`` otherwise, as on a real cluster)."""

    def __init__(self, *, history_limit: int = 1_000_000, graceful_pods: bool = False,
                 namespaces: tuple[str, ...] = ("default", "kube-system"),
                 clock: Callable[[], float] = time.time) -> None:
        self.kinds: dict[tuple[str, str], Kind] = {(k.group, k.plural): k for k in all_kinds()}
        self.history_limit = history_limit
        self.graceful_pods = graceful_pods
        self.clock = clock
        self.cond = threading.Condition(threading.RLock())
        self.epoch = 0
        self._rv = 1000
        self._objects: dict[tuple[str, str], dict[Key, dict]] = {r: {} for r in self.kinds}
        self._history: list[Event] = []
        self._first_rv = self._rv + 1  # rv of _history[0] (or of the next event when empty)
        self._by_uid: dict[str, tuple[tuple[str, str], Key]] = {}
        self._dependants: dict[str, set[str]] = {}  # owner uid -> dependant uids
        self.logs: dict[tuple[str, str, str], list[str]] = {}
        for name in namespaces:
            self.create("", "namespaces", "", {"metadata": {"name": name}})

    # -- reading -------------------------------------------------------------------------------------------------
    def kind(self, group: str, plural: str) -> Kind:
        """The served kind; raises ``404 NotFound`` for an unknown resource."""
        try:
            return self.kinds[(group, plural)]
        except KeyError:
            raise ApiError(404, "NotFound", "the server could not find the requested resource") from None

    @property
    def resource_version(self) -> int:
        """The latest ``resourceVersion`` (of the last write)."""
        return self._rv

    @property
    def oldest_watchable(self) -> int:
        """The oldest ``resourceVersion`` a watch may start from without ``410 Gone``."""
        return self._first_rv - 1

    def get(self, group: str, plural: str, namespace: str, name: str) -> dict:
        """A copy of the object; raises ``404 NotFound``."""
        with self.cond:
            return copy.deepcopy(self._get(self.kind(group, plural), namespace, name))

    def peek(self, group: str, plural: str, namespace: str, name: str) -> dict | None:
        """The stored object itself (do not change it) or ``None``."""
        return self._objects[(group, plural)].get((namespace, name))

    def list(self, group: str, plural: str, namespace: str | None = None, *, label_selector: str = "",
             field_selector: str = "") -> tuple[list[dict], int]:
        """(stored objects sorted by namespace and name, the list's ``resourceVersion``); ``namespace=None``: all."""
        kind = self.kind(group, plural)
        try:
            labels, fields = selectors.label_matcher(label_selector), selectors.field_matcher(field_selector)
        except selectors.SelectorError as exc:
            raise ApiError(400, "BadRequest", str(exc)) from None
        with self.cond:
            objs = self._objects[(kind.group, kind.plural)]
            keys = sorted(objs) if namespace is None else sorted(k for k in objs if k[0] == (namespace or ""))
            items = [objs[k] for k in keys]
            rv = self._rv
        return [o for o in items if labels(o) and fields(o)], rv

    # -- writing -------------------------------------------------------------------------------------------------
    def create(self, group: str, plural: str, namespace: str, body: dict, *, keep_status: bool = False,
               validate: bool = True, check: Check | None = None) -> dict:
        """Store a new object; returns a copy. ``keep_status`` keeps ``status`` (else dropped where ``status`` is a
        subresource, as the API server does); ``check(obj)`` lists further problems (``"<path>: <message>"``, as
        ``tests/kube_schemas.py`` gives them) that make it ``422``. Raises ``409 AlreadyExists``, ``404``
        (namespace), ``422 Invalid``."""
        kind = self.kind(group, plural)
        with self.cond:
            obj = copy.deepcopy(body)
            meta = obj.setdefault("metadata", {})
            ns = self._namespace_of(kind, namespace, meta)
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            name = meta.get("name") or ""
            if validate:
                self._check_meta(kind, obj, name)
            if (ns, name) in self._objects[(kind.group, kind.plural)]:
                raise ApiError(409, "AlreadyExists", f'{kind.qualified} "{name}" already exists',
                               {"name": name, "group": kind.group, "kind": kind.plural})
            if kind.namespaced and ns not in {k[1] for k in self._objects[("", "namespaces")]}:
                raise ApiError(404, "NotFound", f'namespaces "{ns}" not found',
                               {"name": ns, "kind": "namespaces"})
            obj["apiVersion"], obj["kind"] = kind.api_version, kind.kind
            if kind.namespaced:
                obj["metadata"]["namespace"] = ns
            if "status" in kind.subresources and not keep_status:
                obj.pop("status", None)
            self._run_check(kind, obj, name, check)
            if kind.schema is not None and validate:
                obj = schemas.prune_object(kind.schema, obj)
                self._validate(kind, obj, name)
            meta = obj["metadata"]
            for transient in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
                meta.pop(transient, None)
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=now_iso(self.clock), generation=1)
            if kind.namespaced:
                meta["namespace"] = ns
            if kind.plural == "namespaces":
                obj["status"] = {"phase": "Active"}
            elif kind.plural == "pods" and "status" not in obj:
                obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}  # the API server's pod defaults
            self._put(kind, (ns, name), obj, "ADDED", None)
            return copy.deepcopy(obj)

    def replace(self, group: str, plural: str, namespace: str, name: str, body: dict, *,
                subresource: str = "", validate: bool = True, check: Check | None = None) -> dict:
        """PUT: the whole object (or its ``status`` when ``subresource == "status"``). Raises ``404``, ``409
        Conflict`` (stale ``resourceVersion``), ``422`` (custom object without ``resourceVersion``, invalid)."""
        kind = self.kind(group, plural)
        with self.cond:
            cur = self._get(kind, namespace, name)
            meta = body.get("metadata") or {}
            if meta.get("name") not in (None, name):
                raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
            if not meta.get("resourceVersion") and kind.is_custom:
                raise ApiError(422, "Invalid", f'{kind.kind}.{kind.group} "{name}" is invalid: metadata.'
                               'resourceVersion: Invalid value: 0x0: must be specified for an update',
                               self._invalid_details(kind, name, [schemas.Cause(
                                   "metadata.resourceVersion", "FieldValueInvalid",
                                   "Invalid value: 0x0: must be specified for an update")]))
            self._check_rv(kind, cur, meta.get("resourceVersion"))
            return self._update(kind, cur, copy.deepcopy(body), subresource, validate, check)

    def patch(self, group: str, plural: str, namespace: str, name: str, patch, content_type: str, *,
              subresource: str = "", validate: bool = True, check: Check | None = None) -> dict:
        """PATCH with a merge, strategic merge or JSON patch; raises ``404``, ``409``, ``422``."""
        kind = self.kind(group, plural)
        with self.cond:
            cur = self._get(kind, namespace, name)
            try:
                new = patching.apply_patch(cur, patch, content_type)
            except patching.PatchError as exc:
                raise ApiError(422, "Invalid", str(exc)) from None
            if isinstance(patch, dict) and (patch.get("metadata") or {}).get("resourceVersion"):
                self._check_rv(kind, cur, patch["metadata"]["resourceVersion"])
            return self._update(kind, cur, new, subresource, validate, check)

    def update(self, group: str, plural: str, namespace: str, name: str, change: Callable[[dict], dict | None],
               *, subresource: str = "") -> dict | None:
        """Write ``change(object)`` (``None``: no write) as the cluster's controllers do. ``change`` gets the stored
        object and must not change it: it returns a new dict (``{**obj, "status": ...}``). Returns the stored new
        object (read-only) or ``None`` when the object is gone or ``change`` gave ``None``."""
        kind = self.kind(group, plural)
        with self.cond:
            cur = self.peek(group, plural, namespace, name)
            if cur is None:
                return None
            new = change(cur)
            if new is None:
                return None
            return self._update(kind, cur, new, subresource, validate=False, copy_result=False)

    def set_status(self, group: str, plural: str, namespace: str, name: str, status: dict) -> dict | None:
        """Test hook: replace the object's ``status`` (one MODIFIED event); ``None`` when the object is gone."""
        return self.update(group, plural, namespace, name, lambda o: {**o, "status": copy.deepcopy(status)},
                           subresource="status")

    def delete(self, group: str, plural: str, namespace: str, name: str, *, propagation: str = "",
               grace_seconds: int | None = None, preconditions: dict | None = None) -> dict:
        """DELETE as the API server and its garbage collector do it: ``Foreground`` marks the object
        (``deletionTimestamp`` + the ``foregroundDeletion`` finalizer), deletes its dependants (objects whose
        ``ownerReferences`` name it) and removes it once they are gone; ``Background`` (the default) removes it
        and then its dependants; ``Orphan`` removes it and strips the dependants' references. An object with
        finalizers only gets ``deletionTimestamp``. Returns the object's last state; raises ``404``, ``409``."""
        kind = self.kind(group, plural)
        with self.cond:
            cur = self._get(kind, namespace, name)
            pre = preconditions or {}
            if (pre.get("uid") and pre["uid"] != cur["metadata"]["uid"]) or (
                    pre.get("resourceVersion") and pre["resourceVersion"] != cur["metadata"]["resourceVersion"]):
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {kind.qualified} "{name}": '
                               "Precondition failed", {"name": name, "group": kind.group, "kind": kind.plural})
            return copy.deepcopy(self._delete(kind, cur, propagation or "Background", grace_seconds))

    def finish_pod_deletion(self, namespace: str, name: str) -> None:
        """The kubelet's part: remove a pod whose ``deletionTimestamp`` is set (its containers are stopped)."""
        with self.cond:
            cur = self.peek("", "pods", namespace, name)
            if cur is not None and cur["metadata"].get("deletionTimestamp") and not cur["metadata"].get("finalizers"):
                self._remove(self.kinds[("", "pods")], cur)

    def append_log(self, namespace: str, pod: str, container: str, lines: list[str]) -> None:
        """Add lines to a container's log (``pods/log``)."""
        with self.cond:
            self.logs.setdefault((namespace, pod, container), []).extend(lines)
            self.cond.notify_all()

    # -- watching ------------------------------------------------------------------------------------------------
    def events_after(self, rv: int, epoch: int, timeout: float) -> list[Event]:
        """The events after ``rv``, waiting up to ``timeout`` seconds for one; raises :class:`Gone` when ``rv`` is
        older than the history, :class:`Dropped` when the server restarted since ``epoch``."""
        with self.cond:
            deadline = time.monotonic() + timeout
            while True:
                if self.epoch != epoch:
                    raise Dropped()
                if rv < self._first_rv - 1:
                    raise Gone(rv, self._first_rv - 1)
                if rv < self._rv:
                    return self._history[rv + 1 - self._first_rv:]
                left = deadline - time.monotonic()
                if left <= 0:
                    return []
                self.cond.wait(left)

    def compact(self) -> None:
        """Forget the whole event history: a watch from any earlier ``resourceVersion`` gets ``410 Gone``."""
        with self.cond:
            self._history.clear()
            self._first_rv = self._rv + 1

    def drop_watches(self) -> None:
        """End every open watch (a new epoch); :meth:`events_after` of an older epoch raises :class:`Dropped`."""
        with self.cond:
            self.epoch += 1
            self.cond.notify_all()

    # -- internals -----------------------------------------------------------------------------------------------
    def _namespace_of(self, kind: Kind, namespace: str, meta: dict) -> str:
        if not kind.namespaced:
            meta.pop("namespace", None)
            return ""
        ns = namespace or meta.get("namespace") or "default"
        if meta.get("namespace") not in (None, "", ns):
            raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the namespace "
                           "sent on the request")
        return ns

    def _get(self, kind: Kind, namespace: str, name: str) -> dict:
        obj = self._objects[(kind.group, kind.plural)].get((namespace if kind.namespaced else "", name))
        if obj is None:
            raise ApiError(404, "NotFound", f'{kind.qualified} "{name}" not found',
                           {"name": name, "group": kind.group, "kind": kind.plural})
        return obj

    def _check_rv(self, kind: Kind, cur: dict, rv: str | None) -> None:
        if rv and rv != cur["metadata"]["resourceVersion"]:
            name = cur["metadata"]["name"]
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {kind.qualified} "{name}": the object '
                           "has been modified; please apply your changes to the latest version and try again",
                           {"name": name, "group": kind.group, "kind": kind.plural})

    def _invalid_details(self, kind: Kind, name: str, causes: list[schemas.Cause]) -> dict:
        return {"name": name, "group": kind.group, "kind": kind.kind,
                "causes": [{"reason": c.reason, "message": c.message, "field": c.field} for c in causes]}

    def _invalid(self, kind: Kind, name: str, causes: list[schemas.Cause]) -> ApiError:
        title = f"{kind.kind}.{kind.group}" if kind.group else kind.kind
        text = "; ".join(f"{c.field}: {c.message}" for c in causes)
        if len(causes) > 1:
            text = "[" + ", ".join(f"{c.field}: {c.message}" for c in causes) + "]"
        return ApiError(422, "Invalid", f'{title} "{name}" is invalid: {text}',
                        self._invalid_details(kind, name, causes))

    def _check_meta(self, kind: Kind, obj: dict, name: str) -> None:
        causes = []
        if not name:
            causes.append(schemas.Cause("metadata.name", "FieldValueRequired",
                                        "Required value: name or generateName is required"))
        else:
            rule, limit, words = _SUBDOMAIN, 253, "a lowercase RFC 1123 subdomain"
            if kind.plural == "namespaces":
                rule, limit, words = _LABEL, 63, "a lowercase RFC 1123 label"
            elif kind.plural == "services":
                rule, limit, words = _DNS1035, 63, "a DNS-1035 label"
            if not rule.match(name) or len(name) > limit:
                causes.append(schemas.Cause("metadata.name", "FieldValueInvalid",
                                            f'Invalid value: "{name}": {words} must consist of lower case '
                                            f"alphanumeric characters or '-' (at most {limit} characters)"))
        for key, value in ((obj.get("metadata") or {}).get("labels") or {}).items():
            if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
                causes.append(schemas.Cause(f"metadata.labels", "FieldValueInvalid",
                                            f'Invalid value: "{value}": a valid label must be an empty string or '
                                            "consist of alphanumeric characters, '-', '_' or '.' (at most 63)"))
        if causes:
            raise self._invalid(kind, name, causes)

    def _run_check(self, kind: Kind, obj: dict, name: str, check: Check | None) -> None:
        problems = check(obj) if check is not None else []
        if problems:
            causes = []
            for problem in problems:
                where, _, message = problem.partition(": ")
                path = schemas.field_path([int(p) if p.isdigit() else p for p in where.split(".")])
                causes.append(schemas.Cause(path, "FieldValueInvalid", f"Invalid value: {message}"))
            raise self._invalid(kind, name, causes)

    def _validate(self, kind: Kind, obj: dict, name: str) -> None:
        causes = schemas.validate_object(kind.schema, obj)
        if causes:
            raise self._invalid(kind, name, causes)

    def _update(self, kind: Kind, cur: dict, new: dict, subresource: str, validate: bool,
                check: Check | None = None, copy_result: bool = True) -> dict:
        name = cur["metadata"]["name"]
        if subresource == "status":
            new = {**cur, "status": new.get("status")} if "status" in new else dict(cur)
        elif "status" in kind.subresources:
            new = {k: v for k, v in new.items() if k != "status"}
            if "status" in cur:
                new["status"] = cur["status"]
        new["apiVersion"], new["kind"] = kind.api_version, kind.kind
        meta = dict(new.get("metadata") or {})
        for fixed in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "generation"):
            if fixed in cur["metadata"]:
                meta[fixed] = cur["metadata"][fixed]
            else:
                meta.pop(fixed, None)
        meta["resourceVersion"] = cur["metadata"]["resourceVersion"]
        new["metadata"] = meta
        self._run_check(kind, new, name, check)
        if kind.schema is not None and validate:
            new = schemas.prune_object(kind.schema, new)
            self._validate(kind, new, name)
        if validate:
            self._check_meta(kind, new, name)
        out = copy.deepcopy if copy_result else (lambda obj: obj)
        if new == cur:
            return out(cur)  # a no-op write: no new resourceVersion, no event (as the API server)
        if new.get("spec") != cur.get("spec"):
            meta["generation"] = cur["metadata"].get("generation", 1) + 1
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove(kind, new)
            return out(new)
        self._put(kind, (meta.get("namespace", ""), name), new, "MODIFIED", cur)
        return out(new)

    def _put(self, kind: Kind, key: Key, obj: dict, event_type: str, prev: dict | None) -> None:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        resource = (kind.group, kind.plural)
        if event_type == "DELETED":
            self._objects[resource].pop(key, None)
        else:
            self._objects[resource][key] = obj
            uid = obj["metadata"]["uid"]
            self._by_uid[uid] = (resource, key)
            for ref in obj["metadata"].get("ownerReferences") or []:
                self._dependants.setdefault(ref.get("uid"), set()).add(uid)
        self._history.append(Event(self._rv, resource, event_type, obj, prev))
        if len(self._history) > self.history_limit:
            drop = len(self._history) - self.history_limit
            del self._history[:drop]
            self._first_rv += drop
        if not self._history:
            self._first_rv = self._rv + 1
        elif len(self._history) == 1:
            self._first_rv = self._rv
        self.cond.notify_all()
