"""A job's tasks: the ``tasks`` list of a :class:`~crater_app.domain.jobs.JobSpec` (:class:`TaskSpec`), the checks of
each task's fields, and the normalized tasks services hand to a backend (:class:`TaskPlan`, :func:`normalize_tasks`).

A task is one kind of replica (Volcano's ``tasks[]``): ``name`` (DNS-1123 label, unique in the job), ``replicas``
(1..:data:`MAX_REPLICAS_PER_TASK`), ``image``, ``command`` (argv list) and ``args`` (appended to it), ``env``,
``working_dir``, ``resources`` per replica and ``ports``. A job has 1..:data:`MAX_TASKS` tasks and at most
:data:`MAX_REPLICAS` replicas together. The single-task form (top-level ``image``/``command``/``env``/
``working_dir``/``resources``, no ``tasks``) is one task ``main`` of one replica.

Every error names the field by its full path (``tasks[1].ports[0].port``; the single-task form keeps today's paths:
``command[0]``, ``resources.memory``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Sequence

from pydantic import BaseModel, ConfigDict, Field, Strict, StrictInt, StrictStr

from crater_app.domain import field_paths
from crater_app.domain.errors import InvalidInput
from crater_app.domain.naming import check_dns1123_label, is_text
from crater_app.domain.resources import ResourceList, canonical_resources, parse_resources

if TYPE_CHECKING:  # jobs imports this module
    from crater_app.domain.jobs import JobSpec

MAX_COMMAND_ARGS = 256
MAX_ARG_CHARS = 8192
MAX_COMMAND_BYTES = 64 * 1024
MAX_ENV_VARS = 128
MAX_ENV_VALUE_CHARS = 8192
MAX_IMAGE_CHARS = 255
MAX_WORKING_DIR_CHARS = 255
MAX_PATH_COMPONENT_BYTES = 255  # NAME_MAX: a longer folder name cannot be created
DEFAULT_IMAGE = "local/host"
#: the task of the single-task form
SINGLE_TASK = "main"
#: tasks of one job: a master, workers, a parameter server, an evaluator ... (Kubeflow's operators have at most four
#: replica types); 16 leaves room without making a Volcano Job object of hundreds of pod templates
MAX_TASKS = 16
#: a task name's length: on Kubernetes a replica's pod (and host) name is ``<job>-<task>-<index>``, a DNS-1123 label
#: of at most 63 characters; the job's name takes 23 (``crater-`` + 16 hex digits) and the index of the 1,024th
#: replica 4 more, which leaves 34 (``cluster.kube.object_names.max_task_name_chars``)
MAX_TASK_NAME_CHARS = 32
#: replicas of one task, and of all tasks of a job together (a job of thousands of pods is a scheduler's stress test,
#: not a workload a project submits through a form)
MAX_REPLICAS_PER_TASK = 1024
MAX_REPLICAS = 4096
#: ports of one task (Kubernetes has no limit; a replica that listens on more is not a training job)
MAX_PORTS = 16
#: a port name is an IANA service name as Kubernetes checks it (``IsValidPortName``): at most 15 characters, lower-case
#: letters, digits and ``-``, at least one letter, no ``-`` at either end and no ``--``
MAX_PORT_NAME_CHARS = 15
PROTOCOLS = ("TCP", "UDP")
# Environment names the platform sets itself; a spec may not override them (the rendezvous variables of the
# pytorch kind are set per replica, as Volcano's pytorch plugin does).
RESERVED_ENV = frozenset({"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CRATER_JOB_UID"})

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Docker/OCI image reference, simplified from distribution/reference: [host[:port]/]path[:tag][@digest]; the first
# component is a host only when it has a '.' or a ':port' or is 'localhost' (else it is a lower-case path component).
_IMAGE = re.compile(
    r"^(?:(?:[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+|localhost)(?::[0-9]+)?/|[a-zA-Z0-9-]+:[0-9]+/)?[a-z0-9]+(?:[._-]{1,2}[a-z0-9]+)*(?:/[a-z0-9]+(?:[._-]{1,2}[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$"
)
_PORT_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")


class PortSpec(BaseModel):
    """A port a task's replicas listen on: ``name`` (IANA service name, at most 15 characters), ``port``
    1..65535, ``protocol`` ``TCP`` (default) or ``UDP``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: StrictStr
    port: StrictInt
    protocol: StrictStr = "TCP"


