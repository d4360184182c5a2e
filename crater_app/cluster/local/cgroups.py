"""Per-job control groups on the local backend: memory, CPU and process-count limits the kernel enforces.

Where Crater can create cgroups, each workload gets one per hierarchy, ``<hierarchy>/<parent>/<workload uid>``
(``/sys/fs/cgroup/memory/crater/<uid>`` on cgroup v1, ``/sys/fs/cgroup/crater/<uid>`` on v2), with:

========  =========================================================  ===================================
resource  cgroup v2 (unified)                                         cgroup v1
========  =========================================================  ===================================
memory    ``memory.max``; ``memory.swap.max`` = 0 and                 ``memory.limit_in_bytes``;
          ``memory.oom.group`` = 1 where present                      ``memory.memsw.limit_in_bytes`` where
                                                                      present (no swap beyond the limit)
OOM kill  ``memory.events`` ``oom_kill N``                             ``memory.oom_control`` ``oom_kill N``
cpu       ``cpu.max`` = ``"<quota> <period>"``                         ``cpu.cfs_quota_us``/``cpu.cfs_period_us``
pids      ``pids.max``                                                 ``pids.max``
========  =========================================================  ===================================

The CPU quota follows the kubelet (``MilliCPUToQuota`` in ``pkg/kubelet/cm/helpers_linux.go``): a period of 100 ms
and ``millicores * period / 1000`` microseconds of CPU time per period, at least 1 ms. A memory limit is the job's
``memory`` request (bytes); no request, no limit. The runner places the job's process in the cgroups between fork
and exec, so that everything the job starts is inside; the runner itself stays out.

:func:`detect` looks at a cgroup root once, at backend start (a pure function of the tree it is given, so tests run
it over fake trees); :func:`prepare` creates Crater's parent. Kernel documentation: ``admin-guide/cgroup-v2.rst``
and ``admin-guide/cgroup-v1/memory.rst``.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

CONTROLLERS = ("memory", "cpu", "pids")
CFS_PERIOD_US = 100_000  # kubelet's default CPU CFS quota period (100 ms)
MIN_CFS_QUOTA_US = 1_000  # kubelet's minimum quota (1 ms): the kernel refuses less
#: a file only a hierarchy of that controller has at its root (v1); v1 pids has no pids.max at the root
_V1_MARKERS = {"memory": "memory.limit_in_bytes", "cpu": "cpu.cfs_quota_us", "pids": "cgroup.procs"}
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")
#: seconds :func:`create` waits for the processes an earlier run of the workload left in its cgroup to exit after
#: SIGKILL (a process in uninterruptible sleep, e.g. on a hung NFS mount or in a GPU driver, exits only later)
REUSE_WAIT_S = 2.0
_POLL_S = 0.01


def writable(path: Path) -> bool:
    """Whether this process may create folders in ``path``: its permissions allow it and its file system is not
    mounted read-only (containers often get ``/sys/fs/cgroup`` read-only)."""
    try:
        return os.access(path, os.W_OK | os.X_OK) and not os.statvfs(path).f_flag & os.ST_RDONLY
    except OSError:
        return False


@dataclass(frozen=True)
class CgroupSupport:
    """What :func:`detect` found: ``version`` 1 or 2 (``None``: no cgroups Crater can use); ``hierarchies`` maps
    each usable controller (``memory``, ``cpu``, ``pids``) to the folder of its hierarchy (v2: the one unified
    root); ``parent`` the folder Crater's cgroups go in, relative to each hierarchy; ``reason`` why none or a
    controller is missing (``off``, ``not-mounted``, ``no-controllers``, ``read-only``, ``setup-failed``)."""

    version: int | None
    hierarchies: dict[str, Path] = field(default_factory=dict)
    parent: str = "crater"
    reason: str = ""

    @property
    def controllers(self) -> frozenset[str]:
        """The controllers Crater can set limits with."""
        return frozenset(self.hierarchies)

    def mechanism(self, controller: str) -> str | None:
        """``"cgroup v1"``/``"cgroup v2"`` when ``controller`` is usable, else ``None``."""
        return f"cgroup v{self.version}" if controller in self.hierarchies else None

    def folders(self, uid: str) -> tuple[Path, ...]:
        """The cgroup folders of workload ``uid``, one per hierarchy (v2: one)."""
        name = cgroup_name(uid)
        return tuple(dict.fromkeys(root / self.parent / name for root in self.hierarchies.values()))


def unavailable(reason: str, parent: str = "crater") -> CgroupSupport:
    """A :class:`CgroupSupport` with no cgroups, for ``reason``."""
    return CgroupSupport(None, {}, parent, reason)


def cgroup_name(uid: str) -> str:
    """The folder name of workload ``uid``'s cgroup: the uid itself (Crater's uids are UUIDs).

    Raises:
        ValueError: a uid that is not a safe folder name (letters, digits, ``.``, ``_``, ``-``).
    """
    if not _SAFE_NAME.fullmatch(uid):
        raise ValueError(f"workload uid {uid!r} is not a safe cgroup name")
    return uid


def detect(root: Path, parent: str = "crater", can_write: Callable[[Path], bool] = writable) -> CgroupSupport:
    """The cgroups available under ``root`` (normally ``/sys/fs/cgroup``); reads files, changes nothing.

    cgroup v2 when ``root/cgroup.controllers`` exists (its list names the controllers); else cgroup v1 with one
    folder per controller (``root/memory``, ``root/cpu`` - possibly a link to ``cpu,cpuacct`` - and ``root/pids``),
    as on hybrid systems, where an empty ``root/unified`` v2 hierarchy is ignored. A hierarchy counts only when
    ``can_write`` says Crater may create its parent there (the parent itself when it exists already).
    """
    root = Path(root)
    if not root.is_dir():
        return unavailable("not-mounted", parent)

    def usable(folder: Path) -> bool:
        target = folder / parent
        return can_write(target if target.is_dir() else folder)

    unified = root / "cgroup.controllers"
    if unified.is_file():
        try:
            offered = set(unified.read_text().split())
        except OSError:
            offered = set()
        found = [c for c in CONTROLLERS if c in offered]
        if not found:
            return unavailable("no-controllers", parent)
        if not usable(root):
            return unavailable("read-only", parent)
        return CgroupSupport(2, {c: root for c in found}, parent)
    mounted = {c: root / c for c in CONTROLLERS if (root / c / _V1_MARKERS[c]).is_file()}
    if not mounted:
        return unavailable("not-mounted", parent)
    usable_ones = {c: folder for c, folder in mounted.items() if usable(folder)}
    if not usable_ones:
        return unavailable("read-only", parent)
    missing = [c for c in CONTROLLERS if c not in usable_ones]
    reason = "" if not missing else "read-only" if any(c in mounted for c in missing) else "not-mounted"
    return CgroupSupport(1, usable_ones, parent, reason)


def prepare(support: CgroupSupport) -> CgroupSupport:
    """Create Crater's parent in each hierarchy (v2: and let the parent and its children use the controllers, by
    writing them to the ``cgroup.subtree_control`` of the root and of the parent). Returns ``support``, or one
    without cgroups (``setup-failed``) when the kernel refuses, e.g. a v2 root that holds processes itself."""
    if support.version is None:
        return support
    try:
        if support.version == 2:
            root = next(iter(support.hierarchies.values()))
            wanted = " ".join(f"+{c}" for c in CONTROLLERS if c in support.hierarchies)
            (root / "cgroup.subtree_control").write_text(wanted)
            (root / support.parent).mkdir(exist_ok=True)
            (root / support.parent / "cgroup.subtree_control").write_text(wanted)
        else:
            for folder in support.hierarchies.values():
                (folder / support.parent).mkdir(exist_ok=True)
    except OSError:
        return unavailable("setup-failed", support.parent)
    return support


def cpu_quota_us(cpu_m: int, period_us: int = CFS_PERIOD_US) -> int | None:
    """Microseconds of CPU time per ``period_us`` for ``cpu_m`` millicores (``None``: no quota, for 0)."""
    if cpu_m <= 0:
        return None
    return max(cpu_m * period_us // 1000, MIN_CFS_QUOTA_US)


def limit_files(version: int, memory_bytes: int, cpu_m: int, pids_max: int) -> dict[str, list[tuple[str, str, bool]]]:
    """The files to write, per controller: ``(file name, value, required)``; an optional file (swap, OOM group) is
    written only where the kernel offers it. ``0`` means no limit for each amount."""
    quota = cpu_quota_us(cpu_m)
    out: dict[str, list[tuple[str, str, bool]]] = {"memory": [], "cpu": [], "pids": []}
    if version == 2:
        if memory_bytes > 0:
            out["memory"] += [("memory.max", str(memory_bytes), True), ("memory.swap.max", "0", False)]
        out["memory"].append(("memory.oom.group", "1", False))  # an OOM kill ends the whole job, as kubelet sets it
        if quota is not None:
            out["cpu"].append(("cpu.max", f"{quota} {CFS_PERIOD_US}", True))
    else:
        if memory_bytes > 0:
            out["memory"] += [("memory.limit_in_bytes", str(memory_bytes), True),
                              ("memory.memsw.limit_in_bytes", str(memory_bytes), False)]
        if quota is not None:
            out["cpu"] += [("cpu.cfs_period_us", str(CFS_PERIOD_US), True), ("cpu.cfs_quota_us", str(quota), True)]
    if pids_max > 0:
        out["pids"].append(("pids.max", str(pids_max), True))
    return out


@dataclass(frozen=True)
class JobCgroup:
    """The cgroups of one workload: ``version``, ``folders`` (one per hierarchy) and ``memory`` (the folder with the
    memory controller, where the OOM kills are counted; ``None`` without one)."""

    version: int
    folders: tuple[Path, ...]
    memory: Path | None = None

    def to_json(self) -> dict:
        """A JSON-safe form (kept in the backend's store)."""
        return {"version": self.version, "folders": [str(f) for f in self.folders],
                "memory": None if self.memory is None else str(self.memory)}

    @classmethod
    def from_json(cls, data: object) -> JobCgroup | None:
        """The inverse of :meth:`to_json` (``None`` for anything else)."""
        if not isinstance(data, dict) or data.get("version") not in (1, 2):
            return None
        memory = data.get("memory")
        return cls(data["version"], tuple(Path(f) for f in data.get("folders") or ()),
                   Path(memory) if memory else None)

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer ended in this cgroup (0 when unknown or gone)."""
        if self.memory is None:
            return 0
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            text = (self.memory / name).read_text()
        except OSError:
            return 0
        found = re.search(r"^oom_kill (\d+)$", text, re.MULTILINE)
        return int(found.group(1)) if found else 0

    def pids(self) -> list[int]:
        """The processes in the cgroups now."""
        out: set[int] = set()
        for folder in self.folders:
            try:
                out.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                continue
        return sorted(out)

    def kill(self) -> None:
        """SIGKILL every process in the cgroups (v2: ``cgroup.kill`` where the kernel has it, 5.14+)."""
        for folder in self.folders:
            kill_file = folder / "cgroup.kill"
            if self.version == 2 and kill_file.exists():
                try:
                    kill_file.write_text("1")
                except OSError:
                    pass
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def age_s(self, now: float) -> float:
        """Seconds since the oldest of the folders was made (0 when none exists); ``now`` in epoch seconds."""
        made = []
        for folder in self.folders:
            try:
                made.append(folder.stat().st_mtime)
            except OSError:
                continue
        return now - min(made) if made else 0.0

    def remove(self) -> bool:
        """Remove the cgroup folders; ``False`` when one still holds processes (try again later)."""
        done = True
        for folder in self.folders:
            try:
                folder.rmdir()
            except FileNotFoundError:
                continue
            except OSError as exc:
                if exc.errno not in (errno.EBUSY, errno.ENOTEMPTY):
                    raise
                done = False
        return done


class CgroupBusy(Exception):
    """An earlier run's cgroup of the workload still holds processes: ``cgroup`` (its folders) and ``pids`` (what
    was still in it after SIGKILL and :data:`REUSE_WAIT_S`). Try again later."""

    def __init__(self, cgroup: JobCgroup, pids: list[int]) -> None:
        super().__init__(f"cgroup {cgroup.folders[0] if cgroup.folders else '?'} still holds {len(pids)} process(es)")
        self.cgroup = cgroup
        self.pids = pids


def clear(cgroup: JobCgroup, wait_s: float | None = None) -> None:
    """Empty and remove ``cgroup``: SIGKILL its processes (again at every look, as one may fork meanwhile), wait at
    most ``wait_s`` seconds (default :data:`REUSE_WAIT_S`) for them to exit, then remove its folders. Nothing to do
    when none exists.

    Raises:
        CgroupBusy: processes are still in it after ``wait_s``.
    """
    deadline = time.monotonic() + (REUSE_WAIT_S if wait_s is None else wait_s)
    while True:
        cgroup.kill()
        left = cgroup.pids()
        if not left and cgroup.remove():
            return
        if time.monotonic() >= deadline:
            raise CgroupBusy(cgroup, left)
        time.sleep(_POLL_S)


def create(support: CgroupSupport, uid: str, memory_bytes: int, cpu_m: int, pids_max: int,
           wait_s: float | None = None) -> tuple[JobCgroup, dict[str, int]]:
    """Create workload ``uid``'s cgroups with its limits; ``(the cgroups, limits in force)``, the limits as
    ``{"memory": bytes, "cpu": millicores, "pids": count}`` for the ones set. A half-made cgroup is removed again.

    A cgroup of the same name left by an earlier run of the workload (a requeued job keeps its uid; Crater may have
    stopped between that run's exit and the removal of its cgroup) is emptied and removed first (:func:`clear`),
    then made again, so that the new run starts with fresh limits and counters (its OOM kills are its own).

    Raises:
        CgroupBusy: the earlier run's processes had not exited after ``wait_s`` seconds (:func:`clear`). OSError: the kernel refused
            a folder or a value. ValueError: ``uid`` is not a safe folder name.
    """
    if support.version is None:
        raise ValueError("no cgroups to create")
    files = limit_files(support.version, memory_bytes, cpu_m, pids_max)
    folders = support.folders(uid)
    if any(folder.exists() for folder in folders):
        clear(of_workload(support, uid), wait_s)
    made: list[Path] = []
    try:
        for folder in folders:
            folder.mkdir()
            made.append(folder)
        for controller, root in support.hierarchies.items():
            folder = root / support.parent / cgroup_name(uid)
            for name, value, required in files[controller]:
                if required or (folder / name).exists():
                    (folder / name).write_text(value)
    except OSError:
        JobCgroup(support.version, tuple(made)).remove()
        raise
    memory_root = support.hierarchies.get("memory")
    cgroup = JobCgroup(support.version, folders,
                       None if memory_root is None else memory_root / support.parent / cgroup_name(uid))
    limits = {"memory": memory_bytes if memory_bytes > 0 and "memory" in support.hierarchies else 0,
              "cpu": cpu_m if cpu_quota_us(cpu_m) is not None and "cpu" in support.hierarchies else 0,
              "pids": pids_max if pids_max > 0 and "pids" in support.hierarchies else 0}
    return cgroup, {k: v for k, v in limits.items() if v}


def leftovers(support: CgroupSupport) -> Iterable[str]:
    """Names (workload uids) of the cgroups under Crater's parent now, in every hierarchy."""
    names: set[str] = set()
    for root in support.hierarchies.values():
        try:
            names.update(entry.name for entry in os.scandir(root / support.parent) if entry.is_dir())
        except OSError:
            continue
    return sorted(names)


def of_workload(support: CgroupSupport, uid: str) -> JobCgroup:
    """The cgroups workload ``uid`` has (or would have) under ``support``, whether or not they exist."""
    memory_root = support.hierarchies.get("memory")
    return JobCgroup(support.version or 1, support.folders(uid),
                     None if memory_root is None else memory_root / support.parent / cgroup_name(uid))
