"""Jobs: the submitted spec (:class:`JobSpec`), its validation, and the phase machine (:class:`JobPhase`)."""

from __future__ import annotations

import enum
import re
from typing import Annotated, Any

from pydantic import (
    BaseModel, ConfigDict, Field, Strict, StrictBool, StrictInt, StrictStr, ValidationError, field_validator,
)

from crater_app.domain import field_paths
from crater_app.domain.errors import InvalidInput
from crater_app.domain.job_kinds import (  # noqa: F401 - JOB_KINDS, RESTART_POLICIES: part of this interface
    DEFAULT_MAX_RETRY, DEFAULT_RESTART_POLICY, JOB_KINDS, RESTART_POLICIES, check_kind, check_restart,
    normalize_tasks,
)
from crater_app.domain.job_tasks import (  # noqa: F401 - the limits are part of this interface
    DEFAULT_IMAGE, MAX_ARG_CHARS, MAX_COMMAND_ARGS, MAX_COMMAND_BYTES, MAX_ENV_VALUE_CHARS, MAX_ENV_VARS,
    MAX_IMAGE_CHARS, MAX_PATH_COMPONENT_BYTES, MAX_WORKING_DIR_CHARS, RESERVED_ENV, TaskSpec, canonical_tasks,
    check_command, check_env, check_image, check_working_dir, totals,
)
from crater_app.domain.job_volumes import VolumeSpec, check_node_selector, check_volumes
from crater_app.domain.naming import MAX_MODEL_CHARS, check_dns1123_label, is_model_name
from crater_app.domain.resources import ResourceList, canonical_quantity, canonical_resources, parse_resources
from crater_app.domain.spec_hints import known_fields, suggest_field

MAX_RUNTIME_S = 30 * 24 * 3600  # 30 days
PRIORITY_MIN, PRIORITY_MAX = -1000, 1000
#: the least ``ttl_after_finished``, seconds: time for the reconciler to read a finished job's status and logs before
#: Volcano deletes its objects (it reads a change within seconds; a minute leaves room for a leader change)
MIN_TTL_AFTER_FINISHED_S = 60
#: how many of the other unknown fields an unknown-field error names (``more`` counts them all)
MAX_OTHER_UNKNOWN = 5

_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", re.ASCII)
#: the top-level fields of the single-task form: with ``tasks`` each task gives its own
SINGLE_TASK_FIELDS = ("image", "command", "env", "working_dir", "resources")
#: pydantic error types of a wrong JSON type -> the error's code, which names the type the field takes
_TYPE_ERRORS = {"string_type": "job.field_string", "int_type": "job.field_integer", "int_parsing": "job.field_integer",
                "bool_type": "job.field_boolean", "list_type": "job.field_list", "dict_type": "job.field_object",
                "int_from_float": "job.field_integer", "model_type": "job.field_object"}


class JobPhase(str, enum.Enum):
    """Lifecycle of a job: ``[Held ->] Queued -> Running [-> Stopping] -> Succeeded | Failed | Cancelled``.

    ``Held``: written but not admitted (quota, fair share, approval or billing); not yet given to the backend.
    ``Stopping``: a stop was asked for (cancel, deadline, preemption) and its processes have not all exited; its
    devices still count as used (admission, billing, the nodes' holders). A preempted job that goes back to the
    queue leaves ``Stopping`` for ``Held`` with its ``attempt`` counted (Crater's admission decides when it runs
    again); the transition to ``Queued`` is allowed for a backend that requeues by itself.
    """

    HELD = "Held"
    QUEUED = "Queued"
    RUNNING = "Running"
    STOPPING = "Stopping"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    CANCELLED = "Cancelled"

    @property
    def terminal(self) -> bool:
        """True for phases a job never leaves."""
        return self in TERMINAL_PHASES


