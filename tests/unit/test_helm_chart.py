"""The Helm chart (deploy/helm/crater), rendered by the real Helm engine (``tests/helm_chart.py``) and checked
object by object: every rendered object against the Kubernetes schemas (``kubernetes-validate``, strict: unknown
fields are errors), then probes, settings Crater reads, databases, ingress, persistence, ``helm test`` and the
values reference. RBAC, security contexts and secrets: ``test_helm_chart_access.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from crater_app.settings import Settings
from tests.helm_chart import (
    CHART, EXTERNAL, INGRESS_TLS, JOBS_NS, RELEASE_NS, RENDER, VALUE_SETS, by_kind, crater_container, env_names,
    helm_python, one, pod_specs, render, render_error, render_files,
)

K8S_VERSION = kubernetes_validate.latest_version()


# ------------------------------------------------------------------------------------------------------------------
# Every object is a valid Kubernetes object


@pytest.mark.parametrize("case", sorted(VALUE_SETS))
def test_every_rendered_object_passes_the_kubernetes_schemas_strictly(case):
    objects = render(VALUE_SETS[case])
    assert objects
    for obj in objects:
        try:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{case}: {obj['kind']} {obj['metadata']['name']}: {exc.message} at {list(exc.path)}")


def test_helm_lint_strict_finds_nothing_above_info():
    for values in ({}, VALUE_SETS["per-project"], VALUE_SETS["external-services-ingress"]):
        done = subprocess.run([helm_python(), str(RENDER), str(CHART), "--lint", "--values", json.dumps(values)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["errors"] == [] and not [m for m in report["messages"] if m["severity"] >= 2], report


def test_the_chart_renders_its_notes():
    notes = render_files()["crater/templates/NOTES.txt"]
    assert "port-forward service/crater 3000:3000" in notes
    assert "admin-password" in notes


# ------------------------------------------------------------------------------------------------------------------
# The Deployment


def test_probes_ask_healthz_on_the_http_port():
    container = crater_container(render())
    assert container["ports"] == [{"name": "http", "containerPort": 3000, "protocol": "TCP"}]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}, probe
    # the startup probe covers the console's compile at start (minutes, not the liveness probe's seconds)
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 120


def test_every_container_requests_resources():
    for name, spec in pod_specs(render()):
        for container in spec["containers"]:
            requests = container.get("resources", {}).get("requests", {})
            assert {"cpu", "memory"} <= set(requests), f"{name}/{container['name']} requests {requests}"


def test_crater_runs_with_the_kubernetes_backend_in_the_jobs_namespace():
    objects = render()
    data = one(objects, "ConfigMap", "crater")["data"]
    assert data["CRATER_BACKEND"] == "kubernetes"
    assert data["CRATER_KUBE_NAMESPACE"] == JOBS_NS
    assert data["CRATER_KUBE_CRATER_NAMESPACE"] == RELEASE_NS
    spec = one(objects, "Deployment", "crater")["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "crater"
    assert spec["automountServiceAccountToken"] is True  # in-cluster config needs the token
    assert one(objects, "ServiceAccount", "crater")["metadata"]["namespace"] == RELEASE_NS


@pytest.mark.parametrize("case", sorted(VALUE_SETS))
def test_every_crater_setting_the_chart_sets_is_one_crater_reads(case):
    fields = {name.upper() for name in Settings.model_fields}
    names = {n for n in env_names(render(VALUE_SETS[case])) if n.startswith("CRATER_")}
    unknown = sorted(n for n in names if n.removeprefix("CRATER_") not in fields)
    assert not unknown, f"the chart sets settings crater_app/settings.py does not have: {unknown}"


def test_optional_kube_settings_are_set_only_when_given():
    defaults = one(render(), "ConfigMap")["data"]
    optional = ("CRATER_KUBE_ACCELERATORS", "CRATER_KUBE_MODEL_LABELS", "CRATER_KUBE_SERVICE_ACCOUNT",
                "CRATER_KUBE_IMAGE_PULL_POLICY", "CRATER_KUBE_IMAGE_PULL_SECRETS", "CRATER_KUBE_PRIORITY_CLASS")
    assert not [n for n in optional if n in defaults]  # Crater's own defaults apply
    data = one(render({"kube": {
        "accelerators": ["nvidia.com/gpu", "example.com/npu"],
        "modelLabels": {"example.com/npu": "example.com/npu.model", "amd.com/gpu": "amd.com/gpu.family"},
        "jobServiceAccount": "jobs", "imagePullPolicy": "Always", "imagePullSecrets": ["a", "b"],
        "priorityClass": "batch-low", "schedulerName": "volcano-2"}}), "ConfigMap")["data"]
    assert data["CRATER_KUBE_ACCELERATORS"] == "nvidia.com/gpu,example.com/npu"
    assert data["CRATER_KUBE_MODEL_LABELS"] == "amd.com/gpu=amd.com/gpu.family,example.com/npu=example.com/npu.model"
    assert data["CRATER_KUBE_SERVICE_ACCOUNT"] == "jobs"
    assert data["CRATER_KUBE_IMAGE_PULL_POLICY"] == "Always"
    assert data["CRATER_KUBE_IMAGE_PULL_SECRETS"] == "a,b"
    assert data["CRATER_KUBE_PRIORITY_CLASS"] == "batch-low"
    assert data["CRATER_KUBE_SCHEDULER"] == "volcano-2"


def test_crater_settings_parse_the_chart_configmap(monkeypatch):
    data = one(render({"crater": {"workers": 3, "signupEnabled": True}}), "ConfigMap", "crater")["data"]
    for name in [n for n in os.environ if n.startswith("CRATER_")]:
        monkeypatch.delenv(name)
    for name, value in data.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.backend == "kubernetes"
    assert settings.data_dir == Path("/var/lib/crater")
    assert settings.workers == 3
    assert settings.signup_enabled is True
    assert settings.port == 3000


def test_extra_env_goes_into_the_configmap_but_cannot_replace_the_chart_own():
    data = one(render({"env": {"CRATER_BILLING_ENABLED": True}}), "ConfigMap", "crater")["data"]
    assert data["CRATER_BILLING_ENABLED"] == "true"
    assert "env.CRATER_BACKEND is set by the chart" in render_error({"env": {"CRATER_BACKEND": "local"}})
    assert "env.CRATER_DATABASE_URL is set by the chart" in render_error({"env": {"CRATER_DATABASE_URL": "x"}})


def test_configmap_changes_roll_the_pods():
    def checksum(values):
        return one(render(values), "Deployment", "crater")["spec"]["template"]["metadata"]["annotations"][
            "checksum/config"]
    assert checksum({}) != checksum({"crater": {"workers": 2}})


# ------------------------------------------------------------------------------------------------------------------
# Databases, Redis and secrets


def test_bundled_postgresql_and_redis_by_default():
    objects = render()
    secret = one(objects, "Secret", "crater")["stringData"]
    postgres = one(objects, "StatefulSet", "crater-postgresql")
    [pg] = postgres["spec"]["template"]["spec"]["containers"]
    assert pg["image"].startswith("postgres:")
    assert one(objects, "Service", "crater-postgresql")["spec"]["ports"][0]["port"] == 5432
    assert secret["database-url"] == (
        f"postgresql://crater:{secret['postgres-password']}@crater-postgresql:5432/crater")
    assert len(secret["postgres-password"]) == 32
    [redis] = one(objects, "Deployment", "crater-redis")["spec"]["template"]["spec"]["containers"]
    assert redis["image"].startswith("redis:")
    assert "--requirepass" in redis["command"][-1]
    assert secret["redis-url"] == f"redis://:{secret['redis-password']}@crater-redis:6379/0"
    env = {e["name"]: e for e in crater_container(objects)["env"]}
    assert env["CRATER_DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {"name": "crater", "key": "database-url"}
    assert env["REFLEX_REDIS_URL"]["valueFrom"]["secretKeyRef"] == {"name": "crater", "key": "redis-url"}


def test_external_postgresql_and_redis_replace_the_bundled_ones():
    objects = render(EXTERNAL)
    assert not by_kind(objects, "StatefulSet")
    assert [o["metadata"]["name"] for o in by_kind(objects, "Deployment")] == ["crater"]
    assert {o["metadata"]["name"] for o in by_kind(objects, "Service")} == {"crater"}
    secret = one(objects, "Secret", "crater")["stringData"]
    assert secret["database-url"] == EXTERNAL["externalDatabase"]["url"]
    assert secret["redis-url"] == EXTERNAL["externalRedis"]["url"]
    assert "postgres-password" not in secret and "redis-password" not in secret


def test_no_database_means_sqlite_on_the_data_volume_and_one_replica():
    objects = render({"postgresql": {"enabled": False}, "redis": {"enabled": False}})
    names = {e["name"] for e in crater_container(objects)["env"]}
    assert "CRATER_DATABASE_URL" not in names and "REFLEX_REDIS_URL" not in names
    assert "database-url" not in one(objects, "Secret")["stringData"]
    assert "needs PostgreSQL" in render_error({"postgresql": {"enabled": False}, "replicaCount": 2})


@pytest.mark.parametrize("values, message", [
    ({"externalDatabase": {"url": "postgresql://x@db/crater"}},
     "postgresql.enabled and externalDatabase.url are exclusive"),
    ({"externalRedis": {"url": "redis://r:6379/0"}}, "redis.enabled and externalRedis.url are exclusive"),
    ({"kube": {"namespaceMode": "per-user"}}, "at '/kube/namespaceMode': value must be one of 'shared', 'per-project'"),
    ({"ingres": {"enabled": True}}, "additional properties 'ingres' not allowed"),
    ({"persistence": {"size": "10 GB"}}, "at '/persistence/size'"),
    ({"externalDatabase": {"url": "mysql://db/crater"}, "postgresql": {"enabled": False}},
     "at '/externalDatabase/url'"),
    ({"replicaCount": 2}, "ReadWriteOnce data volume"),
])
def test_values_that_cannot_work_together_are_refused(values, message):
    assert message in render_error(values)


# ------------------------------------------------------------------------------------------------------------------
# Ingress


def test_no_ingress_by_default():
    assert not by_kind(render(), "Ingress")
    assert "CRATER_PUBLIC_URLS" not in one(render(), "ConfigMap")["data"]


def test_ingress_with_class_and_tls_routes_everything_to_the_service_and_sets_the_public_url():
    objects = render(INGRESS_TLS)
    ingress = one(objects, "Ingress", "crater")
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == [{"secretName": "crater-tls", "hosts": ["crater.example.com"]}]
    [rule] = ingress["spec"]["rules"]
    assert rule["host"] == "crater.example.com"
    assert rule["http"]["paths"] == [{"path": "/", "pathType": "Prefix",
                                      "backend": {"service": {"name": "crater", "port": {"name": "http"}}}}]
    assert one(objects, "ConfigMap")["data"]["CRATER_PUBLIC_URLS"] == "https://crater.example.com"


def test_ingress_without_tls_gives_an_http_public_url_and_explicit_urls_win():
    plain = {"ingress": {"enabled": True, "hosts": ["a.example.com", "b.example.com"]}}
    assert one(render(plain), "ConfigMap")["data"]["CRATER_PUBLIC_URLS"] == "http://a.example.com,http://b.example.com"
    explicit = {**plain, "crater": {"publicUrls": ["https://x.example.com"]}}
    assert one(render(explicit), "ConfigMap")["data"]["CRATER_PUBLIC_URLS"] == "https://x.example.com"
    assert "ingressClassName" not in one(render(plain), "Ingress")["spec"]


# ------------------------------------------------------------------------------------------------------------------
# Persistence and spaces


def test_data_volume_is_a_claim_mounted_at_the_data_dir():
    objects = render()
    claim = one(objects, "PersistentVolumeClaim", "crater-data")
    assert claim["metadata"]["namespace"] == RELEASE_NS
    assert claim["spec"]["resources"]["requests"]["storage"] == "10Gi"
    spec = one(objects, "Deployment", "crater")["spec"]["template"]["spec"]
    [data] = [v for v in spec["volumes"] if v["name"] == "data"]
    assert data["persistentVolumeClaim"] == {"claimName": "crater-data"}
    mounts = {m["name"]: m["mountPath"] for m in crater_container(objects)["volumeMounts"]}
    assert mounts["data"] == one(objects, "ConfigMap")["data"]["CRATER_DATA_DIR"] == "/var/lib/crater"


def test_an_existing_data_claim_is_used_and_none_is_made():
    objects = render({"persistence": {"existingClaim": "my-data"}})
    assert "crater-data" not in [o["metadata"]["name"] for o in by_kind(objects, "PersistentVolumeClaim")]
    spec = one(objects, "Deployment", "crater")["spec"]["template"]["spec"]
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "my-data"}} in spec["volumes"]


def test_spaces_claim_is_made_in_the_jobs_namespace_and_named_to_crater():
    objects = render({"kube": {"spaces": {"claimName": "team-spaces", "storageClass": "cephfs"}}})
    claim = one(objects, "PersistentVolumeClaim", "team-spaces")
    assert claim["metadata"]["namespace"] == JOBS_NS
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert claim["spec"]["storageClassName"] == "cephfs"
    assert one(objects, "Namespace", JOBS_NS)
    assert one(objects, "ConfigMap")["data"]["CRATER_KUBE_SPACES_CLAIM"] == "team-spaces"


# ------------------------------------------------------------------------------------------------------------------
# helm test


def test_helm_test_pod_asks_the_service_for_healthz():
    pod = one(render(), "Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert pod["spec"]["restartPolicy"] == "Never"
    [container] = pod["spec"]["containers"]
    assert container["command"][0] == "curl" and "--fail" in container["command"]
    assert container["args"] == ["http://crater.crater.svc:3000/healthz"]


# ------------------------------------------------------------------------------------------------------------------
# The values reference


def _leaf_paths(values: dict, prefix: str = "") -> set[str]:
    paths = set()
    for key, value in values.items():
        path = f"{prefix}{key}"
        paths |= _leaf_paths(value, f"{path}.") if isinstance(value, dict) and value else {path}
    return paths


def test_the_readme_documents_every_value_and_only_real_ones():
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    readme = (CHART / "README.md").read_text().split("## Values", 1)[1].split("\n## ", 1)[0]
    documented = {line.split("`")[1] for line in readme.splitlines() if line.startswith("| `")}
    missing = sorted(p for p in _leaf_paths(values)
                     if not any(p == d or p.startswith(d + ".") for d in documented))
    assert not missing, f"values without a row in deploy/helm/crater/README.md: {missing}"

    def exists(path: str) -> bool:
        node = values
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return True
    assert not [d for d in documented if not exists(d)], "README rows for values that do not exist"
