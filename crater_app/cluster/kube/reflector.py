"""A list-then-watch cache of one kind of Kubernetes object (the client-go informer's reflector role).

A :class:`Reflector` runs one daemon thread: it lists the kind (pages of ``page_size``), then watches from the
list's ``resourceVersion`` with bookmarks, keeps the objects in a dict keyed ``namespace/name`` (``name`` for a
cluster-scoped kind) and reports every applied change to ``on_event`` in order:

- a watch that ends normally (the server's ``timeoutSeconds``) or whose connection drops resumes from the last
  ``resourceVersion`` seen (an event's or a ``BOOKMARK``'s); nothing is lost while the server still has history;
- ``410 Gone`` (the ``resourceVersion`` is older than the server's history: etcd compaction, a restarted API
  server) re-lists; the re-list is diffed against the cache, so every object that appeared, changed or vanished
  meanwhile is reported (``relist=True``; the intermediate states in between are not recoverable), then a
  ``RELISTED`` event says the cache is whole again and :attr:`Reflector.generation` has grown by one;
- other errors (5xx, refused or dropped connections, a watch that ends within a second without events) wait
  before the next try, ``backoff_initial_s`` doubling up to ``backoff_max_s``, reset by a successful list or
  event.

A fresh reflector (a restarted Crater) starts with an empty cache, so its first list reports every object as
``ADDED`` with ``relist=True`` and generation 1: the backend treats it as a re-list.
Objects are the API's JSON as dicts (never the client's models); treat them as read-only.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from kubernetes import watch
from kubernetes.client.rest import ApiException

log = logging.getLogger(__name__)

ADDED, MODIFIED, DELETED, RELISTED = "ADDED", "MODIFIED", "DELETED", "RELISTED"


@dataclass(frozen=True)
class ReflectorEvent:
    """One change applied to the cache: ``type`` (``ADDED``, ``MODIFIED``, ``DELETED``, or ``RELISTED`` after a
    (re)list with ``key == ""`` and ``obj == {}``), ``kind`` (the reflector's name), ``key``
    (``namespace/name``), ``obj`` (the object after the change; for ``DELETED`` its last state),
    ``resource_version`` (the object's, or the list's for ``RELISTED``), ``generation`` (of the list this
    cache descends from) and ``relist`` (true when found by diffing a list rather than from a watch event)."""

    type: str
    kind: str
    key: str
    obj: dict = field(repr=False)
    resource_version: str
    generation: int
    relist: bool = False


class _RawWatch(watch.Watch):
    """``kubernetes.watch.Watch`` whose events keep the API's JSON: one ``json.loads`` per event, no round trip
    through the client's models (``raw_object`` and ``object`` are the same dict)."""

    def unmarshal_event(self, data: str, return_type):  # noqa: ANN001, ANN201 - the base class's signature
        if not data or data.isspace():
            return None
        try:
            event = json.loads(data)
        except json.JSONDecodeError:
            return None
        event["raw_object"] = obj = event.get("object") or {}
        if event.get("type") != "ERROR" and isinstance(obj, dict):
            self.resource_version = (obj.get("metadata") or {}).get("resourceVersion", self.resource_version)
        return event


def object_key(obj: dict) -> str:
    """``namespace/name``, or ``name`` for a cluster-scoped object."""
    meta = obj.get("metadata") or {}
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta.get("name", "")


def _rv(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("resourceVersion", "")


class Reflector:
    """Cache of one kind. ``list_fn`` is the client's list call for it, with its positional arguments bound
    (``functools.partial(CoreV1Api(c).list_namespaced_pod, "ns")``,
    ``partial(CustomObjectsApi(c).list_cluster_custom_object, "batch.volcano.sh", "v1alpha1", "jobs")``): it is
    called with ``_preload_content=False`` for lists and through ``kubernetes.watch.Watch().stream`` for watches.
    ``on_event(ReflectorEvent)`` runs on the reflector's thread after the cache is updated (an exception it
    raises is logged and the reflector goes on). Times in seconds."""

    def __init__(self, name: str, list_fn: Callable[..., Any], *,
                 on_event: Callable[[ReflectorEvent], None] | None = None,
                 label_selector: str = "", field_selector: str = "", page_size: int = 500,
                 watch_timeout_s: int = 300, request_timeout_s: float = 60.0,
                 backoff_initial_s: float = 0.1, backoff_max_s: float = 30.0) -> None:
        self.name = name
        self._list_fn = list_fn
        self._on_event = on_event
        self._selectors = {k: v for k, v in (("label_selector", label_selector),
                                             ("field_selector", field_selector)) if v}
        self.page_size, self.watch_timeout_s, self.request_timeout_s = page_size, watch_timeout_s, request_timeout_s
        self.backoff_initial_s, self.backoff_max_s = backoff_initial_s, backoff_max_s
        self._lock = threading.Lock()
        self._cache: dict[str, dict] = {}
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch: _RawWatch | None = None
        #: number of completed (re)lists: 1 after the first list; +1 on every re-list
        self.generation = 0
        #: the last ``resourceVersion`` seen (a list's, an event's or a bookmark's)
        self.resource_version = ""
        #: counters: ``lists``, ``watches`` (watch requests made), ``expired`` (410s), ``errors``, ``events``,
        #: ``bookmarks``
        self.stats = {"lists": 0, "watches": 0, "expired": 0, "errors": 0, "events": 0, "bookmarks": 0}
        #: the last error, as text ("" when none yet)
        self.last_error = ""
        #: the wait before the next try after an error, seconds (0 while healthy)
        self.backoff_s = 0.0

    # -- public --------------------------------------------------------------------------------------------------
    def start(self) -> "Reflector":
        """Start the thread (list, then watch); returns self. Raises ``RuntimeError`` if already started."""
        if self._thread is not None:
            raise RuntimeError(f"reflector {self.name} already started")
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"reflector-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread (the open watch is closed at once) and wait up to ``timeout`` seconds for it."""
        self._stop.set()
        current = self._watch
        if current is not None:
            current.stop()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the first list to complete; True when it has."""
        return self._synced.wait(timeout)

    @property
    def synced(self) -> bool:
        """True once the first list completed."""
        return self._synced.is_set()

    def items(self) -> list[dict]:
        """A snapshot of the cached objects."""
        with self._lock:
            return list(self._cache.values())

    def get(self, key: str) -> dict | None:
        """The cached object under ``namespace/name`` (or ``name``), or ``None``."""
        with self._lock:
            return self._cache.get(key)

    def __len__(self) -> int:
        return len(self._cache)

    # -- the thread ----------------------------------------------------------------------------------------------
    def _run(self) -> None:
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                    self.backoff_s = 0.0
                normal = self._watch_once()
                if self._stop.is_set():
                    break
                if normal:
                    continue  # a normal end: resume from the last resourceVersion at once
                self._fail("watch ended early without events")
            except ApiException as exc:
                if exc.status == 410:
                    self.stats["expired"] += 1
                    need_list = True  # re-list at once: waiting would only lose more history
                    continue
                self._fail(f"{exc.status} {exc.reason}")
            except Exception as exc:  # noqa: BLE001 - any transport error: back off and try again
                if self._stop.is_set():
                    break
                self._fail(f"{type(exc).__name__}: {exc}")
            if self.backoff_s:
                self._stop.wait(self.backoff_s)

    def _fail(self, what: str) -> None:
        self.stats["errors"] += 1
        self.last_error = what
        self.backoff_s = min(self.backoff_max_s, self.backoff_s * 2 if self.backoff_s else self.backoff_initial_s)
        log.warning("reflector %s: %s; retrying in %.1f s", self.name, what, self.backoff_s)

    def _list(self) -> None:
        fresh: dict[str, dict] = {}
        token, list_rv = None, ""
        while True:
            kwargs = dict(self._selectors, limit=self.page_size, _preload_content=False,
                          _request_timeout=self.request_timeout_s)
            if token:
                kwargs["_continue"] = token
            resp = self._list_fn(**kwargs)
            try:
                page = json.loads(resp.data)
            finally:
                resp.release_conn()
            for obj in page.get("items") or []:
                fresh[object_key(obj)] = obj
            meta = page.get("metadata") or {}
            list_rv = list_rv or meta.get("resourceVersion", "")
            token = meta.get("continue")
            if not token or self._stop.is_set():
                break
        with self._lock:
            old, self._cache = self._cache, fresh
            self.generation += 1
            self.resource_version = list_rv
            generation = self.generation
        self.stats["lists"] += 1
        for key, obj in fresh.items():
            before = old.get(key)
            if before is None:
                self._emit(ADDED, key, obj, generation, True)
            elif _rv(before) != _rv(obj):
                self._emit(MODIFIED, key, obj, generation, True)
        for key, obj in old.items():
            if key not in fresh:
                self._emit(DELETED, key, obj, generation, True)
        self._emit(RELISTED, "", {}, generation, True, list_rv)
        self._synced.set()

    def _watch_once(self) -> bool:
        """One watch request; True when it delivered events or lasted as a watch lasts (not ended at once)."""
        self._watch = _RawWatch()
        self.stats["watches"] += 1
        delivered, began = False, time.monotonic()
        try:
            stream = self._watch.stream(
                self._list_fn, resource_version=self.resource_version, allow_watch_bookmarks=True,
                timeout_seconds=self.watch_timeout_s, _request_timeout=self.watch_timeout_s + self.request_timeout_s,
                **self._selectors)
            for event in stream:
                if self._stop.is_set():
                    break
                self._apply(event)
                delivered = True
                self.backoff_s = 0.0
        finally:
            self._watch = None
        return delivered or time.monotonic() - began >= min(1.0, self.watch_timeout_s)

    def _apply(self, event: dict) -> None:
        kind, obj = event.get("type"), event.get("raw_object") or {}
        rv = _rv(obj)
        if kind == "BOOKMARK":
            self.stats["bookmarks"] += 1
            self.resource_version = rv or self.resource_version
            return
        if kind not in (ADDED, MODIFIED, DELETED):
            log.warning("reflector %s: ignoring watch event of type %r", self.name, kind)
            return
        key = object_key(obj)
        with self._lock:
            if kind == DELETED:
                self._cache.pop(key, None)
            else:
                self._cache[key] = obj
            self.resource_version = rv or self.resource_version
            generation = self.generation
        self.stats["events"] += 1
        self._emit(kind, key, obj, generation, False)

    def _emit(self, kind: str, key: str, obj: dict, generation: int, relist: bool, rv: str | None = None) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(ReflectorEvent(kind, self.name, key, obj, _rv(obj) if rv is None else rv,
                                          generation, relist))
        except Exception:  # noqa: BLE001 - a consumer's bug must not stop the cache
            log.exception("reflector %s: on_event failed for %s %s", self.name, kind, key)
