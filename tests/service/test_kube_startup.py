"""CRATER_BACKEND=kubernetes: the settings become KubeOptions, the client comes from a kubeconfig, and a cluster
that cannot be used stops the start with a coded error (en + zh-CN) instead of a traceback later."""

from __future__ import annotations

import socket

import pytest
import yaml

from crater_app.bootstrap import kube_options, make_backend
from crater_app.cluster.kube.backend import KubernetesBackend
from crater_app.cluster.kube.client import ClusterUnavailable, check_cluster, make_api_client
from crater_app.settings import Settings


def kubeconfig(tmp_path, server: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": server}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        "users": [{"name": "test", "user": {"token": "t"}}]}))
    return str(path)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_settings_make_the_options():
    opts = kube_options(Settings(kube_namespace_mode="per-project", kube_namespace_prefix="team-",
                                 kube_accelerators="nvidia.com/gpu, example.com/npu",
                                 kube_model_labels="example.com/npu=example.com/npu.model",
                                 kube_image_pull_secrets="a,b"))
    assert opts.per_project and opts.namespace_prefix == "team-"
    assert opts.accelerators == ("nvidia.com/gpu", "example.com/npu") and opts.image_pull_secrets == ("a", "b")
    assert opts.model_label("example.com/npu") == "example.com/npu.model"
    assert opts.model_label("nvidia.com/gpu") == "nvidia.com/gpu.product"
    assert opts.member_queues and not kube_options(Settings(kube_member_queues=False)).member_queues
    with pytest.raises(ValueError, match="CRATER_KUBE_MODEL_LABELS"):
        kube_options(Settings(kube_model_labels="no-equals-sign"))
    with pytest.raises(ValueError):
        kube_options(Settings(kube_namespace_mode="sideways"))


def test_the_backend_is_built_from_a_kubeconfig(tmp_path, kube_api):
    be = make_backend(Settings(backend="kubernetes", kube_config=kubeconfig(tmp_path, kube_api.url)))
    try:
        assert isinstance(be, KubernetesBackend) and be.name == "kubernetes"
    finally:
        be.close()


def test_an_unreachable_cluster_is_a_coded_error(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(ClusterUnavailable) as err:
        make_backend(Settings(backend="kubernetes", kube_config=kubeconfig(tmp_path, url)))
    assert err.value.code == "kube.unreachable" and err.value.params["server"] == url
    assert url in err.value.message_in("zh-CN") and "无法连接" in err.value.message_in("zh-CN")


def test_a_cluster_without_volcano_is_a_coded_error(kube_api, kube_client):
    kube_api.fail_next(2, 404, match=lambda method, path: path.startswith(("/apis/batch.volcano.sh",
                                                                           "/apis/scheduling.volcano.sh")))
    with pytest.raises(ClusterUnavailable) as err:
        check_cluster(kube_client)
    assert err.value.code == "kube.crds_missing"
    assert err.value.params["missing"] == ["jobs.batch.volcano.sh/v1alpha1", "queues.scheduling.volcano.sh/v1beta1"]
    assert "Volcano" in err.value.message and "Volcano" in err.value.message_in("zh-CN")


def test_no_configuration_is_a_coded_error(tmp_path):
    with pytest.raises(ClusterUnavailable) as err:
        make_api_client(str(tmp_path / "missing"))
    assert err.value.code == "kube.config"
