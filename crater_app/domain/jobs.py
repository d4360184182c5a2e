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
from crater_app.domain.naming import MAX_MODEL_CHARS, check_dns1123_label, is_text, is_model_name
from crater_app.domain.resources import ResourceList, canonical_resources, parse_resources

MAX_COMMAND_ARGS = 256
MAX_ARG_CHARS = 8192
MAX_COMMAND_BYTES = 64 * 1024
MAX_ENV_VARS = 128
MAX_ENV_VALUE_CHARS = 8192
MAX_IMAGE_CHARS = 255
MAX_RUNTIME_S = 30 * 24 * 3600  # 30 days
PRIORITY_MIN, PRIORITY_MAX = -1000, 1000
MAX_WORKING_DIR_CHARS = 255
DEFAULT_IMAGE = "local/host"
#: ``batch`` runs to completion; ``interactive`` is a session (notebook, IDE) and counts towards the user's
#: ``max_sessions`` (Crater's job types: training jobs vs. Jupyter/VS Code sessions).
JOB_KINDS = ("batch", "interactive")

# Patterns are used with fullmatch (a '$' also matches before a trailing newline) and re.ASCII ('\d' would
# also match other scripts' digits, which int() reads: '٣h' would be 3 hours).
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_PATH_COMPONENT_BYTES = 255  # NAME_MAX: a longer folder name cannot be created
# Docker/OCI image reference, simplified from distribution/reference: [host[:port]/]path[:tag][@digest]; the first
# component is a host only when it has a '.' or a ':port' or is 'localhost' (else it is a lower-case path component).
_IMAGE = re.compile(
    r"^(?:(?:[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+|localhost)(?::[0-9]+)?/|[a-zA-Z0-9-]+:[0-9]+/)?[a-z0-9]+(?:[._-]{1,2}[a-z0-9]+)*(?:/[a-z0-9]+(?:[._-]{1,2}[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$"
)
_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", re.ASCII)
# Environment names the platform sets itself; a spec may not override them.
RESERVED_ENV = frozenset({"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CRATER_JOB_UID"})
#: pydantic error types of a wrong JSON type -> the error's code, which names the type the field takes
_TYPE_ERRORS = {"string_type": "job.field_string", "int_type": "job.field_integer", "int_parsing": "job.field_integer",
                "bool_type": "job.field_boolean", "list_type": "job.field_list", "dict_type": "job.field_object",
                "int_from_float": "job.field_integer"}


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


