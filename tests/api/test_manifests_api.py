"""A Kubernetes or Volcano manifest posted to /api/v1/jobs gets an error that says what it is and what Crater
expects (not "name is required"), in JSON and YAML, in both languages, and writes nothing."""

from __future__ import annotations

import json

from tests.api.conftest import assert_error
from tests.helpers import counts

CONTAINER = {"name": "main", "image": "pytorch/pytorch:2.4.0", "command": ["python", "train.py"],
             "resources": {"limits": {"nvidia.com/gpu": 1}}}
POD = {"containers": [CONTAINER], "restartPolicy": "Never"}
MANIFESTS = [
    ("volcano-job", {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "train"},
                     "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": "default",
                              "tasks": [{"replicas": 1, "name": "worker", "template": {"spec": POD}}]}},
     "a Volcano Job (batch.volcano.sh/v1alpha1)"),
    ("kubeflow-pytorchjob", {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "train"},
                             "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": POD}}}}},
     "a Kubeflow PyTorchJob (kubeflow.org/v1)"),
    ("batch-job", {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train"},
                   "spec": {"template": {"spec": POD}}}, "a Kubernetes Job (batch/v1)"),
    ("pod", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train"}, "spec": POD}, "a Kubernetes Pod (v1)"),
    ("deployment", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "serve"},
                    "spec": {"replicas": 1, "template": {"spec": POD}}}, "a Kubernetes Deployment (apps/v1)"),
    ("other", {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "train"}, "spec": {}},
     "manifest of kind RayJob (ray.io/v1)"),
]


def test_a_manifest_is_named_and_refused(api):
    before = counts(api.world.ctx)
    for case, manifest, words in MANIFESTS:
        r = api.client.post("/api/v1/jobs", json=manifest, headers=api.auth("alice"))
        error = assert_error(r, 422, "invalid", "apiVersion", words, "Crater job spec", "command")
        expected = {"other": "job.manifest_other", "volcano-job": "job.manifest_gang",
                    "kubeflow-pytorchjob": "job.manifest_gang"}.get(case, "job.manifest")
        assert error["code"] == expected, case
        if expected == "job.manifest_gang":  # a gang: kind + tasks, not the first container
            assert "tasks" in error["message"] and "first container" not in error["message"], case
            assert error["args"]["crater_kind"] == {"volcano-job": "batch", "kubeflow-pytorchjob": "pytorch"}[case]
        assert error["args"]["kind"] == manifest["kind"] and error["args"]["api_version"] == manifest["apiVersion"]
        assert "name is required" not in error["message"] and "unknown field" not in error["message"]
    assert counts(api.world.ctx) == before


def test_a_yaml_manifest_in_chinese(api):
    body = "\n".join([
        "apiVersion: batch.volcano.sh/v1alpha1", "kind: Job", "metadata:", "  name: train", "spec:", "  tasks: []", ""])
    r = api.client.post("/api/v1/jobs", content=body.encode(), headers={
        **api.auth("alice"), "Content-Type": "application/yaml", "Accept-Language": "zh-CN"})
    error = assert_error(r, 422, "invalid", "apiVersion", code="job.manifest_gang")
    assert error["args"] == {"product": "Volcano", "kind": "Job", "api_version": "batch.volcano.sh/v1alpha1",
                             "crater_kind": "batch"}
    assert error["message"].startswith("请求体是一个 Volcano Job（batch.volcano.sh/v1alpha1），不是 Crater 作业规格")
    assert "kind: batch" in error["message"] and "docs/job-tasks.md" in error["message"]


def test_a_spec_with_a_kind_but_no_api_version_is_a_job_spec(api):
    """``kind`` is also a job spec field (batch or interactive): only ``apiVersion`` + ``kind`` is a manifest."""
    r = api.client.post("/api/v1/jobs", content=json.dumps({"name": "notebook", "command": ["true"],
                                                            "kind": "interactive"}),
                        headers={**api.auth("alice"), "Content-Type": "application/json"})
    assert r.status_code == 201 and r.json()["kind"] == "interactive"
    r = api.client.post("/api/v1/jobs", json={"kind": "Pod", "command": ["true"]}, headers=api.auth("alice"))
    assert_error(r, 422, "invalid", "name")


def _yaml(api, text: str, lang: str = "en"):
    return api.client.post("/api/v1/jobs", content=text.encode(), headers={
        **api.auth("alice"), "Content-Type": "application/yaml", "Accept-Language": lang})


def test_what_people_paste_from_kubectl_is_named(api):
    """A stream of manifests, a list of them, a kind without its apiVersion, an apiVersion that is not a string:
    each gets what it is and what Crater expects, never "name is required" or "another document"."""
    before = counts(api.world.ctx)
    cases = [
        ("apiVersion: v1\nkind: Pod\n---\napiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n", "job.manifest_documents",
         None, {"count": 2, "manifests": ["Kubernetes Pod (v1)", "Volcano Job (batch.volcano.sh/v1alpha1)"]},
         "2 documents"),
        ("- apiVersion: v1\n  kind: Pod\n- apiVersion: v1\n  kind: Service\n", "job.manifest_list", None,
         {"count": 2, "manifests": ["Kubernetes Pod (v1)", "Kubernetes Service (v1)"]}, "list of 2"),
        ("kind: Pod\nmetadata: {name: x}\nspec: {}\n", "job.manifest_no_api_version", "apiVersion", {"kind": "Pod"},
         "kind Pod without its apiVersion"),
        ("apiVersion: 1\nkind: Pod\n", "job.manifest_api_version", "apiVersion", {"value": "1"}, "apiVersion (1)"),
        ("apiVersion: v1\nmetadata: {name: x}\n", "job.manifest_kind", "kind", {"api_version": "v1"}, "no kind"),
    ]
    for text, code, field, args, words in cases:
        for lang in ("en", "zh-CN"):
            error = assert_error(_yaml(api, text, lang), 422, "invalid", field, code=code)
            assert error["args"] == args, error
            assert "openapi.json" in error["message"] and "required" not in error["message"]
            if lang == "en":
                assert words in error["message"] and "Crater job spec" in error["message"], error["message"]
            else:
                assert "Crater 作业规格" in error["message"], error["message"]
    assert counts(api.world.ctx) == before
