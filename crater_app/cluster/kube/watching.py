"""The backend's five list-then-watch caches (:class:`~crater_app.cluster.kube.reflector.Reflector`, one thread
each), and what each lists:

- Volcano Jobs with the ``crater.io/job-uid`` label (in the shared namespace, or cluster-wide when every project
  has its own);
- every pod, cluster-wide (the inventory counts what every pod requests), and every node;
- Crater's Queues (``app.kubernetes.io/managed-by=crater``); events of the jobs' namespace(s).

A reflector resumes a watch from its last ``resourceVersion``, re-lists on ``410 Gone`` and reports what the re-list
found changed (deletions included) as events, so the backend sees one stream of ``ADDED``/``MODIFIED``/``DELETED``
per kind whatever happened to the connection.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from kubernetes import client

from crater_app.cluster.kube import cache as kinds
from crater_app.cluster.kube.object_names import LABEL_MANAGED_BY, MANAGED_BY
from crater_app.cluster.kube.options import KubeOptions
from crater_app.cluster.kube.reflector import RELISTED, Reflector, ReflectorEvent
from crater_app.domain.naming import LABEL_JOB_UID

#: how long :meth:`Watches.wait_synced` waits, seconds
SYNC_WAIT_S = 10.0
#: seconds a watch stays open before the server ends it (it is opened again at once)
WATCH_TIMEOUT_S = 60


def sources(api_client, options: KubeOptions) -> dict[str, tuple[Callable, str]]:
    """kind -> (the client's list call, label selector) as the module says."""
    core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
    ns = None if options.per_project else options.namespace
    jobs = (partial(custom.list_namespaced_custom_object, "batch.volcano.sh", "v1alpha1", ns, "jobs") if ns
            else partial(custom.list_cluster_custom_object, "batch.volcano.sh", "v1alpha1", "jobs"))
    events = partial(core.list_namespaced_event, ns) if ns else core.list_event_for_all_namespaces
    return {
        kinds.JOBS: (jobs, LABEL_JOB_UID),
        kinds.PODS: (core.list_pod_for_all_namespaces, ""),
        kinds.NODES: (core.list_node, ""),
        kinds.QUEUES: (partial(custom.list_cluster_custom_object, "scheduling.volcano.sh", "v1beta1", "queues"),
                       f"{LABEL_MANAGED_BY}={MANAGED_BY}"),
        kinds.EVENTS: (events, ""),
    }


class Watches:
    """The reflectors (see the module); ``on_event(kind, type, obj)`` is called from their threads for every change,
    those a re-list found included."""

    def __init__(self, api_client, options: KubeOptions, on_event: Callable[[str, str, dict], None]) -> None:
        self._on_event = on_event
        self.reflectors = {kind: Reflector(kind, list_fn, on_event=self._event, label_selector=selector,
                                           watch_timeout_s=WATCH_TIMEOUT_S)
                           for kind, (list_fn, selector) in sources(api_client, options).items()}

    @property
    def lists(self) -> dict[str, int]:
        """kind -> how many times it was listed (1 after the first list; more after a ``410``)."""
        return {kind: r.generation for kind, r in self.reflectors.items()}

    def _event(self, event: ReflectorEvent) -> None:
        if event.type != RELISTED:
            self._on_event(event.kind, event.type, event.obj)

    def start(self) -> None:
        """Start every reflector."""
        for r in self.reflectors.values():
            r.start()

    def stop(self) -> None:
        """Stop every reflector (their open watches are closed at once)."""
        for r in self.reflectors.values():
            r.stop(timeout=1.0)

    def wait_synced(self, timeout: float = SYNC_WAIT_S) -> bool:
        """Wait until every kind was listed once (at most ``timeout`` seconds each); whether they all were."""
        return all(r.wait_synced(timeout) for r in self.reflectors.values())