class TaskSpec(BaseModel):
    """One entry of ``tasks`` (see the module docstring). Unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: StrictStr
    replicas: StrictInt = 1
    image: StrictStr = DEFAULT_IMAGE
    command: Annotated[list[StrictStr], Strict()]
    args: Annotated[list[StrictStr], Strict()] = Field(default_factory=list)
    env: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    working_dir: StrictStr | None = None
    resources: dict[StrictStr, Any] = Field(default_factory=dict)  # quantities: checked by parse_resources
    ports: list[PortSpec] = Field(default_factory=list)


@dataclass(frozen=True)
class TaskPort:
    """A normalized port (the shape of :class:`crater_app.cluster.base.Port`)."""

    name: str
    port: int
    protocol: str = "TCP"


@dataclass(frozen=True)
class TaskPlan:
    """One normalized task, the shape of :class:`crater_app.cluster.base.Task` (``Task(**plan.task_fields())``):
    ``name``, ``replicas``, ``image``, ``command`` and ``args`` (argv tuples), ``env``, ``working_dir``,
    ``resources`` per replica (millicores, bytes, devices), ``ports``, ``ends_job`` (the task's end ends the job:
    a PyTorch master, an MPI launcher); ``path`` is where the task is in the spec (``tasks[1]``; ``""`` for the
    single-task form), the prefix of its errors' fields."""

    name: str
    replicas: int
    image: str
    command: tuple[str, ...]
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict, hash=False)
    working_dir: str | None = None
    resources: ResourceList = field(default_factory=ResourceList)
    ports: tuple[TaskPort, ...] = ()
    ends_job: bool = False
    path: str = ""

    def field(self, *parts: str | int) -> str:
        """The full path of one of this task's fields: ``field("resources", "memory")`` ->
        ``tasks[1].resources.memory`` (``resources.memory`` in the single-task form)."""
        path = self.path
        for part in parts:
            path = field_paths.item(path, part) if isinstance(part, int) else field_paths.key(path, part)
        return path

    def task_fields(self) -> dict:
        """Its fields as keyword arguments of :class:`crater_app.cluster.base.Task` (ports as ``TaskPort``: the
        caller maps them to ``Port``)."""
        return {"name": self.name, "replicas": self.replicas, "image": self.image, "command": self.command,
                "args": self.args, "env": dict(self.env), "working_dir": self.working_dir,
                "resources": self.resources, "ports": self.ports, "ends_job": self.ends_job}


@dataclass(frozen=True)
class JobTasks:
    """The normalized tasks of a job: ``tasks`` in spec order, ``min_available`` (the gang, resolved: all replicas
    when the spec gives none), ``totals`` what all replicas request together (millicores, bytes, devices per
    resource name: what quotas, admission and usage count)."""

    tasks: tuple[TaskPlan, ...]
    min_available: int
    totals: ResourceList

    @property
    def replica_count(self) -> int:
        """Replicas of all tasks together."""
        return sum(t.replicas for t in self.tasks)


def totals(tasks: Sequence) -> ResourceList:
    """What all replicas of ``tasks`` request together (each task's per-replica ``resources`` times its
    ``replicas``): of :class:`TaskPlan` s, or of the backend boundary's ``Task`` s (the same two fields)."""
    accelerators: dict[str, int] = {}
    for t in tasks:
        for name, count in t.resources.accelerators.items():
            accelerators[name] = accelerators.get(name, 0) + count * t.replicas
    return ResourceList(cpu_m=sum(t.resources.cpu_m * t.replicas for t in tasks),
                        memory_bytes=sum(t.resources.memory_bytes * t.replicas for t in tasks),
                        accelerators=accelerators)


def _path(prefix: str, name: str) -> str:
    return field_paths.key(prefix, name) if prefix else name


def check_command(command: list[str], path: str = "command") -> None:
    """An argv list: 1..256 arguments of valid text without NUL, each at most 8192 characters, 64 KiB together,
    the program not blank.

    Raises:
        InvalidInput: ``job.command_*`` naming ``path`` or ``path[i]``.
    """
    if not command:
        raise InvalidInput("job.command_empty", path)
    check_args(command, path)
    if not command[0].strip():
        raise InvalidInput("job.command_program_blank", field_paths.item(path, 0))


def check_args(args: list[str], path: str) -> None:
    """The argument rules of :func:`check_command` without the first two (``args`` may be empty)."""
    if len(args) > MAX_COMMAND_ARGS:
        raise InvalidInput("job.command_args", path, count=len(args), max=MAX_COMMAND_ARGS)
    total = 0
    for i, arg in enumerate(args):
        total += len(arg.encode("utf-8", "surrogatepass"))
        if len(arg) > MAX_ARG_CHARS:
            raise InvalidInput("job.command_arg_length", field_paths.item(path, i), index=i, length=len(arg),
                               max=MAX_ARG_CHARS)
        if "\x00" in arg:
            raise InvalidInput("job.command_arg_nul", field_paths.item(path, i), index=i)
        if not is_text(arg):
            raise InvalidInput("job.command_arg_text", field_paths.item(path, i), index=i)
    if total > MAX_COMMAND_BYTES:
        raise InvalidInput("job.command_bytes", path, size=total, max=MAX_COMMAND_BYTES)


