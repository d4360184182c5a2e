"""The calls the Kubernetes backend makes to the API server, on plain dicts (the API's JSON).

Requests go through the ``kubernetes`` client's :class:`~kubernetes.client.ApiClient` (its configuration:
server, TLS, credentials) as raw REST calls, so objects stay the JSON the builders made and the reflectors cache
(no round trip through the client's models, which drop unknown fields of custom resources). Every failure is an
:class:`ApiError` with the HTTP status (``0`` when no answer came) and whether retrying may help.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from kubernetes.client import ApiClient
from urllib3.exceptions import HTTPError

#: (group, version, plural) of the custom resources Crater makes
VOLCANO_JOBS = ("batch.volcano.sh", "v1alpha1", "jobs")
VOLCANO_QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")
#: seconds a call waits for the API server
TIMEOUT_S = 30
MERGE_PATCH = "application/merge-patch+json"
_CORE = {"Service": "services", "Pod": "pods", "Namespace": "namespaces", "ConfigMap": "configmaps"}
_GROUPS = {"NetworkPolicy": ("networking.k8s.io", "v1", "networkpolicies"), "Job": VOLCANO_JOBS,
           "Queue": VOLCANO_QUEUES, "PodGroup": ("scheduling.volcano.sh", "v1beta1", "podgroups")}
_CLUSTER_SCOPED = {"Namespace", "Queue"}


class ApiError(Exception):
    """A failed API call: ``status`` (HTTP, 0 without an answer), ``reason`` (the Status object's ``reason``, e.g.
    ``AlreadyExists``, ``Invalid``, ``Gone``) and ``message``. ``transient``: no answer, 429 or 5xx."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else message)
        self.status, self.reason, self.message = status, reason, message

    @property
    def transient(self) -> bool:
        """Whether the same call may succeed later without a change (no answer, throttled, server error)."""
        return self.status == 0 or self.status == 429 or self.status >= 500


def path_of(kind: str, namespace: str | None, name: str | None = None, api_version: str = "") -> str:
    """The REST path of ``kind`` objects (``/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/name``).

    Raises:
        KeyError: a kind this module does not know.
    """
    if kind in _CORE and (not api_version or api_version == "v1"):
        base = "/api/v1"
        plural = _CORE[kind]
    else:
        group, version, plural = _GROUPS[kind]
        base = f"/apis/{group}/{version}"
    if namespace and kind not in _CLUSTER_SCOPED:
        base += f"/namespaces/{quote(namespace, safe='')}"
    path = f"{base}/{plural}"
    return f"{path}/{quote(name, safe='')}" if name else path


class Calls:
    """Raw REST calls through ``api`` (thread-safe: the client's connection pool is)."""

    def __init__(self, api: ApiClient) -> None:
        self.api = api

    def request(self, method: str, path: str, body: object = None, query: list[tuple[str, object]] | None = None,
                content_type: str = "application/json", timeout: float = TIMEOUT_S, raw: bool = False):
        """One call; the answer's JSON (or its text when ``raw``).

        Raises:
            ApiError: a status of 400 or more, or no answer.
        """
        headers = {"Accept": "application/json, */*", "Content-Type": content_type}
        try:
            _, url, headers, serialized, _ = self.api.param_serialize(
                method=method, resource_path=path, query_params=query or [], header_params=headers,
                body=body, auth_settings=["BearerToken"])
            response = self.api.call_api(method, url, header_params=headers, body=serialized,
                                         _request_timeout=timeout)
            data = response.read()
        except (HTTPError, OSError) as exc:
            raise ApiError(0, "Unreachable", str(exc)[:300]) from None
        except Exception as exc:  # the client wraps transport errors in its own ApiException (status 0)
            status = getattr(exc, "status", None)
            if status is None:
                raise
            raise ApiError(int(status or 0), str(getattr(exc, "reason", "") or ""), str(exc)[:300]) from None
        text = data.decode("utf-8", "replace") if isinstance(data, (bytes, bytearray)) else str(data or "")
        if response.status >= 400:
            try:
                status = json.loads(text)
            except ValueError:
                status = {}
            raise ApiError(response.status, str(status.get("reason") or response.reason or ""),
                           str(status.get("message") or text)[:1000])
        if raw:
            return text
        return json.loads(text) if text else {}

    def watch(self, path: str, query: list[tuple[str, object]], timeout: float):
        """The events of a watch (``?watch=1``), one decoded JSON object per line, until the server ends it.

        Raises:
            ApiError: the watch could not be opened (or broke off without an answer).
        """
        headers = {"Accept": "application/json"}
        try:
            _, url, headers, _, _ = self.api.param_serialize(
                method="GET", resource_path=path, query_params=[*query, ("watch", "true")], header_params=headers,
                auth_settings=["BearerToken"])
            response = self.api.call_api("GET", url, header_params=headers, _request_timeout=timeout)
        except (HTTPError, OSError) as exc:
            raise ApiError(0, "Unreachable", str(exc)[:300]) from None
        if response.status >= 400:
            text = response.read().decode("utf-8", "replace")
            try:
                status = json.loads(text)
            except ValueError:
                status = {}
            raise ApiError(response.status, str(status.get("reason") or ""), str(status.get("message") or text))
        raw = response.response
        buffer = b""
        try:
            for chunk in raw.stream(65536, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
            if buffer.strip():
                yield json.loads(buffer)
        except (HTTPError, OSError) as exc:
            raise ApiError(0, "Unreachable", str(exc)[:300]) from None
        finally:
            raw.release_conn()

    def create(self, obj: dict) -> dict:
        """POST ``obj`` (its ``kind``, ``apiVersion`` and ``metadata.namespace`` say where)."""
        m = obj.get("metadata") or {}
        return self.request("POST", path_of(obj["kind"], m.get("namespace"), api_version=obj.get("apiVersion", "")),
                            obj)

    def patch(self, kind: str, namespace: str | None, name: str, patch: dict) -> dict:
        """A JSON merge patch (RFC 7386) of one object."""
        return self.request("PATCH", path_of(kind, namespace, name), patch, content_type=MERGE_PATCH)

    def replace(self, obj: dict) -> dict:
        """PUT ``obj`` (with its ``metadata.resourceVersion``: a 409 when it changed meanwhile)."""
        m = obj.get("metadata") or {}
        return self.request("PUT", path_of(obj["kind"], m.get("namespace"), m["name"], obj.get("apiVersion", "")),
                            obj)

    def delete(self, kind: str, namespace: str | None, name: str, *, foreground: bool = True) -> dict:
        """DELETE one object; ``foreground``: its dependents (pods, PodGroup) first, the object last."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1",
                "propagationPolicy": "Foreground" if foreground else "Background"}
        return self.request("DELETE", path_of(kind, namespace, name), body)

    def get(self, kind: str, namespace: str | None, name: str) -> dict:
        """GET one object."""
        return self.request("GET", path_of(kind, namespace, name))

    def pod_log(self, namespace: str, pod: str, *, limit_bytes: int | None = None, tail_lines: int | None = None,
                container: str | None = None, previous: bool = False) -> str:
        """The pod's log (``read_namespaced_pod_log``): at most ``limit_bytes`` bytes from its start, or its
        last ``tail_lines`` lines."""
        query: list[tuple[str, object]] = []
        if container:
            query.append(("container", container))
        if limit_bytes:
            query.append(("limitBytes", limit_bytes))
        if tail_lines:
            query.append(("tailLines", tail_lines))
        if previous:
            query.append(("previous", "true"))
        return self.request("GET", path_of("Pod", namespace, pod) + "/log", query=query, raw=True)
