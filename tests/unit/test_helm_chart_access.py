"""The Helm chart's access: RBAC grants exactly what Crater's Kubernetes backend uses (no wildcard, per-project
grants only in per-project mode), every pod non-root without privilege escalation, and secrets from the chart's
Secret or an existing one. Rendering: ``tests/helm_chart.py``.
"""

from __future__ import annotations

import pytest

from tests.helm_chart import (
    JOBS_NS, RELEASE_NS, VALUE_SETS, by_kind, crater_container, one, pod_specs, render, secret_refs,
)

#: what Crater's Kubernetes backend does, per (API group, resource): the only grants the chart may give
CLUSTER_RULES = {
    ("", "nodes"): {"get", "list", "watch"},
    ("", "pods"): {"get", "list", "watch"},  # the inventory counts every pod's requests, in every namespace
    ("scheduling.volcano.sh", "queues"): {"create", "get", "list", "watch", "update", "patch", "delete"},
}
NAMESPACED_RULES = {
    ("batch.volcano.sh", "jobs"): {"create", "get", "list", "watch", "delete", "patch"},
    ("scheduling.volcano.sh", "podgroups"): {"get", "list", "watch"},
    ("", "pods/log"): {"get"},
    ("", "events"): {"get", "list", "watch"},
    ("", "services"): {"create", "get", "list", "watch", "delete"},
}
PER_PROJECT_RULES = {
    ("", "namespaces"): {"create", "get", "list", "watch"},
    ("networking.k8s.io", "networkpolicies"): {"create", "get", "list", "watch", "patch"},
}


def grants(role: dict) -> dict[tuple[str, str], set[str]]:
    """(API group, resource) -> verbs of a Role or ClusterRole; a resource granted twice fails."""
    out: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        assert set(rule) <= {"apiGroups", "resources", "verbs"}, f"unexpected rule fields: {rule}"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                assert (group, resource) not in out, f"{group}/{resource} granted twice in {role['metadata']['name']}"
                out[(group, resource)] = set(rule["verbs"])
    return out


# ------------------------------------------------------------------------------------------------------------------
# RBAC: exactly what Crater uses


def test_shared_namespace_rbac_is_cluster_kinds_cluster_wide_and_the_rest_in_the_jobs_namespace():
    objects = render()
    cluster_role = one(objects, "ClusterRole")
    assert grants(cluster_role) == CLUSTER_RULES
    role = one(objects, "Role")
    assert role["metadata"]["namespace"] == JOBS_NS
    assert grants(role) == NAMESPACED_RULES
    binding = one(objects, "RoleBinding")
    assert binding["metadata"]["namespace"] == JOBS_NS
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": role["metadata"]["name"]}
    cluster_binding = one(objects, "ClusterRoleBinding")
    assert cluster_binding["roleRef"]["name"] == cluster_role["metadata"]["name"]
    for b in (binding, cluster_binding):
        assert b["subjects"] == [{"kind": "ServiceAccount", "name": "crater", "namespace": RELEASE_NS}]


def test_per_project_namespaces_grant_namespaces_and_network_policies_cluster_wide():
    objects = render({"kube": {"namespaceMode": "per-project"}})
    assert grants(one(objects, "ClusterRole")) == {**CLUSTER_RULES, **NAMESPACED_RULES, **PER_PROJECT_RULES}
    assert not by_kind(objects, "Role") and not by_kind(objects, "RoleBinding")
    assert not by_kind(objects, "Namespace")  # Crater creates the project namespaces itself
    assert one(objects, "ConfigMap")["data"]["CRATER_KUBE_NAMESPACE_MODE"] == "per-project"


@pytest.mark.parametrize("case", sorted(VALUE_SETS))
def test_no_wildcard_and_no_kind_beyond_the_list(case):
    allowed = {**CLUSTER_RULES, **NAMESPACED_RULES, **PER_PROJECT_RULES}
    for role in by_kind(render(VALUE_SETS[case]), "Role") + by_kind(render(VALUE_SETS[case]), "ClusterRole"):
        for rule in role["rules"]:
            assert "*" not in rule["apiGroups"] + rule["resources"] + rule["verbs"], rule
        for key, verbs in grants(role).items():
            assert key in allowed and verbs <= allowed[key], f"{role['kind']} grants {key}: {verbs}"


def test_cluster_scoped_names_carry_the_release_namespace():
    objects = render()
    assert one(objects, "ClusterRole")["metadata"]["name"] == "crater-crater"
    assert one(objects, "ClusterRoleBinding")["metadata"]["name"] == "crater-crater"


def test_rbac_off_renders_no_role():
    objects = render({"rbac": {"create": False}})
    assert not [o for o in objects if o["kind"] in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")]


def test_given_passwords_are_used():
    secret = one(render({"crater": {"adminPassword": "adm-1", "secretKey": "key-1"},
                         "postgresql": {"password": "pg-1"}}), "Secret")["stringData"]
    assert secret["admin-password"] == "adm-1"
    assert secret["secret-key"] == "key-1"
    assert secret["database-url"] == "postgresql://crater:pg-1@crater-postgresql:5432/crater"


def test_an_existing_secret_replaces_the_chart_secret_everywhere():
    objects = render({"existingSecret": "crater-settings"})
    assert not by_kind(objects, "Secret")
    refs = secret_refs(objects)
    assert refs and set(refs) == {"crater-settings"}
    keys = {e["name"]: e["valueFrom"]["secretKeyRef"]["key"] for e in crater_container(objects)["env"]}
    assert keys == {"CRATER_ADMIN_PASSWORD": "admin-password", "CRATER_SECRET_KEY": "secret-key",
                    "CRATER_DATABASE_URL": "database-url", "REFLEX_REDIS_URL": "redis-url"}


# ------------------------------------------------------------------------------------------------------------------
# Security contexts


@pytest.mark.parametrize("case", sorted(VALUE_SETS))
def test_every_pod_runs_as_non_root_without_privilege_escalation(case):
    for name, spec in pod_specs(render(VALUE_SETS[case])):
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["runAsUser"] != 0, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC"), name
        assert not [v for v in spec.get("volumes", []) if "hostPath" in v], name
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, f"{name}/{container['name']}"
            assert context.get("privileged", False) is False, f"{name}/{container['name']}"
            assert context["capabilities"] == {"drop": ["ALL"]}, f"{name}/{container['name']}"


def test_only_crater_mounts_a_service_account_token():
    for name, spec in pod_specs(render()):
        assert spec["automountServiceAccountToken"] is (name == "crater"), name
