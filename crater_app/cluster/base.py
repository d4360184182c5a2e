"""The boundary between Crater's services and whatever runs workloads (``ClusterBackend``) and its records.

Backends: ``local`` (processes on this machine, :mod:`crater_app.cluster.local`) and, later, Kubernetes +
Volcano. A contract test suite (``tests/service/test_backend_contract.py``) runs against every implementation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from crater_app.domain.resources import ResourceList


@dataclass(frozen=True)
class Device:
    """One accelerator: ``index`` on its node, ``resource`` name (``nvidia.com/gpu``), ``model``,
    ``memory_bytes``, ``uuid`` (NVML UUID or ``virtual-<n>``), ``virtual`` (declared, not discovered)."""

    index: int
    resource: str
    model: str
    memory_bytes: int
    uuid: str
    virtual: bool = False


@dataclass(frozen=True)
class NodeInventory:
    """A node's capacity: ``cpu_m`` millicores, ``memory_bytes`` bytes, ``devices``; ``source`` says where
    the devices came from (``nvml``, ``CRATER_LOCAL_GPUS``, ``none``); ``allocations`` maps device index to
    the workload uid holding it (a ``Running`` or ``Stopping`` one); ``cpu_m_allocated``/``memory_bytes_allocated``
    what those workloads requested. ``enforcement`` maps a resource (``memory``, ``cpu``, ``pids``) to how the node
    enforces a workload's limit (``cgroup v1``, ``cgroup v2``, ``RLIMIT_DATA``; absent: not enforced);
    ``isolation`` is the trust model jobs run under (local backend: ``os-account``, ``not-root``, ``no-tools``,
    ``off``; ``""`` when the backend does not say)."""

    name: str
    cpu_m: int
    memory_bytes: int
    devices: tuple[Device, ...]
    source: str
    allocations: dict[int, str] = field(default_factory=dict)
    cpu_m_allocated: int = 0
    memory_bytes_allocated: int = 0
    enforcement: dict[str, str] = field(default_factory=dict)
    isolation: str = ""


@dataclass(frozen=True)
class Workload:
    """What services ask a backend to run. ``uid`` is the idempotency key (and the ``crater.io/job-uid`` label: the
    job's uid, the same for every attempt); ``command`` an argv list; ``max_runtime_s`` seconds or ``None``;
    ``created_at`` UTC (orders the queue after ``priority``); ``attempt`` the job's run (1 for the first; a job
    preempted and requeued by Crater runs again as attempt 2, 3, ... under the same uid)."""

    uid: str
    name: str
    project: str
    user: str
    image: str
    command: tuple[str, ...]
    env: dict[str, str]
    working_dir: str | None
    resources: ResourceList
    accelerator_model: str | None
    max_runtime_s: int | None
    priority: int
    created_at: datetime
    attempt: int = 1


@dataclass(frozen=True)
class WorkloadStatus:
    """Backend view of a workload. ``state`` is a backend word: ``Pending``, ``Running``, ``Stopping`` (a stop
    was asked for and processes are still exiting; its devices are still held), ``Succeeded``, ``Failed``,
    ``Cancelled`` (others pass through verbatim); ``reason`` CamelCase (``Completed``, ``Error`` for a non-zero
    exit, ``Signaled`` for a death by signal, ``OOMKilled`` when the memory limit was exceeded, ``DeadlineExceeded``,
    ``Cancelled``, ``ProcessLost``, ``StartError``; while ``Stopping``: ``CancelRequested`` or ``DeadlineExceeded``),
    ``message`` an English sentence or the backend's own text; ``code``/``args`` the same message as a catalogue
    code (``event.<code>``) and its arguments, ``""`` when the backend has only text; ``devices`` assigned indices;
    ``exit_code`` as a shell reports it (``128 + n`` for signal ``n``) and ``exit_signal`` the signal that ended
    the process, if one did; ``rev`` increases with every change (a watch cursor); ``attempt`` the workload's run
    this status belongs to (a status of an earlier attempt is history: the caller ignores it)."""

    uid: str
    state: str
    reason: str
    message: str
    exit_code: int | None
    devices: tuple[int, ...]
    started_at: datetime | None
    finished_at: datetime | None
    rev: int
    code: str = ""
    args: dict = field(default_factory=dict, hash=False, compare=False)
    exit_signal: int | None = None
    attempt: int = 1


@runtime_checkable
class ClusterBackend(Protocol):
    """What services need from a cluster. All methods are synchronous and thread-safe.

    A backend may also offer ``capacity() -> list[NodeInventory]``: the nodes without their allocations, cheaper
    than :meth:`inventory` (read where only what the nodes have matters: submissions' fit checks, admission's machine
    capacity); without it, :meth:`inventory` is used (``crater_app.services.nodes.capacity``).
    """

    name: str

    def inventory(self) -> list[NodeInventory]:
        """Nodes with capacity and current device allocations."""

    def create(self, workload: Workload) -> None:
        """Submit ``workload``; a second call with the same uid and attempt is a no-op (idempotent). A call with a
        higher ``attempt`` for a uid whose last run is final (``Succeeded``, ``Failed``, ``Cancelled``) starts its
        next run: ``Pending`` again under the same uid (the same working folder and log, which goes on), statuses
        with the new ``attempt``; while the last run is not final such a call is a no-op."""

    def create_many(self, workloads: list[Workload]) -> None:
        """:meth:`create` for several workloads at once (one transaction where the backend has them)."""

    def cancel(self, uid: str, reason: str, *, code: str = "", args: dict | None = None) -> None:
        """Stop the workload (graceful, then forced): a pending one ends ``Cancelled`` at once; a running one is
        ``Stopping``, holding its devices, until its last process has exited, then ``Cancelled`` with the exit
        status it died with (``exit_code`` 143 and ``exit_signal`` 15 for SIGTERM). The ``Cancelled`` status
        carries ``code`` and ``args`` (a catalogue code, ``event.<code>``, e.g. ``job.cancelled_by`` with the
        ``user``) and ``reason`` (the same in English) as its message. Unknown uids raise ``KeyError``."""

    def extend(self, uid: str, max_runtime_s: int) -> None:
        """Set the workload's ``max_runtime`` to ``max_runtime_s`` seconds, counted from its start: its deadline
        moves (later or earlier) without a restart. No effect on a finished workload, nor on one already being
        stopped for its old deadline. Unknown uids raise ``KeyError``."""

    def changes(self, since_rev: int, limit: int = 1000) -> list[WorkloadStatus]:
        """Statuses whose ``rev`` is greater than ``since_rev``, oldest change first (a watch)."""

    def status(self, uid: str) -> WorkloadStatus | None:
        """Current status of one workload, or ``None`` if the backend does not know it."""

    def read_logs(self, uid: str, tail_bytes: int = 65536) -> str:
        """The last ``tail_bytes`` of the workload's combined stdout/stderr ("" when none yet)."""

    def tick(self) -> None:
        """Do one round of the backend's own work (placement, deadlines, exits). Leader only."""

    def adopt(self) -> None:
        """After a restart: re-adopt running workloads or mark them Failed with the reason. Leader only."""
