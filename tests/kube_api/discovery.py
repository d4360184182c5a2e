"""The discovery documents the API server serves (``/api``, ``/apis``, ``/api/v1``, ``/apis/<group>/<version>``,
``/version``), built from the served kinds; enough for the ``kubernetes`` client's dynamic client and kubectl."""

from __future__ import annotations

from tests.kube_api.kinds import Kind

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def version() -> dict:
    """``/version``."""
    return {"major": "1", "minor": "30", "gitVersion": "v1.30.0-crater-mock", "platform": "linux/amd64"}


def core_versions() -> dict:
    """``/api``."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}


def groups(kinds: list[Kind]) -> dict:
    """``/apis``: every group with its served versions."""
    by_group: dict[str, list[str]] = {}
    for kind in kinds:
        if kind.group and kind.version not in by_group.setdefault(kind.group, []):
            by_group[kind.group].append(kind.version)
    out = []
    for group, versions in sorted(by_group.items()):
        items = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        out.append({"name": group, "versions": items, "preferredVersion": items[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}


def resources(kinds: list[Kind], group: str, version: str) -> dict | None:
    """``/api/v1`` or ``/apis/<group>/<version>``: the resources and subresources; ``None`` if not served."""
    chosen = [k for k in kinds if k.group == group and k.version == version]
    if not chosen:
        return None
    items = []
    for kind in chosen:
        items.append({"name": kind.plural, "singularName": kind.kind.lower(), "namespaced": kind.namespaced,
                      "kind": kind.kind, "verbs": VERBS, "shortNames": list(kind.short_names)})
        for sub in sorted(kind.subresources):
            items.append({"name": f"{kind.plural}/{sub}", "singularName": "", "namespaced": kind.namespaced,
                          "kind": kind.kind if sub == "status" else "Pod",
                          "verbs": ["get"] if sub == "log" else ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": kinds_gv(group, version),
            "resources": items}


def kinds_gv(group: str, version: str) -> str:
    """``v1`` or ``group/version``."""
    return f"{group}/{version}" if group else version
