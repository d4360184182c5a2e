"""An HTTP-level Kubernetes API mock for tests that run the real ``kubernetes`` client, and a cluster simulator.

- :mod:`.server` - :class:`~.server.KubeApiServer`, the HTTP server (discovery, CRUD, status, 410/409/404/422
  answers, restart and error-injection hooks), with :mod:`.streams` (watches, followed logs), :mod:`.discovery`,
  :mod:`.logs`;
- :mod:`.store` - its state (objects, global ``resourceVersion``, event history), with :mod:`.collection`
  (deletion and garbage collection), :mod:`.patching`, :mod:`.selectors`, :mod:`.schemas` (CRD validation and
  pruning; built-in kinds are checked with ``tests/kube_schemas.py``) and :mod:`.kinds` (what is served);
- :mod:`.cluster` - :class:`~.cluster.ClusterSimulator`, Volcano's controller (:mod:`.volcano`), its gang scheduler
  (:mod:`.scheduling`) and the kubelet (:mod:`.pods`);
- :mod:`.fixtures` - the pytest fixtures (``kube_api``, ``kube_client``, ``kube_cluster``, ``make_kube_cluster``).

``kmock`` (PyPI) was evaluated first: its Kubernetes emulator keeps objects but serves no ``resourceVersion`` (a
constant ``"..."``), no watch history (a watch replays current objects), no bookmarks, no 410, no selectors, no
status subresource or schema validation, so this package serves the API itself.
"""
