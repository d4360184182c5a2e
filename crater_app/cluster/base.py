"""The boundary between Crater's services and whatever runs workloads (``ClusterBackend``) and its records.

It is shaped for a cluster and implemented naturally by both backends (DESIGN.md §3): ``local`` (processes on this
machine, :mod:`crater_app.cluster.local`) and ``kubernetes`` (Volcano Jobs and Queues, :mod:`crater_app.cluster.kube`).
A :class:`Workload` has tasks of replicas and a gang size; a backend reports :class:`Placement` s (task, replica,
node, devices) and statuses already mapped to Crater's phases with the backend's own state kept beside them; changes
come through an opaque cursor with a "re-list needed" signal (:class:`Changes`); :meth:`ClusterBackend.list_workloads`
lists in bulk for repair; logs are per replica; :meth:`ClusterBackend.ensure_queue` syncs a project's quota to the
backend's queue; inventory comes from a cache; what a backend can do is said by :data:`CAPABILITIES`, never by its
name. A contract test suite (``tests/service/test_backend_contract.py``) runs against every implementation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Mapping, Protocol, runtime_checkable

from crater_app.domain import job_kinds
from crater_app.domain.job_tasks import SINGLE_TASK, totals
from crater_app.domain.jobs import JobPhase
from crater_app.domain.quota import Quota
from crater_app.domain.resources import ResourceList

# -- capabilities: what a backend can do (ClusterBackend.capabilities) --------------------------------------------
#: commands run in this machine's own environment (the image is recorded, not pulled); jobs run as OS accounts
HOST_PROCESSES = "host_processes"
#: each task runs in the container image it names
RUNS_IMAGES = "runs_images"
#: the backend stops a workload at its ``max_runtime_s`` by itself
ENFORCES_DEADLINES = "enforces_deadlines"
#: the replicas of one workload may run on several nodes
MULTI_NODE = "multi_node"
#: :meth:`ClusterBackend.ensure_queue` keeps a queue object in the backend (Volcano Queue)
QUEUES = "queues"
#: :meth:`ClusterBackend.manifests` gives the objects made for a workload
MANIFESTS = "manifests"
#: a workload may mount a registered PersistentVolumeClaim
PVC_VOLUMES = "pvc_volumes"
CAPABILITIES = frozenset({HOST_PROCESSES, RUNS_IMAGES, ENFORCES_DEADLINES, MULTI_NODE, QUEUES, MANIFESTS,
                          PVC_VOLUMES})

#: what a workload does when one of its replicas fails or is evicted (Volcano ``policies``: ``RestartJob``,
#: ``TerminateJob`` → failed, none → ignore): the job spec's rule, :data:`crater_app.domain.job_kinds.RESTART_POLICIES`
RESTART_POLICIES = job_kinds.RESTART_POLICIES


@dataclass(frozen=True)
class Device:
    """One accelerator: ``index`` on its node, ``resource`` name (``nvidia.com/gpu``), ``model``,
    ``memory_bytes`` (0 when unknown), ``uuid`` (NVML UUID, ``virtual-<n>``, or ``<node>/<resource>/<n>`` for a
    device the Kubernetes API counts but does not name), ``virtual`` (declared, not discovered)."""

    index: int
    resource: str
    model: str
    memory_bytes: int
    uuid: str
    virtual: bool = False


@dataclass(frozen=True)
class NodeInventory:
    """A node's capacity: ``cpu_m`` millicores, ``memory_bytes`` bytes, ``devices``; ``source`` says where
    the devices came from (``nvml``, ``CRATER_LOCAL_GPUS``, ``kubernetes``, ``none``); ``allocations`` maps device
    index to the workload uid holding it (a ``Running`` or ``Stopping`` one; a backend that cannot tell which device
    a workload holds gives the lowest free indices); ``cpu_m_allocated``/``memory_bytes_allocated`` what those
    workloads requested. ``enforcement`` maps a resource (``memory``, ``cpu``, ``pids``) to how the node enforces a
    workload's limit (``cgroup v1``, ``cgroup v2``, ``RLIMIT_DATA``, ``kubelet``; absent: not enforced);
    ``isolation`` is the trust model jobs run under (local backend: ``os-account``, ``not-root``, ``no-tools``,
    ``off``; ``container`` on Kubernetes; ``""`` when the backend does not say). ``schedulable`` is false for a node
    that takes no new work: cordoned, ``NotReady``, or tainted ``NoSchedule``/``NoExecute`` (``conditions`` says
    which, as words: ``cordoned``, ``NotReady``, ``taint:<key>=<value>:<effect>``); ``labels`` the node's labels
    (the local backend gives its node the kubelet's ``kubernetes.io/hostname``, ``kubernetes.io/os`` and
    ``kubernetes.io/arch``)."""

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
    schedulable: bool = True
    conditions: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class Port:
    """A port a task's replicas listen on: ``name`` (DNS-1123 label, at most 15 characters as Kubernetes wants
    for a port name), ``port`` 1..65535, ``protocol`` ``TCP`` or ``UDP``."""

    name: str
    port: int
    protocol: str = "TCP"


@dataclass(frozen=True)
class Task:
    """One kind of replica of a workload: ``name`` (DNS-1123 label, unique in the workload), ``replicas`` (>= 1),
    ``image``, ``command`` (argv list; the container's entrypoint where the backend runs images) and ``args``
    (appended to it), ``env``, ``working_dir``, ``resources`` per replica (millicores, bytes, devices), ``ports``;
    ``ends_job``: the workload ends (as this task ended) once all of this task's replicas have finished, the other
    tasks' replicas being stopped (Volcano's ``TaskCompleted`` -> ``CompleteJob`` policy: a PyTorch master, an MPI
    launcher); without such a task the workload ends when every replica has.
    """

    name: str
    replicas: int
    image: str
    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict, hash=False)
    working_dir: str | None = None
    resources: ResourceList = field(default_factory=ResourceList)
    ports: tuple[Port, ...] = ()
    args: tuple[str, ...] = ()
    ends_job: bool = False

    @property
    def argv(self) -> tuple[str, ...]:
        """What one replica runs: ``command`` then ``args``."""
        return self.command + self.args


@dataclass(frozen=True)
class Volume:
    """Storage mounted into every replica at ``mount_path`` (absolute). ``source``: ``project`` (the project's
    space), ``user`` (the user's space), ``pvc`` (the registered PersistentVolumeClaim ``claim``); ``sub_path``
    inside it (relative, no ``..``); ``read_only`` where the role or the spec says so."""

    source: str
    mount_path: str
    sub_path: str = ""
    read_only: bool = False
    claim: str = ""


@dataclass(frozen=True)
class Workload:
    """What services ask a backend to run.

    ``uid`` is the idempotency key (and the ``crater.io/job-uid`` label: the job's uid, the same for every attempt);
    ``name``, ``project``, ``user`` as Crater knows them (a backend makes its own safe names and labels from them:
    :mod:`crater_app.domain.naming`); ``kind`` ``batch``, ``pytorch``, ``mpi`` or ``interactive``; ``tasks`` at least
    one; ``min_available`` the gang: how many replicas must be placed together before any starts (``None``: all);
    ``accelerator_model`` every replica's device model (node affinity on the model label); ``max_runtime_s``
    seconds or ``None``; ``created_at`` UTC (orders the queue after ``priority``); ``attempt`` the job's run (1 for
    the first; a job preempted and requeued by Crater runs again as attempt 2, 3, ... under the same uid);
    ``queue`` the backend queue it is submitted to (``""``: the project's, :meth:`ClusterBackend.ensure_queue`);
    ``restart_policy`` one of :data:`RESTART_POLICIES` and ``max_retry`` how many restarts it allows;
    ``volumes``; ``shm_size_bytes`` a memory-backed ``/dev/shm`` of that many bytes (``None``: the backend's
    default); ``node_selector`` node labels every replica's node must have; ``ttl_after_finished_s`` how long the
    backend keeps the finished workload's objects (``None``: until Crater deletes them).
    """

    uid: str
    name: str
    project: str
    user: str
    tasks: tuple[Task, ...]
    created_at: datetime
    kind: str = "batch"
    min_available: int | None = None
    accelerator_model: str | None = None
    max_runtime_s: int | None = None
    priority: int = 0
    attempt: int = 1
    queue: str = ""
    restart_policy: str = "fail"
    max_retry: int = 0
    volumes: tuple[Volume, ...] = ()
    shm_size_bytes: int | None = None
    node_selector: dict[str, str] = field(default_factory=dict, hash=False)
    ttl_after_finished_s: int | None = None

    @classmethod
    def single(cls, *, image: str, command: tuple[str, ...], env: dict[str, str] | None = None,
               working_dir: str | None = None, resources: ResourceList | None = None, task: str = SINGLE_TASK,
               **fields) -> "Workload":
        """A workload of one task of one replica (the single-task form of a job spec); ``fields`` are the
        :class:`Workload` fields other than ``tasks``."""
        return cls(tasks=(Task(name=task, replicas=1, image=image, command=tuple(command), env=dict(env or {}),
                               working_dir=working_dir, resources=resources or ResourceList()),), **fields)

    @property
    def replica_count(self) -> int:
        """Replicas of all tasks together."""
        return sum(t.replicas for t in self.tasks)

    @property
    def gang(self) -> int:
        """How many replicas start together: ``min_available``, or all of them."""
        return self.min_available if self.min_available is not None else self.replica_count

    @property
    def resources(self) -> ResourceList:
        """What all replicas request together (millicores, bytes, devices per resource name)."""
        return totals(self.tasks)


@dataclass(frozen=True)
class Placement:
    """Where one replica runs: task name, replica index (0-based), node name and device indices on that node."""

    task: str
    replica: int
    node: str
    devices: tuple[int, ...] = ()


@dataclass(frozen=True)
class ReplicaStatus:
    """One replica as the backend sees it: ``phase`` (``Pending``, ``Running``, ``Succeeded``, ``Failed``,
    ``Stopped`` for one the platform stopped - its reason says why - or the backend's word), ``node`` (``""``
    before placement), ``exit_code``, ``reason`` (CamelCase: ``OOMKilled``,
    ``Evicted``, ``ImagePullBackOff``, ``Unschedulable``, ...), ``message``, ``restarts``."""

    task: str
    replica: int
    phase: str
    node: str = ""
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    restarts: int = 0


@dataclass(frozen=True)
class WorkloadStatus:
    """Backend view of a workload, already in Crater's terms.

    ``phase`` is Crater's (:class:`~crater_app.domain.jobs.JobPhase`: ``Queued`` while the backend has not placed
    it, ``Running``, ``Stopping`` (a stop was asked for and replicas are still exiting; its devices are still held),
    ``Succeeded``, ``Failed``, ``Cancelled``), or ``None`` for a backend state with no Crater phase (the caller keeps
    it verbatim); ``raw_state`` the backend's own word (local: ``Pending``, ``Running``, ...; Kubernetes: the Volcano
    Job phase, ``Completing``, ``Aborted``, ...). ``reason`` CamelCase (``Completed``, ``Error`` for a non-zero exit,
    ``Signaled``, ``OOMKilled``, ``DeadlineExceeded``, ``Cancelled``, ``ProcessLost``, ``StartError``, ``Evicted``;
    while ``Stopping``: ``CancelRequested`` or ``DeadlineExceeded``), ``message`` an English sentence or the
    backend's own text; ``code``/``args`` the same message as a catalogue code (``event.<code>``) and its arguments,
    ``""`` when the backend has only text; ``placements`` where each placed replica runs; ``replicas`` each
    replica's own status (``()`` when the backend has none yet); ``exit_code`` as a shell reports it (``128 + n`` for
    signal ``n``) and ``exit_signal`` the signal that ended the process, if one did; ``attempt`` the workload's run
    this status belongs to (a status of an earlier attempt is history: the caller ignores it)."""

    uid: str
    phase: JobPhase | None
    raw_state: str
    reason: str
    message: str
    exit_code: int | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    code: str = ""
    args: dict = field(default_factory=dict, hash=False, compare=False)
    exit_signal: int | None = None
    attempt: int = 1
    placements: tuple[Placement, ...] = ()
    replicas: tuple[ReplicaStatus, ...] = ()

    @property
    def devices(self) -> tuple[int, ...]:
        """The device indices of every placement, in placement order (on one node: the workload's devices)."""
        return tuple(d for p in self.placements for d in p.devices)

    @property
    def nodes(self) -> tuple[str, ...]:
        """The nodes the workload's replicas run on, each once, in placement order."""
        return tuple(dict.fromkeys(p.node for p in self.placements))


@dataclass(frozen=True)
class Changes:
    """One read of a backend's watch: ``statuses`` changed since the cursor given (oldest change first; a workload
    may appear once per change), ``cursor`` to pass next time (opaque), ``relist`` true when the cursor given is no
    longer valid (too old, or the backend's history restarted): the caller replaces its view with
    :meth:`ClusterBackend.list_workloads` and then goes on from ``cursor``."""

    statuses: tuple[WorkloadStatus, ...]
    cursor: str
    relist: bool = False


@runtime_checkable
class ClusterBackend(Protocol):
    """What services need from a cluster. All methods are synchronous and thread-safe; none of them makes a
    synchronous call to a remote cluster on the submit path (:meth:`inventory`, :meth:`capacity`, :meth:`status`,
    :meth:`changes` and :meth:`list_workloads` read the backend's own cache)."""

    name: str
    #: what this backend can do (a subset of :data:`CAPABILITIES`)
    capabilities: frozenset[str]

    def inventory(self) -> list[NodeInventory]:
        """Nodes with capacity and current device allocations."""

    def capacity(self) -> list[NodeInventory]:
        """The nodes without their allocations (cheaper than :meth:`inventory`): what a submission's fit checks and
        admission's machine capacity read."""

    def create(self, workload: Workload) -> None:
        """Submit ``workload``; a second call with the same uid and attempt is a no-op (idempotent: one uid never
        makes two objects). A call with a higher ``attempt`` for a uid whose last run is final (``Succeeded``,
        ``Failed``, ``Cancelled``) starts its next run: ``Queued`` again under the same uid, statuses with the new
        ``attempt``; while the last run is not final such a call is a no-op."""

    def create_many(self, workloads: list[Workload]) -> None:
        """:meth:`create` for several workloads at once (one transaction where the backend has them)."""

    def cancel(self, uid: str, reason: str, *, code: str = "", args: dict | None = None) -> None:
        """Stop the workload (graceful, then forced): a queued one ends ``Cancelled`` at once; a running one is
        ``Stopping``, holding its devices, until its last replica has exited, then ``Cancelled`` with the exit
        status it died with (``exit_code`` 143 and ``exit_signal`` 15 for SIGTERM, where the backend knows it). The
        ``Cancelled`` status carries ``code`` and ``args`` (a catalogue code, ``event.<code>``, e.g.
        ``job.cancelled_by`` with the ``user``) and ``reason`` (the same in English) as its message. Unknown uids
        raise ``KeyError``."""

    def extend(self, uid: str, max_runtime_s: int) -> None:
        """Set the workload's ``max_runtime`` to ``max_runtime_s`` seconds, counted from its start: its deadline
        moves (later or earlier) without a restart. No effect on a finished workload, nor on one already being
        stopped for its old deadline. Unknown uids raise ``KeyError``."""

    def changes(self, cursor: str = "", limit: int = 1000) -> Changes:
        """Statuses changed after ``cursor`` (``""``: from the beginning of what the backend keeps), at most
        ``limit`` of them, and the cursor to go on from (a watch)."""

    def list_workloads(self) -> list[WorkloadStatus]:
        """The current status of every workload the backend knows (a bulk list, for repair and re-lists)."""

    def status(self, uid: str) -> WorkloadStatus | None:
        """Current status of one workload, or ``None`` if the backend does not know it."""

    def read_logs(self, uid: str, tail_bytes: int = 65536, *, task: str | None = None, replica: int = 0) -> str:
        """The last ``tail_bytes`` of one replica's combined stdout/stderr (``task`` ``None``: the first task;
        ``""`` when there is none yet or the uid, task or replica is unknown)."""

    def ensure_queue(self, project: str, quota: Quota, shares: Mapping[str, Quota] | None = None) -> None:
        """Make the backend's queue of ``project`` say ``quota`` (``capability``/``deserved``/``guarantee``), with a
        child queue per member in ``shares`` (user name -> the member's share as a capability); creates, updates or
        repairs it. A backend without :data:`QUEUES` accepts and ignores it (Crater's admission enforces the quota)."""

    def manifests(self, uid: str) -> list[dict]:
        """The objects the backend made for ``uid`` as Kubernetes objects (``[]`` for a backend without
        :data:`MANIFESTS` or an unknown uid)."""

    def tick(self) -> None:
        """Do one round of the backend's own work (local: placement, deadlines, exits; Kubernetes: apply what the
        watches brought, retry what failed). Leader only."""

    def adopt(self) -> None:
        """After a restart: re-adopt running workloads or mark them Failed with the reason (local), or re-list
        (Kubernetes). Leader only."""
