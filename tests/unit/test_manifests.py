"""domain.manifests: which documents are Kubernetes manifests, and the project each comes from."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import InvalidInput
from crater_app.domain.manifests import describe_manifest, manifest_name, refuse_manifest, refuse_manifests


@pytest.mark.parametrize(("body", "found"), [
    ({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}, ("Volcano", "Job", "batch.volcano.sh/v1alpha1")),
    ({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue"}, ("Volcano", "Queue", "scheduling.volcano.sh/v1beta1")),
    ({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}, ("Kubeflow", "PyTorchJob", "kubeflow.org/v1")),
    ({"apiVersion": "kubeflow.org/v1", "kind": "MPIJob"}, ("Kubeflow", "MPIJob", "kubeflow.org/v1")),
    ({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob"},
     ("Kubeflow", "TrainJob", "trainer.kubeflow.org/v1alpha1")),
    ({"apiVersion": "batch/v1", "kind": "Job"}, ("Kubernetes", "Job", "batch/v1")),
    ({"apiVersion": "batch/v1", "kind": "CronJob"}, ("Kubernetes", "CronJob", "batch/v1")),
    ({"apiVersion": "v1", "kind": "Pod"}, ("Kubernetes", "Pod", "v1")),
    ({"apiVersion": "apps/v1", "kind": "Deployment"}, ("Kubernetes", "Deployment", "apps/v1")),
    ({"apiVersion": "Apps/v1", "kind": "StatefulSet"}, ("Kubernetes", "StatefulSet", "Apps/v1")),
    ({"apiVersion": "ray.io/v1", "kind": "RayJob"}, (None, "RayJob", "ray.io/v1")),
    ({"apiVersion": "x" * 300 + "/v1", "kind": "K" * 300}, (None, "K" * 100, "x" * 100)),
    ({"apiVersion": "v2", "kind": "Thing"}, ("Kubernetes", "Thing", "v2")),  # no group: the core group
])
def test_manifests_are_recognised_with_their_project(body, found):
    assert describe_manifest({**body, "metadata": {"name": "n"}, "spec": {}}) == found


@pytest.mark.parametrize("body", [
    {"name": "train", "command": ["true"]}, {"name": "train", "command": ["true"], "kind": "interactive"},
    {"kind": "Pod"}, {"kind": "Pod", "command": ["true"]}, {"kind": "batch", "spec": {}}, ["apiVersion", "kind"],
    [{"name": "train"}], [], "apiVersion: v1", None,
])
def test_job_specs_and_other_documents_are_not_manifests(body):
    assert describe_manifest(body) is None
    refuse_manifest(body)  # raises nothing
    refuse_manifests([body])


@pytest.mark.parametrize(("body", "code", "field", "args"), [
    ({"apiVersion": 1, "kind": "Pod"}, "job.manifest_api_version", "apiVersion", {"value": "1"}),
    ({"apiVersion": ["v1"], "kind": "Pod"}, "job.manifest_api_version", "apiVersion", {"value": '["v1"]'}),
    ({"apiVersion": "", "kind": "Pod"}, "job.manifest_api_version", "apiVersion", {"value": '""'}),
    ({"apiVersion": None}, "job.manifest_api_version", "apiVersion", {"value": "null"}),
    ({"apiVersion": "x" * 500}, "job.manifest_kind", "kind", {"api_version": "x" * 100}),
    ({"apiVersion": "v1"}, "job.manifest_kind", "kind", {"api_version": "v1"}),
    ({"apiVersion": "v1", "kind": 3}, "job.manifest_kind", "kind", {"api_version": "v1"}),
    ({"kind": "Pod", "metadata": {"name": "x"}, "spec": {}}, "job.manifest_no_api_version", "apiVersion",
     {"kind": "Pod"}),
    ({"kind": "Deployment", "spec": {}}, "job.manifest_no_api_version", "apiVersion", {"kind": "Deployment"}),
    ([{"apiVersion": "v1", "kind": "Pod"}, {"apiVersion": "ray.io/v1", "kind": "RayJob"}], "job.manifest_list", None,
     {"count": 2, "manifests": ["Kubernetes Pod (v1)", "RayJob (ray.io/v1)"]}),
])
def test_near_misses_say_what_they_are(body, code, field, args):
    """What a person pastes from kubectl: a manifest with a broken apiVersion or kind, or a list of them."""
    with pytest.raises(InvalidInput) as caught:
        refuse_manifest(body)
    assert (caught.value.code, caught.value.field, caught.value.params) == (code, field, args)
    for lang in ("en", "zh-CN"):
        message = caught.value.message_in(lang)
        assert message != code and "/api/v1/openapi.json" in message, message


def test_a_stream_of_documents_with_manifests_is_named():
    documents = [{"apiVersion": "v1", "kind": "Pod"}, {"name": "train", "command": ["true"]},
                 {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}]
    with pytest.raises(InvalidInput) as caught:
        refuse_manifests(documents)
    assert caught.value.code == "job.manifest_documents" and caught.value.field is None
    assert caught.value.params == {"count": 3, "manifests": ["Kubernetes Pod (v1)",
                                                             "Volcano Job (batch.volcano.sh/v1alpha1)"]}
    assert "3 documents" in caught.value.message and "Kubernetes Pod (v1) and Volcano Job" in caught.value.message
    assert "3 个文档" in caught.value.message_in("zh-CN")
    refuse_manifests([{"name": "a"}, {"name": "b"}])  # several job specs: not manifests (the body decoder refuses)
    with pytest.raises(InvalidInput) as caught:
        refuse_manifests([{"apiVersion": "v1", "kind": "Pod"}])  # one document: as refuse_manifest
    assert caught.value.code == "job.manifest"
    assert manifest_name({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}) == "Kubeflow PyTorchJob (kubeflow.org/v1)"
    assert manifest_name({"name": "x"}) is None


def test_the_refusal_names_the_document_and_what_to_send():
    with pytest.raises(InvalidInput) as caught:
        refuse_manifest({"apiVersion": "v1", "kind": "Pod"})
    exc = caught.value
    assert (exc.code, exc.field) == ("job.manifest", "apiVersion")
    assert exc.params == {"product": "Kubernetes", "kind": "Pod", "api_version": "v1"}
    assert "a Kubernetes Pod (v1), not a Crater job spec" in exc.message
    assert "command" in exc.message and "first container" in exc.message and "/api/v1/openapi.json" in exc.message
    assert "Kubernetes Pod（v1），不是 Crater 作业规格" in exc.message_in("zh-CN")
    with pytest.raises(InvalidInput) as caught:
        refuse_manifest({"apiVersion": "ray.io/v1", "kind": "RayJob"})
    assert caught.value.code == "job.manifest_other"
    assert caught.value.params == {"kind": "RayJob", "api_version": "ray.io/v1"}
    assert "manifest of kind RayJob (ray.io/v1)" in caught.value.message


VOLCANO = "batch.volcano.sh/v1alpha1"


@pytest.mark.parametrize("body, crater_kind", [
    ({"apiVersion": VOLCANO, "kind": "Job"}, "batch"),
    ({"apiVersion": VOLCANO, "kind": "Job", "spec": {"plugins": {"svc": [], "env": []}}}, "batch"),
    ({"apiVersion": VOLCANO, "kind": "Job", "spec": {"plugins": {"pytorch": ["--master=master"]}}}, "pytorch"),
    ({"apiVersion": VOLCANO, "kind": "Job", "spec": {"plugins": {"mpi": [], "ssh": [], "svc": []}}}, "mpi"),
    ({"apiVersion": VOLCANO, "kind": "Job", "spec": {"plugins": ["pytorch"]}}, "batch"),
    ({"apiVersion": VOLCANO, "kind": "Job", "spec": "x"}, "batch"),
    ({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}, "pytorch"),
    ({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob"}, "mpi"),
])
def test_a_gang_manifest_points_at_kind_and_tasks(body, crater_kind):
    with pytest.raises(InvalidInput) as caught:
        refuse_manifest(body)
    exc = caught.value
    assert (exc.code, exc.field, exc.params["crater_kind"]) == ("job.manifest_gang", "apiVersion", crater_kind)
    for text in (exc.message, exc.message_in("zh-CN")):
        assert f"kind: {crater_kind}" in text and "tasks" in text and "docs/job-tasks.md" in text
    assert "first container" not in exc.message and "第一个容器" not in exc.message_in("zh-CN")


@pytest.mark.parametrize("body", [
    {"apiVersion": "batch/v1", "kind": "Job"},  # a Kubernetes Job: one pod template, the single-task advice
    {"apiVersion": "kubeflow.org/v1", "kind": "TFJob"},
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue"},
])
def test_other_manifests_keep_the_single_task_advice(body):
    with pytest.raises(InvalidInput) as caught:
        refuse_manifest(body)
    assert caught.value.code == "job.manifest" and "first container" in caught.value.message
