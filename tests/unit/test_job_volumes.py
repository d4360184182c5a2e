"""domain.job_volumes: volumes, shm_size, node_selector and ttl_after_finished of a job spec."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import InvalidInput
from crater_app.domain.jobs import validate_spec

GiB = 1024**3


def spec(**over) -> dict:
    raw = {"name": "a", "command": ["python", "x.py"], "resources": {"memory": "16Gi"}}
    raw.update(over)
    return raw


def vol(**over) -> dict:
    raw = {"source": "project", "mount_path": "/data"}
    raw.update(over)
    return raw


def rejects(raw, field, *words, lang="en") -> InvalidInput:
    with pytest.raises(InvalidInput) as info:
        validate_spec(raw)
    err = info.value
    assert err.field == field, (err.code, err.field, err.message)
    for word in words:
        assert word in err.message_in(lang), err.message_in(lang)
    return err


def test_a_spec_with_every_option_is_accepted():
    s = validate_spec(spec(
        volumes=[vol(), vol(source="user", mount_path="/home/me", read_only=True),
                 vol(source="pvc", claim="imagenet.v2", sub_path="train/2024", mount_path="/datasets/imagenet/")],
        shm_size="8Gi", node_selector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "zone": "",
                                       "kubernetes.io/hostname": "gpu-01"},
        ttl_after_finished="1h"))
    assert [v.source for v in s.volumes] == ["project", "user", "pvc"] and s.volumes[1].read_only
    assert s.shm_size == "8Gi" and s.ttl_after_finished == 3600
    assert validate_spec(spec(shm_size=" 2Gi ")).shm_size == "2Gi"  # canonical form
    assert validate_spec(spec(ttl_after_finished=60)).ttl_after_finished == 60  # the least
    assert validate_spec(spec(ttl_after_finished="1m")).ttl_after_finished == 60
    assert validate_spec(spec()).ttl_after_finished is None


@pytest.mark.parametrize("path", ["/dev/shm", "/dev/shm/cache", "/process", "/system", "/devices", "/data/proc"])
def test_shm_and_paths_that_only_look_like_system_folders_are_mount_points(path):
    assert validate_spec(spec(volumes=[vol(mount_path=path)])).volumes[0].mount_path == path


def test_shm_size_without_a_memory_request_is_checked_once_the_defaults_are_applied():
    validate_spec({"name": "a", "command": ["x"], "shm_size": "64Gi"})


@pytest.mark.parametrize("raw, field, words", [
    (spec(volumes=[vol(source="nfs")]), "volumes[0].source", ["project, user, pvc", "'nfs'"]),
    (spec(volumes=[vol(source="pvc")]), "volumes[0].claim", ["must name its claim"]),
    (spec(volumes=[vol(source="pvc", claim="Data_Set")]), "volumes[0].claim", ["PersistentVolumeClaim name"]),
    (spec(volumes=[vol(source="pvc", claim="a" * 254)]), "volumes[0].claim", ["253"]),
    (spec(volumes=[vol(claim="data")]), "volumes[0].claim", ["only for pvc volumes", "'project'"]),
    (spec(volumes=[vol(mount_path="data")]), "volumes[0].mount_path", ["absolute"]),
    (spec(volumes=[vol(mount_path="/data/../etc")]), "volumes[0].mount_path", ["'..'"]),
    (spec(volumes=[vol(mount_path="/")]), "volumes[0].mount_path", ["'/'"]),
    (spec(volumes=[vol(mount_path="//")]), "volumes[0].mount_path", ["'/'"]),
    (spec(volumes=[vol(mount_path="/a\x00")]), "volumes[0].mount_path", ["1024"]),
    (spec(volumes=[vol(mount_path="/" + "a" * 1024)]), "volumes[0].mount_path", ["1024"]),
    (spec(volumes=[vol(), vol(source="user", mount_path="/data/")]), "volumes[1].mount_path",
     ["/data is already used by volumes[0]"]),
    (spec(volumes=[vol(), vol(source="user", mount_path="/x/../data")]), "volumes[1].mount_path", ["'..'"]),
    (spec(volumes=[vol(sub_path="/abs")]), "volumes[0].sub_path", ["relative"]),
    (spec(volumes=[vol(sub_path="a/../../b")]), "volumes[0].sub_path", ["'..'"]),
    (spec(volumes=[vol(sub_path="a\\b")]), "volumes[0].sub_path", []),
    (spec(volumes=[vol(read_only="yes")]), "volumes[0].read_only", ["boolean"]),
    (spec(volumes=[vol(size="1Gi")]), "volumes[0].size", ["unknown field"]),
    (spec(volumes=[vol(mount_path=f"/d{i}") for i in range(33)]), "volumes", ["limit is 32"]),
    (spec(volumes=[vol(mount_path="/dev/shm")], shm_size="1Gi"), "volumes[0].mount_path", ["/dev/shm"]),
    # what the container runtime mounts itself
    (spec(volumes=[vol(mount_path="/proc")]), "volumes[0].mount_path", ["at or under /proc", "runtime"]),
    (spec(volumes=[vol(mount_path="/proc/sys/")]), "volumes[0].mount_path", ["/proc"]),
    (spec(volumes=[vol(mount_path="/sys")]), "volumes[0].mount_path", ["/sys"]),
    (spec(volumes=[vol(mount_path="//sys/fs/cgroup")]), "volumes[0].mount_path", ["/sys"]),
    (spec(volumes=[vol(mount_path="/dev")]), "volumes[0].mount_path", ["/dev"]),
    (spec(volumes=[vol(mount_path="/dev/nvidia0")]), "volumes[0].mount_path", ["/dev"]),
    (spec(volumes=[vol(mount_path="/dev/./shmx")]), "volumes[0].mount_path", ["/dev"]),
    (spec(volumes=[vol(mount_path="/dev/shm/x")], shm_size="1Gi"), "volumes[0].mount_path", ["shm_size"]),
    (spec(shm_size="32Gi"), "shm_size", ["32 GiB", "task main", "16 GiB"]),
    (spec(shm_size="0"), "shm_size", ["more than 0"]),
    (spec(shm_size="lots"), "shm_size", []),
    (spec(shm_size=True), "shm_size", []),
    (spec(shm_size="1.5"), "shm_size", []),
    ({"name": "d", "tasks": [{"name": "a", "command": ["x"], "resources": {"memory": "64Gi"}},
                             {"name": "b", "command": ["x"], "resources": {"memory": "1Gi"}}], "shm_size": "2Gi"},
     "shm_size", ["task b", "1 GiB"]),
    (spec(node_selector={"bad key": "x"}), "node_selector.bad key", ["not a label name", "63", "253"]),
    (spec(node_selector={"-lead": "x"}), "node_selector.-lead", []),
    (spec(node_selector={"a" * 64: "x"}), f"node_selector.{'a' * 64}", []),
    (spec(node_selector={"Example.com/x": "y"}), "node_selector.Example.com/x", []),
    (spec(node_selector={"/x": "y"}), "node_selector./x", []),
    (spec(node_selector={"a/b/c": "y"}), "node_selector.a/b/c", []),
    (spec(node_selector={"zone": "a b"}), "node_selector.zone", ["value of 'zone'"]),
    (spec(node_selector={"zone": "x" * 64}), "node_selector.zone", ["63"]),
    (spec(node_selector={"zone": "-x"}), "node_selector.zone", []),
    (spec(node_selector={"zone": 1}), "node_selector.zone", ["must be a string"]),
    (spec(node_selector={f"k{i}": "v" for i in range(33)}), "node_selector", ["limit is 32"]),
    (spec(ttl_after_finished=-1), "ttl_after_finished", []),
    # Volcano would delete the Job before Crater read its final status and logs
    (spec(ttl_after_finished=0), "ttl_after_finished", ["is 0 seconds", "at least 60 seconds"]),
    (spec(ttl_after_finished="0"), "ttl_after_finished", ["at least 60 seconds"]),
    (spec(ttl_after_finished=59), "ttl_after_finished", ["is 59 seconds", "at least 60"]),
    (spec(ttl_after_finished="30s"), "ttl_after_finished", ["is 30 seconds"]),
    (spec(ttl_after_finished="31d"), "ttl_after_finished", []),
    (spec(ttl_after_finished="soon"), "ttl_after_finished", []),
])
def test_every_bad_option_names_its_field(raw, field, words):
    rejects(raw, field, *words)


def test_the_messages_are_in_chinese_too():
    rejects(spec(shm_size="32Gi"), "shm_size", "共享内存", lang="zh-CN")
    rejects(spec(volumes=[vol(source="pvc")]), "volumes[0].claim", "claim", lang="zh-CN")
