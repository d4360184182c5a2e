"""Deletion as the API server and its garbage collector do it, for the mock's :class:`~tests.kube_api.store.Store`
(a mixin using its indexes): ``Foreground`` (the owner marked with ``deletionTimestamp`` and the
``foregroundDeletion`` finalizer until its dependants are gone), ``Background`` (the owner removed, then its
dependants), ``Orphan`` (the dependants' ``ownerReferences`` to it removed), finalizers, graceful pod deletion,
and a Namespace's contents removed with it."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

from tests.kube_api.kinds import Kind

FOREGROUND = "foregroundDeletion"


def now_iso(clock: Callable[[], float]) -> str:
    """``clock()`` as the API writes a timestamp (``2026-12-01T16:00:00Z``)."""
    return datetime.fromtimestamp(clock(), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class GarbageCollection:
    """The deletion half of the store; needs ``kinds``, ``_objects``, ``_by_uid``, ``_dependants``, ``_put``,
    ``_update``, ``clock`` and ``graceful_pods`` from it. Called with the store's lock held."""

    def _delete(self, kind: Kind, cur: dict, propagation: str, grace_seconds: int | None) -> dict:
        meta = cur["metadata"]
        uid = meta["uid"]
        if meta.get("deletionTimestamp"):
            return cur
        if kind.plural == "namespaces":
            for resource, objs in self._objects.items():
                if self.kinds[resource].namespaced:
                    for key in [k for k in objs if k[0] == meta["name"]]:
                        self._remove(self.kinds[resource], objs[key], cascade=False)
            return self._remove(kind, cur)
        graceful = kind.plural == "pods" and self.graceful_pods and grace_seconds != 0
        live_dependants = [d for d in self._dependants.get(uid, ()) if d in self._by_uid]
        if graceful or meta.get("finalizers") or (propagation == "Foreground" and live_dependants):
            finalizers = list(meta.get("finalizers") or [])
            if propagation == "Foreground" and live_dependants and FOREGROUND not in finalizers:
                finalizers.append(FOREGROUND)
            marked = {**cur, "metadata": {**meta, "deletionTimestamp": now_iso(self.clock),
                                          **({"finalizers": finalizers} if finalizers else {}),
                                          **({"deletionGracePeriodSeconds": 30 if grace_seconds is None
                                              else grace_seconds} if graceful else {})}}
            self._put(kind, (meta.get("namespace", ""), meta["name"]), marked, "MODIFIED", cur)
            if propagation == "Foreground":
                self._delete_dependants(uid)
                self._release_foreground(uid)
            return self._current(uid) or marked
        removed = self._remove(kind, cur, orphan=propagation == "Orphan")
        return removed

    def _current(self, uid: str) -> dict | None:
        where = self._by_uid.get(uid)
        return self._objects[where[0]].get(where[1]) if where else None

    def _delete_dependants(self, owner_uid: str) -> None:
        for dep_uid in list(self._dependants.get(owner_uid, ())):
            dep = self._current(dep_uid)
            if dep is not None:
                self._delete(self.kinds[self._by_uid[dep_uid][0]], dep, "Background", None)

    def _release_foreground(self, owner_uid: str) -> None:
        owner = self._current(owner_uid)
        if owner is None or FOREGROUND not in (owner["metadata"].get("finalizers") or []):
            return
        if any(d in self._by_uid for d in self._dependants.get(owner_uid, ())):
            return
        finalizers = [f for f in owner["metadata"]["finalizers"] if f != FOREGROUND]
        kind = self.kinds[self._by_uid[owner_uid][0]]
        self._update(kind, owner, {**owner, "metadata": {**owner["metadata"], "finalizers": finalizers}},
                     "", validate=False)

    def _remove(self, kind: Kind, cur: dict, *, orphan: bool = False, cascade: bool = True) -> dict:
        meta = cur["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        gone = {**cur, "metadata": dict(meta)}
        self._put(kind, key, gone, "DELETED", cur)
        uid = meta["uid"]
        del self._by_uid[uid]
        for ref in meta.get("ownerReferences") or []:
            deps = self._dependants.get(ref.get("uid"))
            if deps is not None:
                deps.discard(uid)
                self._release_foreground(ref.get("uid"))
        if not cascade:
            return gone
        for dep_uid in list(self._dependants.get(uid, ())):
            dep = self._current(dep_uid)
            if dep is None:
                continue
            dep_kind = self.kinds[self._by_uid[dep_uid][0]]
            if orphan:
                refs = [r for r in dep["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
                self._update(dep_kind, dep, {**dep, "metadata": {**dep["metadata"], "ownerReferences": refs}},
                             "", validate=False)
            else:
                self._delete(dep_kind, dep, "Background", None)
        self._dependants.pop(uid, None)
        return gone

