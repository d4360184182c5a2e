"""The Kubernetes API client Crater uses, and the start-up check of the cluster it points at.

Configuration as every Kubernetes client finds it (kubectl's rules, ``kubernetes.config``): the file named by
``KUBECONFIG`` (the standard variable; read by the client itself) or ``~/.kube/config``, else the in-cluster service
account (``KUBERNETES_SERVICE_HOST`` and the token mounted at
``/var/run/secrets/kubernetes.io/serviceaccount``). ``kubeconfig`` given explicitly wins (the tests'
``CRATER_TEST_KUBECONFIG``).
"""

from __future__ import annotations

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError

from crater_app.domain.errors import CraterError

#: the API groups Crater needs besides the core ones: Volcano's Jobs and Queues (its CRDs)
REQUIRED_GROUPS = (("batch.volcano.sh", "v1alpha1", "jobs"), ("scheduling.volcano.sh", "v1beta1", "queues"))
#: seconds a start-up check waits for the API server
CHECK_TIMEOUT_S = 10


class ClusterUnavailable(CraterError):
    """The cluster Crater is configured for cannot be used: no configuration, unreachable, Volcano missing, or
    forbidden. HTTP 503 (raised at start-up)."""

    kind = "unavailable"
    http_status = 503


def make_api_client(kubeconfig: str | None = None, context: str | None = None) -> client.ApiClient:
    """An :class:`kubernetes.client.ApiClient` from ``kubeconfig`` (a path), else ``KUBECONFIG`` /
    ``~/.kube/config``, else the in-cluster configuration.

    Raises:
        ClusterUnavailable: ``kube.config`` (``error``) when none of them is usable.
    """
    try:
        if kubeconfig:
            return config.new_client_from_config(config_file=kubeconfig, context=context)
        try:
            return config.new_client_from_config(context=context)
        except (ConfigException, FileNotFoundError, TypeError):
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)
            return client.ApiClient(configuration)
    except (ConfigException, FileNotFoundError, OSError, TypeError, ValueError) as exc:
        raise ClusterUnavailable("kube.config", error=str(exc) or type(exc).__name__) from None


def server_of(api: client.ApiClient) -> str:
    """The API server's URL ``api`` talks to."""
    return str(api.configuration.host)


def check_cluster(api: client.ApiClient) -> None:
    """Check that the API server answers and serves Volcano's Jobs and Queues (one discovery request per group).

    Raises:
        ClusterUnavailable: ``kube.unreachable`` (``server``, ``error``), ``kube.crds_missing`` (``server``,
            ``missing``: the ``<plural>.<group>/<version>`` not served), ``kube.forbidden`` (``server``, ``verb``,
            ``resource``).
    """
    server = server_of(api)
    custom = client.CustomObjectsApi(api)
    missing = []
    for group, version, plural in REQUIRED_GROUPS:
        try:
            found = custom.get_api_resources(group, version, _request_timeout=CHECK_TIMEOUT_S)
        except ApiException as exc:
            if exc.status == 404:
                missing.append(f"{plural}.{group}/{version}")
                continue
            if exc.status in (401, 403):
                raise ClusterUnavailable("kube.forbidden", server=server, verb="get", resource=f"{group}/{version}"
                                         ) from None
            raise ClusterUnavailable("kube.unreachable", server=server, error=f"HTTP {exc.status} {exc.reason}"
                                     ) from None
        except (HTTPError, OSError) as exc:
            raise ClusterUnavailable("kube.unreachable", server=server, error=str(exc)[:200]) from None
        names = {r.name for r in (found.resources or [])} if found is not None else set()
        if plural not in names:
            missing.append(f"{plural}.{group}/{version}")
    if missing:
        raise ClusterUnavailable("kube.crds_missing", server=server, missing=missing)
