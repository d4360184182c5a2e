"""pytest fixtures for the Kubernetes API mock (loaded by ``tests/conftest.py`` as a plugin).

- ``kube_api``: a started :class:`~tests.kube_api.server.KubeApiServer` (its ``store``, ``url``, ``restart()``,
  ``fail_next()``), stopped after the test;
- ``kube_client``: a ``kubernetes.client.ApiClient`` whose ``Configuration.host`` is the mock;
- ``kube_cluster``: a :class:`~tests.kube_api.cluster.ClusterSimulator` on the mock's store (two nodes of 4 ×
  ``nvidia.com/gpu`` ``NVIDIA-A100-SXM4-80GB``, the ``default`` Queue), real time; call ``kube_cluster.step()``
  from the test's wait loop (or ``kube_cluster.start()`` to step in the background);
- ``make_kube_cluster(nodes=..., clock=...)``: the same with other nodes or a
  :class:`~tests.kube_api.cluster.ManualClock`.
"""

from __future__ import annotations

import pytest

from tests.kube_api.cluster import ClusterSimulator, NodeSpec
from tests.kube_api.server import KubeApiServer


@pytest.fixture
def kube_api():
    """A started Kubernetes API mock on 127.0.0.1 (random port)."""
    server = KubeApiServer(bookmark_interval=0.2).start()
    yield server
    server.stop()


@pytest.fixture
def kube_client(kube_api):
    """A ``kubernetes.client.ApiClient`` for the mock."""
    client = kube_api.api_client()
    yield client
    client.close()


@pytest.fixture
def make_kube_cluster(kube_api):
    """``make(nodes=(NodeSpec, ...), clock=callable, **kwargs) -> ClusterSimulator`` on the mock's store."""
    made: list[ClusterSimulator] = []

    def make(nodes: tuple[NodeSpec, ...] = (NodeSpec("node-1"), NodeSpec("node-2")), **kwargs) -> ClusterSimulator:
        sim = ClusterSimulator(kube_api.store, nodes, **kwargs)
        made.append(sim)
        return sim
    yield make
    for sim in made:
        sim.stop()


@pytest.fixture
def kube_cluster(make_kube_cluster):
    """Volcano + kubelet for the mock: two 4-GPU A100 nodes, the ``default`` Queue, real time."""
    return make_kube_cluster()