class JobSpec(BaseModel):
    """What a user submits (JSON or YAML). Unknown fields are rejected.

    Fields: ``name`` DNS-1123 label; ``project`` (None = the user's default); ``image`` (recorded; the
    local backend runs in the host environment); ``command`` argv list; ``env`` name -> value;
    ``working_dir`` relative to the job's directory; ``resources`` Kubernetes resource list;
    ``accelerator_model`` e.g. ``NVIDIA-A100-SXM4-80GB``; ``max_runtime`` seconds; ``priority``;
    ``kind`` ``batch`` (default) or ``interactive`` (a session: counts towards the user's ``max_sessions``);
    ``preemptible`` (the job may be stopped so that a project below its deserved share gets it back; default
    ``false``); ``requeue_on_preemption`` (a preempted job goes back to the queue and runs again, keeping its id,
    up to the platform's ``max_attempts``; default ``true``, as Kueue requeues an evicted Workload and Volcano
    restarts a Job on ``PodEvicted``; ``false``: it ends ``Failed``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: StrictStr
    project: StrictStr | None = None
    image: StrictStr = DEFAULT_IMAGE
    command: Annotated[list[StrictStr], Strict()]  # a list: a YAML !!set or a tuple has no reliable order
    env: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    working_dir: StrictStr | None = None
    # Values are quantities (string or number); their types and grammar are checked by parse_resources, so
    # an error names 'resources.<name>' (a pydantic union would add its member tag) and booleans are refused.
    resources: dict[StrictStr, Any] = Field(default_factory=dict)
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

    @property
    def resource_list(self) -> ResourceList:
        """The parsed resources (see :func:`parse_resources`)."""
        return parse_resources(self.resources)


def _check_command(command: list[str]) -> None:
    if not command:
        raise InvalidInput("job.command_empty", "command")
    if len(command) > MAX_COMMAND_ARGS:
        raise InvalidInput("job.command_args", "command", count=len(command), max=MAX_COMMAND_ARGS)
    total = 0
    for i, arg in enumerate(command):
        size = len(arg.encode("utf-8", "surrogatepass"))
        total += size
        if len(arg) > MAX_ARG_CHARS:
            raise InvalidInput("job.command_arg_length", field_paths.item("command", i), index=i, length=len(arg), max=MAX_ARG_CHARS)
        if "\x00" in arg:
            raise InvalidInput("job.command_arg_nul", field_paths.item("command", i), index=i)
        if not is_text(arg):
            raise InvalidInput("job.command_arg_text", field_paths.item("command", i), index=i)
    if total > MAX_COMMAND_BYTES:
        raise InvalidInput("job.command_bytes", "command", size=total, max=MAX_COMMAND_BYTES)
    if not command[0].strip():
        raise InvalidInput("job.command_program_blank", field_paths.item("command", 0))


def _check_env(env: dict[str, str]) -> None:
    if len(env) > MAX_ENV_VARS:
        raise InvalidInput("job.env_count", "env", count=len(env), max=MAX_ENV_VARS)
    for key, value in env.items():
        if not _ENV_NAME.fullmatch(key) or len(key) > 128:
            raise InvalidInput("job.env_name", field_paths.key("env", key), name=field_paths.shown(key), max=128)
        if key in RESERVED_ENV:
            raise InvalidInput("job.env_reserved", field_paths.key("env", key), name=key)
        if len(value) > MAX_ENV_VALUE_CHARS or "\x00" in value or not is_text(value):
            raise InvalidInput("job.env_value", field_paths.key("env", key), name=key, length=len(value), max=MAX_ENV_VALUE_CHARS)


def _check_working_dir(path: str | None) -> None:
    if path is None:
        return
    if len(path) > MAX_WORKING_DIR_CHARS or "\x00" in path or not is_text(path):
        raise InvalidInput("job.working_dir_text", "working_dir", max=MAX_WORKING_DIR_CHARS)
    parts = path.replace("\\", "/").split("/")
    if any(len(part.encode("utf-8")) > MAX_PATH_COMPONENT_BYTES for part in parts):
        raise InvalidInput("job.working_dir_component", "working_dir", max=MAX_PATH_COMPONENT_BYTES)
    if path.startswith("/") or ".." in parts:
        raise InvalidInput("job.working_dir_relative", "working_dir")


def validate_spec(raw: object) -> JobSpec:
    """Validate a submitted job spec (already decoded from JSON/YAML) into a :class:`JobSpec`, its ``resources``
    in Kubernetes' canonical form (``{"cpu": " 1.0 "}`` -> ``{"cpu": "1"}``, see
    :func:`crater_app.domain.resources.canonical_quantity`).

    Raises:
        InvalidInput: the first problem, with ``field`` set to its dotted path and the limit in the
            message: unknown fields, wrong types, bad names, empty or oversized command, bad env,
            bad quantities, fractional GPUs, unknown image shape, priority out of range, unknown ``kind``,
            a ``preemptible`` that is not a boolean.
    """
    if not isinstance(raw, dict):
        raise InvalidInput("job.spec_object", None)
    try:
        spec = JobSpec.model_validate(raw)
    except InvalidInput:
        raise
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = field_paths.from_loc(err["loc"], raw)
        ctx_err = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_err, InvalidInput):
            raise ctx_err from None
        kind = err["type"]
        name = (loc or "")[:128]
        if kind == "extra_forbidden":
            raise InvalidInput("job.unknown_field", loc, name=name) from None
        if kind == "missing":
            raise InvalidInput("job.field_required", loc, name=name) from None
        if kind in _TYPE_ERRORS:
            raise InvalidInput(_TYPE_ERRORS[kind], loc, name=name) from None
        raise InvalidInput("job.field_invalid", loc, name=name, detail=str(err["msg"])[:200]) from None
    check_dns1123_label(spec.name, "name")
    if spec.project is not None:
        check_dns1123_label(spec.project, "project")
    if len(spec.image) > MAX_IMAGE_CHARS or not _IMAGE.fullmatch(spec.image):
        raise InvalidInput("job.image_format", "image", max=MAX_IMAGE_CHARS)
    _check_command(spec.command)
    _check_env(spec.env)
    _check_working_dir(spec.working_dir)
    if not PRIORITY_MIN <= spec.priority <= PRIORITY_MAX:
        raise InvalidInput("job.priority_range", "priority", min=PRIORITY_MIN, max=PRIORITY_MAX, value=spec.priority)
    if spec.accelerator_model is not None and not is_model_name(spec.accelerator_model):
        raise InvalidInput("job.accelerator_model_format", "accelerator_model", max=MAX_MODEL_CHARS)
    if spec.kind not in JOB_KINDS:
        raise InvalidInput("job.kind", "kind", kinds=", ".join(JOB_KINDS), value=spec.kind[:32])
    resources = parse_resources(spec.resources)
    if spec.accelerator_model and not resources.gpus:
        raise InvalidInput("job.accelerator_model_without_request", "accelerator_model")
    # what is stored and shown is what is enforced: " 1 ", "1.0" and 1 are all "1" (Kubernetes' canonical form)
    return spec.model_copy(update={"resources": canonical_resources(spec.resources)})
