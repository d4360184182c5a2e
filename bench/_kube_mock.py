"""The Kubernetes API mock (``tests/kube_api``) in a process of its own, for ``bench/reconcile.py``: its CPU and
memory are not Crater's. Prints ``{"url": ...}`` on stdout, then answers one JSON line per command read from stdin:

- ``{"op": "load", "path": FILE, "nodes": N, "gpus_per_node": G}``: N Ready nodes of G ``nvidia.com/gpu``
  (``node-<i>``), and the Volcano Jobs in FILE (a JSON list) stored as a created Job is (status Pending), each with
  its pods (Pending, as Volcano makes them);
- ``{"op": "run"}`` / ``{"op": "finish"}``: every Job's pods bound (the nodes filled in order) and Running and the
  Job Running / every pod
  Succeeded (exit 0) and the Job Completed - the writes Volcano and the kubelet make, one object at a time;
- ``{"op": "restart", "lose_history": true}``: an API server restart (watches dropped; with ``lose_history``, 410
  for every version a client has seen);
- ``{"op": "quit"}``.
Each answer has ``seconds`` (time the writes took) and ``writes`` (objects written).
"""

from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.kube_api import pods as P  # noqa: E402
from tests.kube_api.server import KubeApiServer  # noqa: E402
from tests.kube_api.store import Store  # noqa: E402

VC = ("batch.volcano.sh", "jobs")


def main() -> None:
    server = KubeApiServer(Store(namespaces=("default", "crater-jobs")), bookmark_interval=5.0).start()
    store = server.store
    jobs: list[tuple[str, str]] = []
    pods: list[tuple[str, str]] = []
    nodes: list[str] = []
    print(json.dumps({"url": server.url}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        t0, rv0 = time.perf_counter(), store.resource_version
        if cmd["op"] == "load":
            gpus = int(cmd.get("gpus_per_node", 8))
            for i in range(int(cmd.get("nodes", 1))):
                capacity = {"cpu": "128", "memory": "1024Gi", "nvidia.com/gpu": str(gpus), "pods": "110"}
                store.create("", "nodes", "", {"metadata": {"name": f"node-{i}", "labels": {
                    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}}, "status": {
                    "allocatable": capacity, "capacity": capacity,
                    "conditions": [{"type": "Ready", "status": "True"}]}}, keep_status=True, validate=False)
                nodes.append(f"node-{i}")
            with open(cmd["path"]) as f:
                for body in json.load(f):
                    job = store.create(*VC, body["metadata"]["namespace"], body, validate=False)
                    store.set_status(*VC, job["metadata"]["namespace"], job["metadata"]["name"],
                                     {"state": {"phase": "Pending", "lastTransitionTime": P.iso(time.time())},
                                      "minAvailable": 1, "pending": 1})
                    jobs.append((job["metadata"]["namespace"], job["metadata"]["name"]))
                    for task in job["spec"]["tasks"]:
                        for index in range(int(task.get("replicas", 1))):
                            pod = store.create("", "pods", job["metadata"]["namespace"], P.make_pod(job, task, index),
                                               validate=False)
                            pods.append((pod["metadata"]["namespace"], pod["metadata"]["name"]))
        elif cmd["op"] == "run":
            now = time.time()
            per_node = max(1, -(-len(pods) // len(nodes)))
            for i, (ns, name) in enumerate(pods):
                node = nodes[i // per_node]
                bound = store.update("", "pods", ns, name, lambda p: {**p, "spec": {**p["spec"], "nodeName": node}})
                store.set_status("", "pods", ns, name, P.running_status(bound, now))
            for ns, name in jobs:
                store.set_status(*VC, ns, name, {"state": {"phase": "Running", "lastTransitionTime": P.iso(now)},
                                                 "minAvailable": 1, "running": 1})
        elif cmd["op"] == "finish":
            now = time.time()
            for ns, name in pods:
                pod = store.peek("", "pods", ns, name)
                store.set_status("", "pods", ns, name, P.terminated_status(pod, 0, P.iso(now), now))
            for ns, name in jobs:
                store.set_status(*VC, ns, name, {"state": {"phase": "Completed", "lastTransitionTime": P.iso(now)},
                                                 "minAvailable": 1, "succeeded": 1})
        elif cmd["op"] == "restart":
            # a write, then the history forgotten: a restarted API server's watch cache starts after every
            # resourceVersion a client has seen, so every watch gets 410 Gone and lists again
            store.create("", "configmaps", "default", {"metadata": {"generateName": "restart-"}}, validate=False)
            server.restart(lose_history=bool(cmd.get("lose_history")))
        elif cmd["op"] == "quit":
            break
        print(json.dumps({"seconds": time.perf_counter() - t0, "writes": store.resource_version - rv0}), flush=True)
    server.stop()


if __name__ == "__main__":
    main()