def check_env(env: dict[str, str], path: str = "env") -> None:
    """At most 128 variables, POSIX names (not :data:`RESERVED_ENV`), values of at most 8192 characters of text.

    Raises:
        InvalidInput: ``job.env_*`` naming ``path`` or ``path.<name>``.
    """
    if len(env) > MAX_ENV_VARS:
        raise InvalidInput("job.env_count", path, count=len(env), max=MAX_ENV_VARS)
    for key, value in env.items():
        if not _ENV_NAME.fullmatch(key) or len(key) > 128:
            raise InvalidInput("job.env_name", field_paths.key(path, key), name=field_paths.shown(key), max=128)
        if key in RESERVED_ENV:
            raise InvalidInput("job.env_reserved", field_paths.key(path, key), name=key)
        if len(value) > MAX_ENV_VALUE_CHARS or "\x00" in value or not is_text(value):
            raise InvalidInput("job.env_value", field_paths.key(path, key), name=key, length=len(value),
                               max=MAX_ENV_VALUE_CHARS)


def check_working_dir(value: str | None, path: str = "working_dir") -> None:
    """A relative path inside the job's directory (no leading ``/``, no ``..``), at most 255 characters of text,
    each folder name at most 255 bytes.

    Raises:
        InvalidInput: ``job.working_dir_*`` naming ``path``.
    """
    if value is None:
        return
    if len(value) > MAX_WORKING_DIR_CHARS or "\x00" in value or not is_text(value):
        raise InvalidInput("job.working_dir_text", path, max=MAX_WORKING_DIR_CHARS)
    parts = value.replace("\\", "/").split("/")
    if any(len(part.encode("utf-8")) > MAX_PATH_COMPONENT_BYTES for part in parts):
        raise InvalidInput("job.working_dir_component", path, max=MAX_PATH_COMPONENT_BYTES)
    if value.startswith("/") or ".." in parts:
        raise InvalidInput("job.working_dir_relative", path)


def check_image(image: str, path: str = "image") -> None:
    """An image reference (``[host[:port]/]path[:tag][@sha256:digest]``, at most 255 characters).

    Raises:
        InvalidInput: ``job.image_format`` naming ``path``.
    """
    if len(image) > MAX_IMAGE_CHARS or not _IMAGE.fullmatch(image):
        raise InvalidInput("job.image_format", path, max=MAX_IMAGE_CHARS)


def check_ports(ports: list[PortSpec], path: str) -> tuple[TaskPort, ...]:
    """A task's ports: at most :data:`MAX_PORTS`; names IANA service names (:data:`MAX_PORT_NAME_CHARS`), unique;
    numbers 1..65535, unique per protocol; protocol one of :data:`PROTOCOLS` (Kubernetes' container port rules).

    Raises:
        InvalidInput: ``job.port_count`` (``count``, ``max``) naming ``path``; naming ``path[j].name``:
            ``job.port_name`` (``max``), ``job.port_name_duplicate`` (``name``); ``path[j].port``:
            ``job.port_number`` (``value``, ``min``, ``max``), ``job.port_number_duplicate`` (``port``,
            ``protocol``); ``path[j].protocol``: ``job.port_protocol`` (``protocols``, ``value``).
    """
    if len(ports) > MAX_PORTS:
        raise InvalidInput("job.port_count", path, count=len(ports), max=MAX_PORTS)
    names: set[str] = set()
    numbers: set[tuple[int, str]] = set()
    out = []
    for j, port in enumerate(ports):
        at = field_paths.item(path, j)
        name = port.name
        if (len(name) > MAX_PORT_NAME_CHARS or not _PORT_NAME.fullmatch(name) or "--" in name
                or not any(ch.isalpha() for ch in name)):
            raise InvalidInput("job.port_name", f"{at}.name", max=MAX_PORT_NAME_CHARS)
        if name in names:
            raise InvalidInput("job.port_name_duplicate", f"{at}.name", name=name)
        if not 1 <= port.port <= 65535:
            raise InvalidInput("job.port_number", f"{at}.port", value=port.port, min=1, max=65535)
        if port.protocol not in PROTOCOLS:
            raise InvalidInput("job.port_protocol", f"{at}.protocol", protocols=", ".join(PROTOCOLS),
                               value=port.protocol[:16])
        if (port.port, port.protocol) in numbers:
            raise InvalidInput("job.port_number_duplicate", f"{at}.port", port=port.port, protocol=port.protocol)
        names.add(name)
        numbers.add((port.port, port.protocol))
        out.append(TaskPort(name, port.port, port.protocol))
    return tuple(out)


