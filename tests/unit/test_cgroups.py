"""cluster.local.cgroups over fake cgroup trees: detection (v1, v2, hybrid, none, read-only), the files and values
each limit is written as, the Crater parent, and reading OOM kills."""

from __future__ import annotations

from pathlib import Path

import pytest

from crater_app.cluster.local import cgroups as cg

MiB = 1024**2


def _files(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


V1 = {"memory/memory.limit_in_bytes": "9223372036854771712\n", "memory/memory.oom_control": "oom_kill 0\n",
      "cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n", "pids/cgroup.procs": "1\n"}
V2 = {"cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n", "cgroup.subtree_control": ""}


def _combined_cpu_hierarchy(root: Path) -> None:
    """cpu and cpuacct in one hierarchy, ``cpu`` a link to it (Debian/Ubuntu with systemd on v1)."""
    _files(root, {"memory/memory.limit_in_bytes": "0", "cpu,cpuacct/cpu.cfs_quota_us": "-1"})
    (root / "cpu").symlink_to("cpu,cpuacct")


@pytest.mark.parametrize(
    ("name", "build", "version", "controllers", "reason"),
    [
        ("v1", lambda r: _files(r, V1), 1, {"memory", "cpu", "pids"}, ""),
        ("v1 without pids", lambda r: _files(r, {k: v for k, v in V1.items() if not k.startswith("pids")}),
         1, {"memory", "cpu"}, "not-mounted"),
        ("v1 with cpu,cpuacct", _combined_cpu_hierarchy, 1, {"memory", "cpu"}, "not-mounted"),
        ("hybrid: v1 plus an empty unified tree", lambda r: _files(r, {**V1, "unified/cgroup.controllers": ""}),
         1, {"memory", "cpu", "pids"}, ""),
        ("v2", lambda r: _files(r, V2), 2, {"memory", "cpu", "pids"}, ""),
        ("v2 without the memory controller", lambda r: _files(r, {"cgroup.controllers": "cpu io pids\n"}),
         2, {"cpu", "pids"}, ""),
        ("v2 with no controller Crater uses", lambda r: _files(r, {"cgroup.controllers": "io rdma\n"}),
         None, set(), "no-controllers"),
        ("nothing mounted", lambda r: None, None, set(), "not-mounted"),
        ("a tmpfs with unrelated folders", lambda r: _files(r, {"systemd/cgroup.procs": "1"}), None, set(),
         "not-mounted"),
    ],
)
def test_detect(tmp_path, name, build, version, controllers, reason):
    build(tmp_path)
    found = cg.detect(tmp_path, "crater", can_write=lambda path: True)
    assert (found.version, set(found.controllers), found.reason) == (version, controllers, reason), name
    for controller in controllers:
        assert found.mechanism(controller) == f"cgroup v{version}"
    assert found.mechanism("rdma") is None


def test_detect_a_missing_root():
    assert cg.detect(Path("/nonexistent/cgroup")).reason == "not-mounted"


@pytest.mark.parametrize("files", [V1, V2])
def test_detect_a_read_only_tree(tmp_path, files):
    """A container's /sys/fs/cgroup mounted read-only: nothing Crater could create is usable."""
    _files(tmp_path, files)
    found = cg.detect(tmp_path, "crater", can_write=lambda path: False)
    assert (found.version, found.controllers, found.reason) == (None, frozenset(), "read-only")


def test_detect_asks_about_the_parent_when_it_exists(tmp_path):
    """A parent an administrator made (and handed to Crater's user) is what must be writable, not the root."""
    _files(tmp_path, V2)
    (tmp_path / "crater").mkdir()
    asked: list[Path] = []
    found = cg.detect(tmp_path, "crater", can_write=lambda path: asked.append(path) or path.name == "crater")
    assert found.version == 2 and asked == [tmp_path / "crater"]


def test_detect_per_controller_hierarchies_keeps_only_writable_ones(tmp_path):
    _files(tmp_path, V1)
    found = cg.detect(tmp_path, "crater", can_write=lambda path: path.name != "pids")
    assert (found.version, set(found.controllers), found.reason) == (1, {"memory", "cpu"}, "read-only")


def test_the_real_writable_check_on_a_plain_folder(tmp_path):
    _files(tmp_path, V2)
    assert cg.detect(tmp_path).version == 2  # this process may create folders in its own tmp_path


@pytest.mark.parametrize(("cpu_m", "quota"), [(0, None), (1000, 100_000), (500, 50_000), (2500, 250_000),
                                              (1, 1_000), (10, 1_000), (11, 1_100)])
def test_cpu_quota_follows_the_kubelet(cpu_m, quota):
    assert cg.cpu_quota_us(cpu_m) == quota


def test_limit_files_of_per_controller_hierarchies():
    files = cg.limit_files(1, 128 * MiB, 500, 100)
    assert files == {
        "memory": [("memory.limit_in_bytes", str(128 * MiB), True),
                   ("memory.memsw.limit_in_bytes", str(128 * MiB), False)],
        "cpu": [("cpu.cfs_period_us", "100000", True), ("cpu.cfs_quota_us", "50000", True)],
        "pids": [("pids.max", "100", True)],
    }


def test_limit_files_of_the_unified_hierarchy():
    files = cg.limit_files(2, 128 * MiB, 1500, 0)
    assert files == {
        "memory": [("memory.max", str(128 * MiB), True), ("memory.swap.max", "0", False),
                   ("memory.oom.group", "1", False)],
        "cpu": [("cpu.max", "150000 100000", True)],
        "pids": [],
    }


def test_no_request_no_limit():
    assert cg.limit_files(1, 0, 0, 0) == {"memory": [], "cpu": [], "pids": []}


def test_prepare_on_the_unified_hierarchy_enables_the_controllers_for_the_parent_and_its_children(tmp_path):
    _files(tmp_path, V2)
    support = cg.prepare(cg.detect(tmp_path, "crater", can_write=lambda path: True))
    assert support.version == 2
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+memory +cpu +pids"
    assert (tmp_path / "crater" / "cgroup.subtree_control").read_text() == "+memory +cpu +pids"


def test_prepare_reports_a_refusal(tmp_path):
    _files(tmp_path, V2)
    support = cg.detect(tmp_path, "crater", can_write=lambda path: True)
    (tmp_path / "crater").write_text("a file where the parent folder should go")
    assert cg.prepare(support) == cg.unavailable("setup-failed")


def test_create_on_per_controller_hierarchies_writes_each_and_remove_takes_it_away(tmp_path):
    _files(tmp_path, V1)
    support = cg.prepare(cg.detect(tmp_path, "crater", can_write=lambda path: True))
    cgroup, limits = cg.create(support, "job-1", 128 * MiB, 500, 64)
    assert limits == {"memory": 128 * MiB, "cpu": 500, "pids": 64}
    memory, cpu, pids = (tmp_path / c / "crater" / "job-1" for c in ("memory", "cpu", "pids"))
    assert cgroup.folders == (memory, cpu, pids) and cgroup.memory == memory
    assert (memory / "memory.limit_in_bytes").read_text() == str(128 * MiB)
    assert not (memory / "memory.memsw.limit_in_bytes").exists(), "optional: only where the kernel offers it"
    assert (cpu / "cpu.cfs_quota_us").read_text() == "50000" and (cpu / "cpu.cfs_period_us").read_text() == "100000"
    assert (pids / "pids.max").read_text() == "64"
    assert cg.JobCgroup.from_json(cgroup.to_json()) == cgroup
    assert cg.leftovers(support) == ["job-1"]
    for folder in cgroup.folders:  # a fake tree's folders hold the files written above; a kernel's would not
        for path in folder.iterdir():
            path.unlink()
    assert cgroup.remove() and not memory.exists() and cg.leftovers(support) == []


def test_create_on_the_unified_hierarchy_makes_one_folder(tmp_path):
    _files(tmp_path, V2)
    support = cg.prepare(cg.detect(tmp_path, "crater", can_write=lambda path: True))
    cgroup, limits = cg.create(support, "job-2", 0, 2000, 0)
    assert limits == {"cpu": 2000}, "no memory request: no memory limit"
    assert cgroup.folders == (tmp_path / "crater" / "job-2",)
    assert (tmp_path / "crater" / "job-2" / "cpu.max").read_text() == "200000 100000"


def test_create_over_a_cgroup_that_keeps_its_processes_says_so_and_changes_nothing(tmp_path):
    """An earlier run's cgroup still lists a process after SIGKILL and the wait (a fake tree's list never empties,
    as a process in uninterruptible sleep would not): CgroupBusy names them; the cgroup and its limits stay."""
    _files(tmp_path, V2)
    support = cg.prepare(cg.detect(tmp_path, "crater", can_write=lambda path: True))
    cgroup, _ = cg.create(support, "job-3", 0, 2000, 0)
    (cgroup.folders[0] / "cgroup.procs").write_text("4194305\n")  # above PID_MAX_LIMIT: no such process
    with pytest.raises(cg.CgroupBusy) as info:
        cg.create(support, "job-3", 0, 500, 0, wait_s=0.05)
    assert info.value.pids == [4194305] and info.value.cgroup.folders == cgroup.folders
    assert (cgroup.folders[0] / "cpu.max").read_text() == "200000 100000"


def test_create_refuses_an_unsafe_name(tmp_path):
    _files(tmp_path, V2)
    support = cg.detect(tmp_path, "crater", can_write=lambda path: True)
    with pytest.raises(ValueError):
        cg.create(support, "../escape", 0, 0, 0)


@pytest.mark.parametrize(("version", "name", "content", "kills"), [
    (1, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", 2),
    (2, "memory.events", "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n", 1),
    (2, "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n", 0),
])
def test_oom_kills(tmp_path, version, name, content, kills):
    (tmp_path / name).write_text(content)
    assert cg.JobCgroup(version, (tmp_path,), tmp_path).oom_kills() == kills


def test_oom_kills_of_a_cgroup_that_is_gone(tmp_path):
    assert cg.JobCgroup(1, (tmp_path / "gone",), tmp_path / "gone").oom_kills() == 0
    assert cg.JobCgroup(1, (tmp_path / "gone",), None).oom_kills() == 0
