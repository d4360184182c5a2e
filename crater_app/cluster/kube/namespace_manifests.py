"""A project's Namespace and the NetworkPolicies of a namespace Crater runs jobs in, as dicts.

Ingress to job pods (Kubernetes NetworkPolicies add up: a connection is let in when any policy selecting the pod
lets it in):

- :func:`default_deny_policy` selects every pod of the namespace and lets in only pods of the same namespace: a
  project's replicas reach each other (DDP rendezvous, MPI ssh), nothing from other projects' namespaces or outside
  the cluster does. Volcano's ``svc`` plugin adds a policy of its own per Job (only that Job's pods), which narrows
  nothing here (policies only add).
- :func:`sessions_policy` selects the pods of interactive workloads (``crater.io/kind: interactive``) and lets in
  pods of Crater's own namespace (``options.crater_namespace``, matched by ``kubernetes.io/metadata.name``, the
  label Kubernetes sets on every namespace): Crater proxies a user's session to it.

Egress is not restricted (images, datasets and package mirrors are outside the cluster). With per-project
namespaces both policies go into each project's namespace (:func:`project_namespace_objects`); with one shared
namespace the backend may apply :func:`sessions_policy` there (interactive pods with the ``svc`` plugin are
otherwise reachable only from their own Job) and leave the default deny to the cluster's administrator.
"""

from __future__ import annotations

from crater_app.cluster.kube.object_names import (ANNOTATION_PROJECT, LABEL_KIND, LABEL_PROJECT, base_labels,
                                                  namespace_of, project_slug)
from crater_app.cluster.kube.options import KubeOptions

DEFAULT_DENY = "crater-default-deny"
SESSIONS = "crater-sessions"
#: the label Kubernetes puts on every Namespace with its own name (since 1.21)
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def project_namespace(project: str, options: KubeOptions) -> dict:
    """The Namespace of ``project`` (per-project mode): name
    :func:`~crater_app.cluster.kube.object_names.namespace_of`, labels ``crater.io/project`` (the slug) and
    ``app.kubernetes.io/managed-by``, the raw project name in an annotation.

    Raises:
        ValueError: namespaces are shared (``options.namespace_mode`` ``shared``): Crater makes no Namespace then.
    """
    if not options.per_project:
        raise ValueError("the namespace is shared: Crater makes no Namespace per project")
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": namespace_of(project, options),
                         "labels": {**base_labels(options), LABEL_PROJECT: project_slug(project)},
                         "annotations": {ANNOTATION_PROJECT: project}}}


def _policy(name: str, namespace: str, options: KubeOptions, pod_selector: dict, peer: dict) -> dict:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": namespace, "labels": base_labels(options)},
            "spec": {"podSelector": pod_selector, "policyTypes": ["Ingress"], "ingress": [{"from": [peer]}]}}


def default_deny_policy(namespace: str, options: KubeOptions) -> dict:
    """``crater-default-deny`` in ``namespace``: every pod's ingress denied except from pods of ``namespace``."""
    return _policy(DEFAULT_DENY, namespace, options, {}, {"podSelector": {}})


def sessions_policy(namespace: str, options: KubeOptions) -> dict:
    """``crater-sessions`` in ``namespace``: interactive pods (``crater.io/kind: interactive``) let in every pod of
    ``options.crater_namespace``."""
    return _policy(SESSIONS, namespace, options, {"matchLabels": {LABEL_KIND: "interactive"}},
                   {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: options.crater_namespace}}})


def project_namespace_objects(project: str, options: KubeOptions) -> list[dict]:
    """What a project's namespace needs, in the order to apply it: the Namespace (:func:`project_namespace`),
    :func:`default_deny_policy` and :func:`sessions_policy`.

    Raises:
        ValueError: see :func:`project_namespace`.
    """
    namespace = project_namespace(project, options)
    name = namespace["metadata"]["name"]
    return [namespace, default_deny_policy(name, options), sessions_policy(name, options)]
