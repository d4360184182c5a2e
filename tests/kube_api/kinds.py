"""The resources the Kubernetes API mock serves: built-in kinds Crater uses and Volcano's CRDs.

A :class:`Kind` names a resource as the API does (group, version, plural, kind, scope, subresources). The Volcano
kinds are read from the CRDs in ``tests/data/volcano-crds/`` (their ``openAPIV3Schema`` is kept for validation);
the built-in ones are listed here with the scope and subresources the real API server gives them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

CRD_DIR = Path(__file__).resolve().parents[1] / "data" / "volcano-crds"


@dataclass(frozen=True)
class Kind:
    """One served resource. ``group`` is ``""`` for the core API; ``subresources`` holds ``status`` and, for pods,
    ``log``; ``schema`` is the CRD's ``openAPIV3Schema`` (``None`` for built-in kinds)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    subresources: frozenset[str] = frozenset({"status"})
    schema: dict | None = field(default=None, compare=False, hash=False)
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        """``v1`` or ``group/version``, as in an object's ``apiVersion``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``jobs.batch.volcano.sh`` or ``pods``: the name the API server uses in its messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def is_custom(self) -> bool:
        """True for a CRD-defined kind (updates must carry ``metadata.resourceVersion``)."""
        return self.schema is not None


_BUILT_IN = (
    Kind("", "v1", "namespaces", "Namespace", False, short_names=("ns",)),
    Kind("", "v1", "pods", "Pod", True, frozenset({"status", "log"}), short_names=("po",)),
    Kind("", "v1", "nodes", "Node", False, short_names=("no",)),
    Kind("", "v1", "events", "Event", True, frozenset(), short_names=("ev",)),
    Kind("", "v1", "services", "Service", True, short_names=("svc",)),
    Kind("", "v1", "configmaps", "ConfigMap", True, frozenset(), short_names=("cm",)),
    Kind("", "v1", "secrets", "Secret", True, frozenset()),
    Kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, short_names=("pvc",)),
    Kind("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, frozenset(), short_names=("netpol",)),
    Kind("coordination.k8s.io", "v1", "leases", "Lease", True, frozenset()),
)


@lru_cache(maxsize=1)
def _crd_kinds() -> tuple[Kind, ...]:
    kinds = []
    for path in sorted(CRD_DIR.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served", True):
                continue
            kinds.append(Kind(
                spec["group"], version["name"], spec["names"]["plural"], spec["names"]["kind"],
                spec["scope"] == "Namespaced", frozenset(version.get("subresources") or {}),
                version["schema"]["openAPIV3Schema"], tuple(spec["names"].get("shortNames", ())),
            ))
    return tuple(kinds)


def all_kinds() -> list[Kind]:
    """Every served kind: the built-in ones, then the Volcano CRDs' served versions."""
    return [*_BUILT_IN, *_crd_kinds()]
