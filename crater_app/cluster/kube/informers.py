"""The Kubernetes backend's five kinds watched by :class:`~.reflector.Reflector` s, behind the interface of
:class:`.watching.Watches` (``on_event(kind, type, obj)``, ``on_relist(kind, objects)``, ``start``, ``stop``,
``wait_synced``, ``lists``), so the backend can use either.

What each kind is listed as (the same selection as :func:`.watching.sources`): Volcano Jobs with the
``crater.io/job-uid`` label (in the shared namespace, or cluster-wide when every project has its own namespace);
every pod and every node, cluster-wide; Crater's Queues (``app.kubernetes.io/managed-by=crater``); the events of the
jobs' namespace (all namespaces in per-project mode).

Differences from :class:`.watching.Watches`: :meth:`ReflectorWatches.stop` ends an open watch at once (not at its
next event); the reflectors keep their own caches (``reflectors[kind].items()``), diff a re-list against them
(their ``relist`` events are not passed on: ``on_relist`` gets the whole list, as with ``Watches``); each kind's
``generation`` counts its lists.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from kubernetes import client

from crater_app.cluster.kube.object_names import LABEL_MANAGED_BY, MANAGED_BY
from crater_app.cluster.kube.options import KubeOptions
from crater_app.cluster.kube.reflector import RELISTED, Reflector, ReflectorEvent
from crater_app.domain.naming import LABEL_JOB_UID

JOBS, PODS, NODES, QUEUES, EVENTS = "jobs", "pods", "nodes", "queues", "events"
#: seconds a watch stays open before the server is asked to end it (it is opened again at once)
WATCH_TIMEOUT_S = 60
#: how long :meth:`ReflectorWatches.wait_synced` waits by default, seconds
SYNC_WAIT_S = 10.0


def list_functions(api_client, options: KubeOptions) -> dict[str, tuple[Callable, str]]:
    """kind -> (the client's list call with its positional arguments bound, label selector)."""
    core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
    ns = None if options.per_project else options.namespace
    jobs = (partial(custom.list_namespaced_custom_object, "batch.volcano.sh", "v1alpha1", ns, "jobs") if ns
            else partial(custom.list_cluster_custom_object, "batch.volcano.sh", "v1alpha1", "jobs"))
    return {
        JOBS: (jobs, LABEL_JOB_UID),
        PODS: (core.list_pod_for_all_namespaces, ""),
        NODES: (core.list_node, ""),
        QUEUES: (partial(custom.list_cluster_custom_object, "scheduling.volcano.sh", "v1beta1", "queues"),
                 f"{LABEL_MANAGED_BY}={MANAGED_BY}"),
        EVENTS: (partial(core.list_namespaced_event, ns) if ns else core.list_event_for_all_namespaces, ""),
    }


class ReflectorWatches:
    """One :class:`Reflector` per kind (see the module); ``on_event(kind, type, obj)`` for each watch event and
    ``on_relist(kind, objects)`` after each (re)list are called from the reflectors' threads."""

    def __init__(self, api_client, options: KubeOptions, on_event: Callable[[str, str, dict], None],
                 on_relist: Callable[[str, list[dict]], None], *, watch_timeout_s: int = WATCH_TIMEOUT_S) -> None:
        self._on_event, self._on_relist = on_event, on_relist
        self.reflectors = {
            kind: Reflector(kind, fn, on_event=self._forward, label_selector=selector, watch_timeout_s=watch_timeout_s)
            for kind, (fn, selector) in list_functions(api_client, options).items()}

    def _forward(self, event: ReflectorEvent) -> None:
        if event.type == RELISTED:
            self._on_relist(event.kind, self.reflectors[event.kind].items())
        elif not event.relist:
            self._on_event(event.kind, event.type, event.obj)

    @property
    def lists(self) -> dict[str, int]:
        """How many times each kind was listed (1 after the first list; more after a 410)."""
        return {kind: r.generation for kind, r in self.reflectors.items()}

    def start(self) -> None:
        """Start every reflector."""
        for reflector in self.reflectors.values():
            reflector.start()

    def stop(self) -> None:
        """Stop every reflector (open watches are closed at once)."""
        for reflector in self.reflectors.values():
            reflector.stop()

    def wait_synced(self, timeout: float = SYNC_WAIT_S) -> bool:
        """Wait until every kind was listed once (at most ``timeout`` seconds each); whether they all were."""
        return all(r.wait_synced(timeout) for r in self.reflectors.values())
