"""Rendering the Helm chart (deploy/helm/crater) with the real Helm engine, for the chart's tests.

The chart is rendered by ``deploy/helm/render.py`` under the Helm venv's interpreter (``make helm-venv``, the
``helm-python-sdk`` library; ``CRATER_HELM_PYTHON`` names it, the Makefile exports it), as a subprocess, because
that library lives outside Crater's venv. A missing interpreter fails the test (never skips it).
"""

from __future__ import annotations

import json
import os
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "deploy" / "helm" / "crater"
RENDER = ROOT / "deploy" / "helm" / "render.py"
RELEASE_NS = "crater"
JOBS_NS = "crater-jobs"

EXTERNAL = {
    "postgresql": {"enabled": False},
    "externalDatabase": {"url": "postgresql://crater:pw@db.example.internal:5432/crater"},
    "redis": {"enabled": False},
    "externalRedis": {"url": "redis://:pw@redis.example.internal:6379/0"},
}
INGRESS_TLS = {
    "ingress": {
        "enabled": True,
        "className": "nginx",
        "hosts": ["crater.example.com"],
        "tls": [{"secretName": "crater-tls", "hosts": ["crater.example.com"]}],
    }
}
#: value sets every structural check runs on
VALUE_SETS = {
    "defaults": {},
    "external-services-ingress": {**EXTERNAL, **INGRESS_TLS, "replicaCount": 2,
                                  "persistence": {"accessModes": ["ReadWriteMany"]}},
    "per-project": {"kube": {"namespaceMode": "per-project"}},
    "sqlite-no-persistence": {"postgresql": {"enabled": False}, "redis": {"enabled": False},
                              "persistence": {"enabled": False}},
    "existing-secret": {"existingSecret": "crater-settings", "crater": {"publicUrls": ["https://gpu.example.org"]}},
}


def helm_python() -> str:
    """The Helm venv's interpreter; fails (never skips) the test when it is missing."""
    path = os.environ.get("CRATER_HELM_PYTHON") or str(ROOT / ".venv-helm" / "bin" / "python")
    if not os.access(path, os.X_OK):
        pytest.fail(f"the Helm venv's interpreter {path} is missing: run `make helm-venv` (or `make install`), "
                    "which installs helm-python-sdk (deploy/helm/requirements.txt) into .venv-helm")
    return path


@lru_cache(maxsize=None)
def _run(values_json: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [helm_python(), str(RENDER), str(CHART), "--values", values_json,
         "--name", "crater", "--namespace", RELEASE_NS],
        capture_output=True, text=True, timeout=120,
    )


def render_files(values: dict | None = None) -> dict[str, str]:
    """Template path -> rendered text, for ``values`` over the chart's own; fails the test on a render error."""
    done = _run(json.dumps(values or {}, sort_keys=True))
    if done.returncode != 0:
        pytest.fail(f"helm render failed (rc {done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)["manifests"]


def render(values: dict | None = None) -> list[dict]:
    """Every object the chart renders for ``values`` (NOTES.txt left out)."""
    objects = []
    for path, text in sorted(render_files(values).items()):
        if path.endswith("NOTES.txt"):
            continue
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects


def render_error(values: dict) -> str:
    """Helm's message when the chart refuses ``values`` (render.py exits 2)."""
    done = _run(json.dumps(values, sort_keys=True))
    assert done.returncode == 2, f"the chart accepted {values} (rc {done.returncode}): {done.stderr}"
    return done.stderr


def by_kind(objects: list[dict], kind: str) -> list[dict]:
    """The objects of ``kind``."""
    return [o for o in objects if o["kind"] == kind]


def one(objects: list[dict], kind: str, name: str | None = None) -> dict:
    """The one object of ``kind`` (named ``name``); fails the test when there are none or several."""
    found = [o for o in by_kind(objects, kind) if name is None or o["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {[o['metadata']['name'] for o in found]}"
    return found[0]


def crater_container(objects: list[dict]) -> dict:
    """Crater's container in its Deployment."""
    [container] = one(objects, "Deployment", "crater")["spec"]["template"]["spec"]["containers"]
    return container


def pod_specs(objects: list[dict]) -> list[tuple[str, dict]]:
    """(name, pod spec) of every workload and bare pod."""
    specs = [(o["metadata"]["name"], o["spec"]["template"]["spec"])
             for o in objects if o["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job")]
    specs += [(o["metadata"]["name"], o["spec"]) for o in by_kind(objects, "Pod")]
    return specs


def secret_refs(objects: list[dict]) -> list[str]:
    """The Secret names every container's env refers to."""
    names = []
    for _, spec in pod_specs(objects):
        for container in spec["containers"]:
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    names.append(ref["name"])
            names += [e["secretRef"]["name"] for e in container.get("envFrom", []) if "secretRef" in e]
    return names


def env_names(objects: list[dict]) -> set[str]:
    """Every environment variable Crater's container gets: its ConfigMap's keys and its own env entries."""
    container = crater_container(objects)
    names = {e["name"] for e in container.get("env", [])}
    for source in container["envFrom"]:
        names |= set(one(objects, "ConfigMap", source["configMapRef"]["name"])["data"])
    return names
