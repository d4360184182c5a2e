"""tests.kube_schemas: the offline validation every built object goes through refuses what the API server would."""

from __future__ import annotations

import copy
from datetime import datetime, timezone

import pytest

from crater_app.cluster.base import Workload
from crater_app.cluster.kube.job_manifest import volcano_job
from crater_app.cluster.kube.namespace_manifests import project_namespace_objects
from crater_app.cluster.kube.options import KubeOptions
from crater_app.cluster.kube.queue_manifest import project_queues
from crater_app.domain.quota import Quota
from tests import kube_schemas

OPTIONS = KubeOptions(namespace_mode="per-project")
JOB = volcano_job(Workload.single(uid="u-1", name="n", project="p", user="alice", image="busybox",
                                  command=("true",), created_at=datetime(2026, 1, 1, tzinfo=timezone.utc)), OPTIONS)
QUEUE = project_queues("p", Quota(deserved={"cpu": 1000}), OPTIONS)[0]
NAMESPACE, POLICY, _ = project_namespace_objects("p", OPTIONS)


def changed(obj: dict, path: str, value: object) -> dict:
    """A copy of ``obj`` with ``value`` at the dotted ``path`` (list indices as numbers, one past the end appends;
    ``...`` deletes)."""
    out = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node = out
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    key = int(last) if isinstance(node, list) else last
    if value is ...:
        del node[key]
    elif isinstance(node, list) and key == len(node):
        node.append(value)
    else:
        node[key] = value
    return out


CONTAINERS = "spec.tasks.0.template.spec.containers"


@pytest.mark.parametrize("obj", [JOB, QUEUE, NAMESPACE, POLICY])
def test_built_objects_pass(obj):
    assert kube_schemas.errors(obj) == []


@pytest.mark.parametrize(("obj", "expected"), [
    (changed(JOB, "spec.minAvaliable", 1), "'minAvaliable' was unexpected"),  # a misspelt field
    (changed(JOB, f"{CONTAINERS}.0.imagePullPolicyy", "Always"), "'imagePullPolicyy' was unexpected"),
    (changed(JOB, "spec.tasks.0.template.spec.volumes", [{"name": "h", "hostPat": {"path": "/"}}]),
     "'hostPat' was unexpected"),
    (changed(JOB, "spec.maxRetry", -1), "less than the minimum"),
    (changed(JOB, "spec.minAvailable", 2**31), "greater than the maximum"),  # int32
    (changed(JOB, "spec.queue", "Not_A_Queue"), "does not match"),
    (changed(JOB, f"{CONTAINERS}.0.resources", {"limits": {"cpu": "two"}}), "does not match"),
    (changed(JOB, f"{CONTAINERS}.0.name", ...), "'name' is a required property"),
    (changed(JOB, f"{CONTAINERS}.1", {"name": "main", "image": "busybox"}), "Duplicate value {'name': 'main'}"),
    (changed(JOB, "spec.tasks.0.template.metadata.labels", {"crater.io/user": "Zhang San"}), "not a label value"),
    (changed(JOB, "metadata.labels", {"bad key!": "x"}), "not a qualified name"),
    (changed(JOB, "metadata.namespace", ...), "is not a DNS-1123 label"),
    (changed(JOB, "metadata.name", "UPPER"), "is not a DNS-1123 subdomain"),
    (changed(JOB, "apiVersion", "batch.volcano.sh/v9"), "no CRD"),
    (changed(QUEUE, "metadata.namespace", "p"), "cluster-scoped"),
    (changed(QUEUE, "spec.weight", 0), "less than the minimum of 1"),
    (changed(QUEUE, "spec.guarantee", {"resources": {"cpu": "1"}}), "'resources' was unexpected"),
    (changed(NAMESPACE, "spec", {"finalizer": []}), "'finalizer' was unexpected"),
    (changed(NAMESPACE, "metadata.name", "a.b"), "is not a DNS-1123 label"),
    (changed(POLICY, "spec.policyTypes", "Ingress"), "is not of type 'array'"),
    (changed(POLICY, "metadata.annotations", {"a": "x" * (256 * 1024)}), "the limit is 262144"),
])
def test_what_the_api_server_refuses_is_refused(obj, expected):
    problems = kube_schemas.errors(obj)
    assert any(expected in p for p in problems), problems
    with pytest.raises(kube_schemas.InvalidObject):
        kube_schemas.validate(obj)