def check_task(task: TaskSpec, path: str) -> TaskPlan:
    """One entry of ``tasks`` at ``path`` (``tasks[1]``) checked and normalized (``ends_job`` false: the kind
    decides, :mod:`crater_app.domain.job_kinds`).

    Raises:
        InvalidInput: naming ``path.name`` (``name.*``: a DNS-1123 label; ``job.task_name_length``: ``length``,
            ``max``: :data:`MAX_TASK_NAME_CHARS`), ``path.replicas``
            (``job.task_replicas``: ``value``, ``min``, ``max``), and the errors of :func:`check_image`,
            :func:`check_command`, :func:`check_args`, :func:`check_env`, :func:`check_working_dir`,
            :func:`~crater_app.domain.resources.parse_resources` and :func:`check_ports` under ``path``.
    """
    check_dns1123_label(task.name, f"{path}.name")
    if len(task.name) > MAX_TASK_NAME_CHARS:
        raise InvalidInput("job.task_name_length", f"{path}.name", length=len(task.name), max=MAX_TASK_NAME_CHARS)
    if not 1 <= task.replicas <= MAX_REPLICAS_PER_TASK:
        raise InvalidInput("job.task_replicas", f"{path}.replicas", value=task.replicas, min=1,
                           max=MAX_REPLICAS_PER_TASK)
    check_image(task.image, f"{path}.image")
    check_command(task.command, f"{path}.command")
    check_args(task.args, f"{path}.args")
    check_env(task.env, f"{path}.env")
    check_working_dir(task.working_dir, f"{path}.working_dir")
    resources = parse_resources(task.resources, f"{path}.resources")
    ports = check_ports(task.ports, f"{path}.ports")
    return TaskPlan(name=task.name, replicas=task.replicas, image=task.image, command=tuple(task.command),
                    args=tuple(task.args), env=dict(task.env), working_dir=task.working_dir, resources=resources,
                    ports=ports, path=path)


def check_tasks(tasks: list[TaskSpec]) -> tuple[TaskPlan, ...]:
    """The ``tasks`` list: 1..:data:`MAX_TASKS` tasks of unique names, at most :data:`MAX_REPLICAS` replicas
    together, each checked by :func:`check_task`.

    Raises:
        InvalidInput: ``job.tasks_empty``, ``job.tasks_count`` (``count``, ``max``) and
            ``job.task_replicas_total`` (``count``, ``max``) naming ``tasks``; ``job.task_name_duplicate``
            (``name``, ``first``: the index of the task of that name before it) naming ``tasks[i].name``.
    """
    if not tasks:
        raise InvalidInput("job.tasks_empty", "tasks")
    if len(tasks) > MAX_TASKS:
        raise InvalidInput("job.tasks_count", "tasks", count=len(tasks), max=MAX_TASKS)
    seen: dict[str, int] = {}
    plans = []
    for i, task in enumerate(tasks):
        path = field_paths.item("tasks", i)
        plan = check_task(task, path)
        if task.name in seen:
            raise InvalidInput("job.task_name_duplicate", f"{path}.name", name=task.name, first=seen[task.name])
        seen[task.name] = i
        plans.append(plan)
    count = sum(t.replicas for t in plans)
    if count > MAX_REPLICAS:
        raise InvalidInput("job.task_replicas_total", "tasks", count=count, max=MAX_REPLICAS)
    return tuple(plans)


def single_task(spec: "JobSpec") -> TaskPlan:
    """The single-task form's one task :data:`SINGLE_TASK` of one replica (fields checked by ``validate_spec``)."""
    return TaskPlan(name=SINGLE_TASK, replicas=1, image=spec.image, command=tuple(spec.command or ()),
                    env=dict(spec.env), working_dir=spec.working_dir, resources=parse_resources(spec.resources))


def canonical_tasks(tasks: list[TaskSpec]) -> list[TaskSpec]:
    """``tasks`` with each task's ``resources`` in Kubernetes' canonical form (see
    :func:`~crater_app.domain.resources.canonical_resources`)."""
    return [t.model_copy(update={"resources": canonical_resources(t.resources)}) for t in tasks]


def with_defaults(tasks: list[TaskSpec], defaults: dict[str, str]) -> list[TaskSpec]:
    """``tasks`` with each resource of ``defaults`` (``cpu``, ``memory``) that a task does not name added to it
    (per replica, as a LimitRange's ``defaultRequest`` applies to each container)."""
    out = []
    for t in tasks:
        missing = {name: value for name, value in defaults.items() if name not in t.resources}
        out.append(t.model_copy(update={"resources": {**t.resources, **missing}}) if missing else t)
    return out

