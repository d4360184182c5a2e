"""Validate a Kubernetes object as the API server would before storing it, offline: :func:`errors` / :func:`validate`.

- Volcano kinds (``batch.volcano.sh`` Job, ``scheduling.volcano.sh`` Queue and PodGroup) against the
  ``openAPIV3Schema`` of the served versions of the CRDs in ``tests/data/volcano-crds/`` with ``jsonschema``
  (Draft 2020-12), the schema first turned into what the API server enforces for a structural schema:

  - unknown fields are errors, as with ``fieldValidation=Strict`` (kubectl's default since Kubernetes 1.27; without
    it the server prunes them silently, which would hide a misspelt field): every object schema without
    ``additionalProperties`` gets ``additionalProperties: false``, except under
    ``x-kubernetes-preserve-unknown-fields: true``; an ``x-kubernetes-embedded-resource`` may carry ``apiVersion``,
    ``kind`` and ``metadata``;
  - ``x-kubernetes-int-or-string`` takes an integer or a string; ``nullable`` adds ``null``; ``format: int32``/
    ``int64`` bound the integer to its range;
  - ``x-kubernetes-list-type: set`` items are unique, ``map`` items are unique by their
    ``x-kubernetes-list-map-keys`` (the server's "Duplicate value" error);
  - not checked: ``x-kubernetes-validations`` (CEL rules; the CRDs here have none), defaults (not applied), and
    Volcano's admission webhooks (only their rules Crater relies on are tested where the builders are).

- Core kinds (``v1`` Namespace, Service, ``networking.k8s.io/v1`` NetworkPolicy, ...) with ``kubernetes-validate``
  (its bundled OpenAPI schemas of Kubernetes :data:`KUBERNETES_VERSION`, ``strict``: unknown fields are errors).

- Every kind: ``metadata`` as the API server's ObjectMeta validation sees it: ``name`` a DNS-1123 subdomain (at most
  253 characters, as for every custom resource; a Namespace's and a Service's name a DNS-1123 label of at most 63),
  ``namespace`` present exactly for namespaced kinds and a DNS-1123 label, label keys (``[prefix/]name``: prefix a
  DNS-1123 subdomain, name at most 63 of ``[A-Za-z0-9._-]``, alphanumeric at both ends) and values (at most 63, same
  characters, or empty), annotation keys like label keys and all annotations together at most 256 KiB; a Volcano
  Job's pod templates' labels too.
"""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from pathlib import Path

import jsonschema
import kubernetes_validate
import yaml

CRD_DIR = Path(__file__).resolve().parent / "data" / "volcano-crds"
KUBERNETES_VERSION = kubernetes_validate.latest_version()

_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
_INT_RANGES = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}
#: core kinds whose names are DNS-1123 labels, not subdomains (apimachinery ValidateNamespaceName, Service names)
_LABEL_NAMED = {("v1", "Namespace"), ("v1", "Service")}
_CLUSTER_SCOPED_CORE = {("v1", "Namespace"), ("v1", "Node"), ("v1", "PersistentVolume")}
MAX_ANNOTATIONS_BYTES = 256 * 1024


