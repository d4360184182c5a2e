"""The Kubernetes backend as the contract suite runs it (``tests/service/test_backend_contract.py``).

Without ``CRATER_TEST_KUBECONFIG``: against the API mock (``kube_api``) and a cluster simulator of one node with
4 × ``nvidia.com/gpu`` (``make_kube_cluster``), the simulated cluster moving one step per :meth:`tick` (Volcano's
controllers and the kubelet act between the backend's rounds, as on a cluster). With it: against that cluster,
in the namespace ``CRATER_TEST_KUBE_NAMESPACE`` (default ``crater-test``, made when missing), every image replaced
by ``CRATER_TEST_KUBE_IMAGE`` (default ``busybox:1.36``: the suite's commands are ``sh -c`` lines), and every Job it
made deleted afterwards; see docs/kubernetes-backend.md for kind + Volcano.
"""

from __future__ import annotations

import dataclasses
import os

from crater_app.cluster.base import Workload
from crater_app.cluster.kube.backend import KubernetesBackend
from crater_app.cluster.kube.calls import ApiError, Calls
from crater_app.cluster.kube.client import check_cluster, make_api_client
from crater_app.cluster.kube.options import KubeOptions
from crater_app.domain.quota import parse_quota

NAMESPACE = "crater-jobs"
#: a quota no contract test reaches (the suite's project is ``default``)
ROOMY = {"capability": {"nvidia.com/gpu": 64, "cpu": "256", "memory": "1Ti"}}
_made: list[KubernetesBackend] = []


class SimulatedClusterBackend(KubernetesBackend):
    """The backend, with the simulated cluster taking one step before each of its rounds."""

    def __init__(self, options: KubeOptions, api_client, simulator) -> None:
        super().__init__(options, api_client)
        self.simulator = simulator

    def tick(self) -> None:
        """One step of the cluster, then the backend's round."""
        self.simulator.step()
        super().tick()


class RealClusterBackend(KubernetesBackend):
    """The backend on a real cluster, every task's image replaced by one that has ``sh``."""

    image = os.environ.get("CRATER_TEST_KUBE_IMAGE", "busybox:1.36")

    def create(self, workload: Workload) -> None:
        """Create ``workload`` with :attr:`image` for every task."""
        tasks = tuple(dataclasses.replace(t, image=self.image) for t in workload.tasks)
        super().create(dataclasses.replace(workload, tasks=tasks))


def _ready(be: KubernetesBackend) -> KubernetesBackend:
    be.adopt()
    be.ensure_queue("default", parse_quota(ROOMY))
    _made.append(be)
    return be


def contract_backend(request):
    """Yield the backend for the contract suite's ``kubernetes`` parameter (see the module)."""
    kubeconfig = os.environ.get("CRATER_TEST_KUBECONFIG")
    if kubeconfig:
        namespace = os.environ.get("CRATER_TEST_KUBE_NAMESPACE", "crater-test")
        api = make_api_client(kubeconfig)
        check_cluster(api)
        calls = Calls(api)
        try:
            calls.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        except ApiError as exc:
            if exc.status != 409:
                raise
        be = _ready(RealClusterBackend(KubeOptions(namespace=namespace), api))
        yield be
        for uid in list(be.records):
            record = be.records[uid]
            try:
                calls.delete("Job", record.namespace, record.name, foreground=False)
            except ApiError:
                pass
        _close_all()
        api.close()
        return
    from tests.kube_api.cluster import NodeSpec

    kube_api = request.getfixturevalue("kube_api")
    simulator = request.getfixturevalue("make_kube_cluster")(nodes=(NodeSpec("node-1"),))
    kube_api.store.create("", "namespaces", "", {"metadata": {"name": NAMESPACE}})
    client = kube_api.api_client()
    yield _ready(SimulatedClusterBackend(KubeOptions(namespace=NAMESPACE), client, simulator))
    _close_all()
    client.close()


def another(backend: KubernetesBackend) -> KubernetesBackend:
    """A second backend on the same cluster (another Crater process), closed with the first."""
    return _ready(KubernetesBackend(backend.options, backend.calls.api))


def _close_all() -> None:
    while _made:
        _made.pop().close()
