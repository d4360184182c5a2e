"""``pods/log``: which container a request means, whether it has started or ended, and the lines it asks for."""

from __future__ import annotations

from tests.kube_api.store import ApiError, Store


def container_of(pod: dict, requested: str | None) -> str:
    """The container a log request reads; raises ``400 BadRequest`` as the API server does when the pod has
    several and none is named, or the name is not one of them."""
    names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
    pod_name = pod["metadata"]["name"]
    if requested:
        if requested not in names:
            raise ApiError(400, "BadRequest", f"container {requested} is not valid for pod {pod_name}")
        return requested
    if len(names) != 1:
        raise ApiError(400, "BadRequest", f"a container name must be specified for pod {pod_name}, "
                       f"choose one of: [{' '.join(names)}]")
    return names[0]


def _state(store: Store, namespace: str, pod: str, container: str) -> dict | None:
    obj = store.peek("", "pods", namespace, pod)
    if obj is None:
        return None
    for status in (obj.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == container:
            return status.get("state") or {}
    return {}


def finished(store: Store, namespace: str, pod: str, container: str) -> bool:
    """True once the container has terminated or the pod is gone (a follow stream ends)."""
    state = _state(store, namespace, pod, container)
    return state is None or "terminated" in state


def read(store: Store, namespace: str, pod: str, container: str, query: dict) -> list[str]:
    """The log lines (``tailLines`` last ones when given); raises ``400`` while the container has not started."""
    state = _state(store, namespace, pod, container) or {}
    if "running" not in state and "terminated" not in state:
        reason = (state.get("waiting") or {}).get("reason", "ContainerCreating")
        raise ApiError(400, "BadRequest", f'container "{container}" in pod "{pod}" is waiting to start: {reason}')
    lines = list(store.logs.get((namespace, pod, container), []))
    if query.get("tailLines"):
        lines = lines[-int(query["tailLines"]):] if int(query["tailLines"]) else []
    return lines