class InvalidObject(AssertionError):
    """An object the API server would refuse; ``problems`` lists why (``<path>: <message>``)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def _strict(node: object) -> object:
    """A copy of an OpenAPI v3 structural schema as JSON Schema with the API server's rules (module docstring)."""
    if isinstance(node, list):
        return [_strict(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {key: _strict(value) for key, value in node.items()
           if not key.startswith("x-kubernetes-") and key not in ("nullable", "format", "default", "description")}
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if node.get("format") in _INT_RANGES and node.get("type") == "integer":
        low, high = _INT_RANGES[node["format"]]
        out.setdefault("minimum", low)
        out.setdefault("maximum", high)
    if node.get("type") == "object" and "additionalProperties" not in node and not node.get(
            "x-kubernetes-preserve-unknown-fields"):
        props = dict(out.get("properties", {}))
        if node.get("x-kubernetes-embedded-resource"):
            for name in ("apiVersion", "kind"):
                props.setdefault(name, {"type": "string"})
            props.setdefault("metadata", {"type": "object"})
        out["properties"] = props
        out["additionalProperties"] = False
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    return out


@lru_cache(maxsize=None)
def crds() -> dict[tuple[str, str], tuple[dict, dict, bool]]:
    """(apiVersion, kind) -> (the raw ``openAPIV3Schema``, its strict JSON Schema, namespaced) for every served
    version of every CRD in :data:`CRD_DIR`."""
    out = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served", True):
                continue
            raw = version["schema"]["openAPIV3Schema"]
            strict = _strict(raw)
            strict["properties"]["metadata"] = {"type": "object"}  # ObjectMeta: checked by _metadata_problems
            strict["required"] = sorted({*strict.get("required", ()), "apiVersion", "kind", "metadata"})
            out[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = (
                raw, strict, spec["scope"] == "Namespaced")
    return out


def _list_map_problems(schema: dict, value: object, path: str) -> list[str]:
    """Duplicate keys in ``x-kubernetes-list-type: map`` lists anywhere in ``value`` (``schema`` the raw one)."""
    problems: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None:
                problems += _list_map_problems(sub, item, f"{path}.{key}")
    elif isinstance(value, list):
        items = schema.get("items", {})
        if schema.get("x-kubernetes-list-type") == "map":
            keys = schema.get("x-kubernetes-list-map-keys", [])
            seen = set()
            for i, item in enumerate(value):
                ident = tuple(item.get(k) for k in keys) if isinstance(item, dict) else (item,)
                if ident in seen:
                    problems.append(f"{path}[{i}]: Duplicate value {dict(zip(keys, ident))}")
                seen.add(ident)
        for i, item in enumerate(value):
            problems += _list_map_problems(items, item, f"{path}[{i}]")
    return problems


def _key_problems(key: object, path: str) -> list[str]:
    if not isinstance(key, str):
        return [f"{path}: key {key!r} is not a string"]
    prefix, _, name = key.rpartition("/")
    problems = []
    if prefix and (len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix)):
        problems.append(f"{path}: key prefix {prefix!r} is not a DNS-1123 subdomain")
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        problems.append(f"{path}: key name {name!r} is not a qualified name (63 characters of [A-Za-z0-9._-])")
    return problems


def _labels_problems(labels: object, path: str) -> list[str]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [f"{path}: not a mapping"]
    problems = []
    for key, value in labels.items():
        problems += _key_problems(key, f"{path}[{key!r}]")
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
            problems.append(f"{path}[{key!r}]: value {value!r} is not a label value")
    return problems


def _metadata_problems(obj: dict, namespaced: bool) -> list[str]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return ["metadata: missing or not a mapping"]
    problems = []
    name = meta.get("name")
    label_named = (obj.get("apiVersion"), obj.get("kind")) in _LABEL_NAMED
    limit, pattern = (63, _LABEL) if label_named else (253, _SUBDOMAIN)
    if not isinstance(name, str) or len(name) > limit or not pattern.fullmatch(name):
        problems.append(f"metadata.name: {name!r} is not a DNS-1123 {'label' if label_named else 'subdomain'}")
    namespace = meta.get("namespace")
    if namespaced and (not isinstance(namespace, str) or len(namespace) > 63 or not _LABEL.fullmatch(namespace)):
        problems.append(f"metadata.namespace: {namespace!r} is not a DNS-1123 label")
    if not namespaced and namespace is not None:
        problems.append(f"metadata.namespace: a cluster-scoped {obj.get('kind')} has no namespace")
    problems += _labels_problems(meta.get("labels"), "metadata.labels")
    annotations = meta.get("annotations") or {}
    if not isinstance(annotations, dict):
        problems.append("metadata.annotations: not a mapping")
    else:
        size = 0
        for key, value in annotations.items():
            problems += _key_problems(key, f"metadata.annotations[{key!r}]")
            if not isinstance(value, str):
                problems.append(f"metadata.annotations[{key!r}]: value is not a string")
            else:
                size += len(str(key).encode()) + len(value.encode())
        if size > MAX_ANNOTATIONS_BYTES:
            problems.append(f"metadata.annotations: {size} bytes; the limit is {MAX_ANNOTATIONS_BYTES}")
    return problems


def _template_label_problems(obj: dict) -> list[str]:
    problems = []
    for i, task in enumerate((obj.get("spec") or {}).get("tasks") or []):
        if isinstance(task, dict):
            labels = ((task.get("template") or {}).get("metadata") or {}).get("labels")
            problems += _labels_problems(labels, f"spec.tasks[{i}].template.metadata.labels")
    return problems


def errors(obj: dict) -> list[str]:
    """Why the API server would refuse ``obj`` (``[]``: it would store it as it is); see the module docstring."""
    if not isinstance(obj, dict):
        return ["not a mapping"]
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key in crds():
        raw, strict, namespaced = crds()[key]
        validator = jsonschema.Draft202012Validator(strict)
        problems = [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
                    for e in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))]
        problems += _list_map_problems(raw, obj, "")
        problems += _template_label_problems(obj)
        return problems + _metadata_problems(obj, namespaced)
    if ".volcano.sh/" in str(key[0]):
        return [f"{key[0]} {key[1]}: no CRD in {CRD_DIR.name} serves it"]
    try:
        kubernetes_validate.validate(copy.deepcopy(obj), KUBERNETES_VERSION, strict=True)
        problems = []
    except kubernetes_validate.ValidationError as exc:
        problems = [f"{'.'.join(map(str, exc.path)) or '<root>'}: {exc.message}"]
    except (kubernetes_validate.SchemaNotFoundError, kubernetes_validate.InvalidSchemaError) as exc:
        return [f"{key[0]} {key[1]}: {exc}"]
    return problems + _metadata_problems(obj, key not in _CLUSTER_SCOPED_CORE)


def validate(obj: dict) -> dict:
    """Return ``obj`` when :func:`errors` finds nothing.

    Raises:
        InvalidObject: with every problem found.
    """
    problems = errors(obj)
    if problems:
        raise InvalidObject(problems)
    return obj