TERMINAL_PHASES = frozenset({JobPhase.SUCCEEDED, JobPhase.FAILED, JobPhase.CANCELLED})
_ALLOWED = {
    JobPhase.HELD: {JobPhase.QUEUED, JobPhase.FAILED, JobPhase.CANCELLED},
    JobPhase.QUEUED: {JobPhase.RUNNING, JobPhase.STOPPING, JobPhase.HELD, JobPhase.FAILED, JobPhase.CANCELLED},
    JobPhase.RUNNING: {JobPhase.STOPPING, JobPhase.SUCCEEDED, JobPhase.FAILED, JobPhase.CANCELLED},
    JobPhase.STOPPING: {JobPhase.HELD, JobPhase.QUEUED, JobPhase.SUCCEEDED, JobPhase.FAILED, JobPhase.CANCELLED},
}


def can_transition(old: JobPhase, new: JobPhase) -> bool:
    """Whether a job may move from ``old`` to ``new`` (terminal phases are final)."""
    return new in _ALLOWED.get(old, set())


def parse_duration(raw: object, field: str = "max_runtime") -> int | None:
    """Parse a duration: whole seconds (int or digit string) or ``"1d2h30m10s"``; ``None`` stays ``None``.

    Returns:
        seconds, 1..``MAX_RUNTIME_S``.

    Raises:
        InvalidInput: bad shape, zero, negative, or above 30 days.
    """
    if raw is None:
        return None
    if isinstance(raw, bool):
        raise InvalidInput("job.duration_type", field, name=field)
    if isinstance(raw, int):
        seconds = raw
    elif isinstance(raw, str):
        text = raw.strip()
        if len(text) > 32:  # int() of thousands of digits is slow, and fails past 4300
            raise InvalidInput("job.duration_too_long", field, name=field, value=text[:32], length=len(text), max=32)
        if text.isascii() and text.isdigit():
            seconds = int(text)
        else:
            match = _DURATION.fullmatch(text) if text and len(text) <= 32 else None
            if not match or not any(match.groups()):
                raise InvalidInput("job.duration_format", field, name=field, value=text[:32])
            d, h, m, s = (int(g or 0) for g in match.groups())
            seconds = d * 86400 + h * 3600 + m * 60 + s
    else:
        raise InvalidInput("job.duration_type", field, name=field)
    if seconds <= 0:
        raise InvalidInput("job.duration_min", field, name=field)
    if seconds > MAX_RUNTIME_S:
        raise InvalidInput("job.duration_max", field, name=field, value=seconds, max=MAX_RUNTIME_S,
                           days=MAX_RUNTIME_S // 86400)
    return seconds


def parse_ttl(raw: object) -> int | None:
    """``ttl_after_finished``: like :func:`parse_duration` (seconds or ``"1d2h"``, at most 30 days), at least
    :data:`MIN_TTL_AFTER_FINISHED_S`: Volcano deletes the finished Job (``ttlSecondsAfterFinished``) and its pods with
    it, and Crater reads a finished job's final status and logs after it ends, so a shorter time could lose them.

    Raises:
        InvalidInput: the errors of :func:`parse_duration` naming ``ttl_after_finished``;
            ``job.ttl_after_finished_min`` (``value``, ``min``: seconds) below the minimum (``0`` included).
    """
    zero = (isinstance(raw, int) and not isinstance(raw, bool) and raw == 0) or (
        isinstance(raw, str) and raw.strip() in ("0", "0s"))
    if zero:  # parse_duration says "at least 1 second": name the real minimum
        raise InvalidInput("job.ttl_after_finished_min", "ttl_after_finished", value=0,
                           min=MIN_TTL_AFTER_FINISHED_S)
    seconds = parse_duration(raw, "ttl_after_finished")
    if seconds is not None and seconds < MIN_TTL_AFTER_FINISHED_S:
        raise InvalidInput("job.ttl_after_finished_min", "ttl_after_finished", value=seconds,
                           min=MIN_TTL_AFTER_FINISHED_S)
    return seconds


class JobSpec(BaseModel):
    """What a user submits (JSON or YAML). Unknown fields are rejected.

    Fields: ``name`` DNS-1123 label; ``project`` (None = the user's default); ``kind`` ``batch`` (default),
    ``pytorch``, ``mpi`` or ``interactive`` (a session: counts towards the user's ``max_sessions``; the kinds' shapes:
    :mod:`crater_app.domain.job_kinds`); ``accelerator_model`` e.g. ``NVIDIA-A100-SXM4-80GB`` (every replica's
    device model); ``max_runtime`` seconds; ``priority``; ``preemptible`` (the job may be stopped so that a project
    below its deserved share gets it back; default ``false``); ``requeue_on_preemption`` (a preempted job goes back
    to the queue and runs again, keeping its id, up to the platform's ``max_attempts``; default ``true``, as Kueue
    requeues an evicted Workload and Volcano restarts a Job on ``PodEvicted``; ``false``: it ends ``Failed``).

    What runs, in one of two forms: ``tasks`` (:class:`~crater_app.domain.job_tasks.TaskSpec` list: name, replicas,
    image, command, args, env, working_dir, resources per replica, ports), or the single-task form of one replica:
    ``image`` (recorded; the local backend runs in the host environment), ``command`` argv list, ``env`` name ->
    value, ``working_dir`` relative to the job's directory, ``resources`` a Kubernetes resource list. ``min_available``
    the gang (replicas placed together before any starts; default all); ``restart_policy`` (``restart``, ``fail``,
    ``ignore``: what a failed or evicted replica does to the job, Volcano's ``policies``) and ``max_retry`` (restarts,
    default 3 as Volcano's ``maxRetry``); ``volumes``, ``shm_size``, ``node_selector``, ``ttl_after_finished``
    (:mod:`crater_app.domain.job_volumes`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: StrictStr
    project: StrictStr | None = None
    image: StrictStr = DEFAULT_IMAGE
    command: Annotated[list[StrictStr], Strict()] | None = None  # a list: a YAML !!set or a tuple has no order
    env: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    working_dir: StrictStr | None = None
    # Values are quantities (string or number); their types and grammar are checked by parse_resources, so
    # an error names 'resources.<name>' (a pydantic union would add its member tag) and booleans are refused.
    resources: dict[StrictStr, Any] = Field(default_factory=dict)
    tasks: list[TaskSpec] | None = None
    min_available: StrictInt | None = None
    restart_policy: StrictStr = DEFAULT_RESTART_POLICY
    max_retry: StrictInt = DEFAULT_MAX_RETRY
    volumes: list[VolumeSpec] = Field(default_factory=list)
    shm_size: Any = None  # a memory quantity: checked by job_volumes.parse_shm_size
    node_selector: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    ttl_after_finished: int | None = None
    accelerator_model: StrictStr | None = None
    max_runtime: int | None = None
    priority: StrictInt = 0
    kind: StrictStr = "batch"
    preemptible: StrictBool = False
    requeue_on_preemption: StrictBool = True

    @field_validator("max_runtime", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> int | None:
        return parse_duration(value)

    @field_validator("ttl_after_finished", mode="before")
    @classmethod
    def _ttl(cls, value: Any) -> int | None:
        return parse_ttl(value)

    @property
    def resource_list(self) -> ResourceList:
        """What the whole job requests: the single-task form's ``resources`` parsed (see :func:`parse_resources`),
        or the totals over all replicas of ``tasks`` (:func:`crater_app.domain.job_tasks.totals`)."""
        if self.tasks is None:
            return parse_resources(self.resources)
        return normalize_tasks(self).totals


def _unknown_field(exc: ValidationError, at: tuple, loc: str | None, raw: dict) -> InvalidInput:
    """The error for an unknown field at pydantic location ``at`` (path ``loc``): ``job.unknown_field`` (``name``)
    or ``job.unknown_field_suggestion`` (also ``suggestion``, a known field at that level,
    :func:`~crater_app.domain.spec_hints.suggest_field`); with ``_more`` (``more``: how many other unknown fields
    the spec has, ``others``: the first :data:`MAX_OTHER_UNKNOWN` of their paths) when there are others."""
    name = (loc or "")[:128]
    suggestion = suggest_field(at[-1] if at else None, known_fields(JobSpec, at))
    others = [field_paths.from_loc(e["loc"], raw) or "" for e in exc.errors()[1:] if e["type"] == "extra_forbidden"]
    if others:
        shown = [o[:128] for o in others[:MAX_OTHER_UNKNOWN]]
        if suggestion is not None:
            return InvalidInput("job.unknown_field_suggestion_more", loc, name=name, suggestion=suggestion,
                                more=len(others), others=shown)
        return InvalidInput("job.unknown_field_more", loc, name=name, more=len(others), others=shown)
    if suggestion is not None:
        return InvalidInput("job.unknown_field_suggestion", loc, name=name, suggestion=suggestion)
    return InvalidInput("job.unknown_field", loc, name=name)


def _model_error(exc: ValidationError, raw: dict) -> InvalidInput:
    err = exc.errors()[0]
    loc = field_paths.from_loc(err["loc"], raw)
    ctx_err = (err.get("ctx") or {}).get("error")
    if isinstance(ctx_err, InvalidInput):
        return ctx_err
    kind = err["type"]
    name = (loc or "")[:128]
    if kind == "extra_forbidden":
        return _unknown_field(exc, err["loc"], loc, raw)
    if kind == "missing":
        return InvalidInput("job.field_required", loc, name=name)
    if kind in _TYPE_ERRORS:
        return InvalidInput(_TYPE_ERRORS[kind], loc, name=name)
    return InvalidInput("job.field_invalid", loc, name=name, detail=str(err["msg"])[:200])


def validate_spec(raw: object) -> JobSpec:
    """Validate a submitted job spec (already decoded from JSON/YAML) into a :class:`JobSpec`, its ``resources``
    (and each task's) in Kubernetes' canonical form (``{"cpu": " 1.0 "}`` -> ``{"cpu": "1"}``, see
    :func:`crater_app.domain.resources.canonical_quantity`), ``shm_size`` too.

    Raises:
        InvalidInput: the first problem, with ``field`` set to its full path and the limit in the
            message: unknown fields, wrong types, bad names, empty or oversized command, bad env,
            bad quantities, fractional GPUs, unknown image shape, priority out of range, unknown ``kind``,
            a ``preemptible`` that is not a boolean; ``job.tasks_conflict`` (``field_name``) naming a top-level
            field of the single-task form given with ``tasks``; ``job.field_required`` naming ``command`` when
            neither is given; the errors of :func:`~crater_app.domain.job_kinds.check_restart`,
            :func:`~crater_app.domain.job_volumes.check_volumes`,
            :func:`~crater_app.domain.job_volumes.check_node_selector` and
            :func:`~crater_app.domain.job_kinds.normalize_tasks` (tasks, kind shapes, gang, ``shm_size``).
    """
    if not isinstance(raw, dict):
        raise InvalidInput("job.spec_object", None)
    try:
        spec = JobSpec.model_validate(raw)
    except InvalidInput:
        raise
    except ValidationError as exc:
        raise _model_error(exc, raw) from None
    check_dns1123_label(spec.name, "name")
    if spec.project is not None:
        check_dns1123_label(spec.project, "project")
    if spec.tasks is not None:
        for name in SINGLE_TASK_FIELDS:
            if name in spec.model_fields_set:
                raise InvalidInput("job.tasks_conflict", name, field_name=name)
    else:
        if spec.command is None:
            raise InvalidInput("job.field_required", "command", name="command")
        check_image(spec.image)
        check_command(spec.command)
        check_env(spec.env)
        check_working_dir(spec.working_dir)
        parse_resources(spec.resources)
    if not PRIORITY_MIN <= spec.priority <= PRIORITY_MAX:
        raise InvalidInput("job.priority_range", "priority", min=PRIORITY_MIN, max=PRIORITY_MAX, value=spec.priority)
    if spec.accelerator_model is not None and not is_model_name(spec.accelerator_model):
        raise InvalidInput("job.accelerator_model_format", "accelerator_model", max=MAX_MODEL_CHARS)
    check_kind(spec.kind)
    check_restart(spec.restart_policy, spec.max_retry)
    check_volumes(spec.volumes, shm=spec.shm_size is not None)
    check_node_selector(spec.node_selector)
    normalize_tasks(spec)
    # what is stored and shown is what is enforced: " 1 ", "1.0" and 1 are all "1" (Kubernetes' canonical form)
    update: dict[str, Any] = {"resources": canonical_resources(spec.resources)}
    if spec.tasks is not None:
        update["tasks"] = canonical_tasks(spec.tasks)
    if spec.shm_size is not None:
        update["shm_size"] = canonical_quantity(spec.shm_size)
    return spec.model_copy(update=update)
