"""The backend's list-then-watch loops, one thread per kind (:data:`.cache.KINDS`): list, hand the whole list to
``on_relist``, then watch from the list's ``resourceVersion`` (with bookmarks, so a quiet watch still moves it on)
and hand each event to ``on_event``. A watch the server ends is opened again from the last ``resourceVersion``
seen; ``410 Gone`` (the version is too old: an API server restart, a compacted history) starts over with a list;
any other failure waits (doubling from 0.5 s up to 30 s) and tries again. What a kind is listed as:

- Volcano Jobs with the ``crater.io/job-uid`` label (in the shared namespace, or cluster-wide when every project
  has its own);
- every pod, cluster-wide (the inventory counts what every pod requests), and every node;
- Crater's Queues (``app.kubernetes.io/managed-by=crater``); events of the jobs' namespace(s).
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from crater_app.cluster.kube import cache as kinds
from crater_app.cluster.kube.calls import ApiError, Calls, path_of
from crater_app.cluster.kube.object_names import LABEL_MANAGED_BY, MANAGED_BY
from crater_app.cluster.kube.options import KubeOptions
from crater_app.domain.naming import LABEL_JOB_UID

log = logging.getLogger(__name__)
#: seconds a watch stays open before the server is asked to end it (it is opened again at once)
WATCH_TIMEOUT_S = 60
#: seconds between tries after a failure: doubling, from the first to the last
RETRY_S = (0.5, 30.0)
#: how long :meth:`Watches.wait_synced` waits, seconds
SYNC_WAIT_S = 10.0


def sources(options: KubeOptions) -> dict[str, tuple[str, list[tuple[str, object]]]]:
    """kind -> (REST path, list/watch query) as the module says."""
    ns = None if options.per_project else options.namespace
    return {
        kinds.JOBS: (path_of("Job", ns), [("labelSelector", LABEL_JOB_UID)]),
        kinds.PODS: (path_of("Pod", None), []),
        kinds.NODES: ("/api/v1/nodes", []),
        kinds.QUEUES: (path_of("Queue", None), [("labelSelector", f"{LABEL_MANAGED_BY}={MANAGED_BY}")]),
        kinds.EVENTS: (f"/api/v1/namespaces/{ns}/events" if ns else "/api/v1/events", []),
    }


class Watches:
    """The loops (see the module); ``on_event(kind, type, obj)`` and ``on_relist(kind, objects)`` are called from
    their threads."""

    def __init__(self, api_client, options: KubeOptions, on_event: Callable[[str, str, dict], None],
                 on_relist: Callable[[str, list[dict]], None]) -> None:
        self._calls = Calls(api_client)
        self._sources = sources(options)
        self._on_event, self._on_relist = on_event, on_relist
        self._stop = threading.Event()
        self._synced = {kind: threading.Event() for kind in self._sources}
        self._threads: list[threading.Thread] = []
        #: how many times each kind was listed (1 after the first list; more after a 410)
        self.lists = dict.fromkeys(self._sources, 0)

    def start(self) -> None:
        """Start one daemon thread per kind."""
        for kind in self._sources:
            t = threading.Thread(target=self._run, args=(kind,), name=f"crater-kube-watch-{kind}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        """Ask the loops to end (each ends at its next event, bookmark or watch timeout)."""
        self._stop.set()

    def wait_synced(self, timeout: float = SYNC_WAIT_S) -> bool:
        """Wait until every kind was listed once (at most ``timeout`` seconds); whether they all were."""
        return all(event.wait(timeout) for event in self._synced.values())

    def _run(self, kind: str) -> None:
        path, query = self._sources[kind]
        version: str | None = None
        delay = RETRY_S[0]
        while not self._stop.is_set():
            try:
                if version is None:
                    listed = self._calls.request("GET", path, query=query)
                    self.lists[kind] += 1
                    self._on_relist(kind, list(listed.get("items") or []))
                    version = (listed.get("metadata") or {}).get("resourceVersion") or ""
                    self._synced[kind].set()
                version = self._watch(kind, path, query, version)
                delay = RETRY_S[0]
            except ApiError as exc:
                if exc.status == 410:
                    version = None
                    continue
                log.warning("watch of %s failed (%s); again in %.1f s", kind, exc, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, RETRY_S[1])
            except Exception:  # a bug in a handler must not end the loop for good
                log.exception("watch of %s: unexpected error", kind)
                self._stop.wait(delay)
                delay = min(delay * 2, RETRY_S[1])

    def _watch(self, kind: str, path: str, query: list, version: str) -> str | None:
        """One watch from ``version``; the version to go on from (``None``: list again)."""
        q = [*query, ("resourceVersion", version), ("allowWatchBookmarks", "true"),
             ("timeoutSeconds", WATCH_TIMEOUT_S)]
        for event in self._calls.watch(path, q, timeout=WATCH_TIMEOUT_S + 10):
            if self._stop.is_set():
                return version
            kind_of_event, obj = event.get("type"), event.get("object") or {}
            if kind_of_event == "ERROR":
                if obj.get("code") == 410:
                    return None
                raise ApiError(int(obj.get("code") or 0), str(obj.get("reason") or ""), str(obj.get("message") or ""))
            version = (obj.get("metadata") or {}).get("resourceVersion") or version
            if kind_of_event in (kinds.ADDED, kinds.MODIFIED, kinds.DELETED):
                self._on_event(kind, kind_of_event, obj)
        return version
