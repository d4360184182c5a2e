"""Pure helpers that turn console form fields into a job spec dict (no Reflex, no I/O).

The command is never run through a shell by Crater: it is split into an argv list here (one
argument per line, or ``shlex.split`` of a shell-like line) and passed to the backend as a list.
Problems raise :class:`FormError` with an i18n key, the form field, and format parameters.
"""

from __future__ import annotations

import shlex

from crater_app.domain.job_kinds import DEFAULT_RESTART_POLICY
from crater_app.domain.job_tasks import SINGLE_TASK

COMMAND_MODES = ("lines", "shell")
#: the new-job form's "Kind" choices (``JobSpec.kind``, :mod:`crater_app.domain.job_kinds`): a batch job (one replica,
#: or a gang of identical replicas), a PyTorch DDP job (master + workers), an MPI job (launcher + workers), or an
#: interactive session that counts towards the user's ``max_sessions``
JOB_KINDS = ("batch", "pytorch", "mpi", "interactive")
#: the kinds whose form has a "replicas"/"workers" count (an interactive session is one replica)
KINDS_WITH_REPLICAS = ("batch", "pytorch", "mpi")


class FormError(Exception):
    """A form field that cannot be turned into a spec: ``key`` is an i18n key, ``field`` the input name."""

    def __init__(self, key: str, field: str, **params: object) -> None:
        super().__init__(key)
        self.key = key
        self.field = field
        self.params = params


def parse_command(text: str, mode: str, field: str = "command") -> list[str]:
    """Split the command box into an argv list.

    ``mode`` ``"lines"``: every non-blank line is one argument, kept verbatim (no quoting rules).
    ``mode`` ``"shell"``: the text is split like a POSIX shell would split words (``shlex.split``),
    but nothing is expanded or executed. Errors name the input ``field``.
    """
    if mode == "shell":
        try:
            argv = shlex.split(text, comments=False, posix=True)
        except ValueError as exc:  # unbalanced quotes, trailing backslash
            raise FormError("form.error.command_quotes", field, detail=str(exc)) from None
    else:
        argv = [line.rstrip("\r") for line in text.split("\n") if line.strip()]
    if not argv:
        raise FormError("form.error.command_required", field)
    return argv


def parse_env(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (blank lines and ``#`` comments skipped) into a dict; the value may contain ``=``."""
    env: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, sep, value = line.rstrip("\r").partition("=")
        key = key.strip()
        if not sep or not key:
            raise FormError("form.error.env_line", "env", line=number)
        env[key] = value
    return env


def parse_node_selector(text: str) -> dict[str, str]:
    """``key=value`` lines (blank lines and ``#`` comments skipped; spaces around key and value dropped, as label
    keys and values have none) into the job's ``node_selector``.

    Raises:
        FormError: ``form.error.node_selector_line`` (``line``: 1-based) naming ``node_selector``.
    """
    selector: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, sep, value = stripped.partition("=")
        if not sep or not key.strip():
            raise FormError("form.error.node_selector_line", "node_selector", line=number)
        selector[key.strip()] = value.strip()
    return selector


def parse_count(text: str, field: str, default: int | None, minimum: int = 0) -> int | None:
    """A whole number typed in ``field`` (``default`` when blank); the service checks its upper limit and names the
    spec's path.

    Raises:
        FormError: ``form.error.whole_number`` (``min``) naming ``field``: not a whole number, or below ``minimum``.
    """
    stripped = text.strip()
    if not stripped:
        return default
    if not (stripped.isascii() and stripped.lstrip("-").isdigit()) or len(stripped) > 9 or int(stripped) < minimum:
        raise FormError("form.error.whole_number", field, min=minimum)
    return int(stripped)


def _task(name: str, replicas: int, command: list[str], env: dict[str, str], resources: dict) -> dict:
    task: dict = {"name": name, "replicas": replicas, "command": list(command)}
    if env:
        task["env"] = dict(env)
    task["resources"] = dict(resources)
    return task


def tasks_of(kind: str, replicas: int, command: list[str], worker_command: list[str], env: dict[str, str],
             resources: dict, accelerators: dict) -> list[dict] | None:
    """The ``tasks`` of a job of ``kind`` from the form, or ``None`` for the single-task form (a batch job of one
    replica, an interactive session). ``replicas``: the batch gang's replicas, else the workers; ``resources``
    (``cpu``/``memory``) and ``accelerators`` (``{resource: count}``) are per replica.

    - ``batch`` of ``replicas`` > 1: one task ``main`` of that many replicas (a gang of identical replicas);
    - ``pytorch``: ``master`` (1 replica) and ``worker`` (``replicas``; none when 0) running the same command with
      the same resources, as Kubeflow's PyTorchJob and Volcano's pytorch plugin expect;
    - ``mpi``: ``launcher`` (1 replica, ``command``, CPU and memory but no accelerators: it only starts ``mpirun``)
      and ``worker`` (``replicas``, ``worker_command``, with the accelerators), as Volcano's MPI example does.
    """
    per_replica = {**resources, **accelerators}
    if kind == "pytorch":
        tasks = [_task("master", 1, command, env, per_replica)]
        if replicas:
            tasks.append(_task("worker", replicas, command, env, per_replica))
        return tasks
    if kind == "mpi":
        tasks = [_task("launcher", 1, command, env, resources)]
        if replicas:
            tasks.append(_task("worker", replicas, worker_command, env, per_replica))
        return tasks
    if kind == "batch" and replicas != 1:
        return [_task(SINGLE_TASK, replicas, command, env, per_replica)]
    return None


def build_spec(
    *, name: str, command: str, command_mode: str, env: str, cpu: str, memory: str, gpus: str,
    model: str, resource: str, max_runtime: str, priority: str, kind: str = "batch", preemptible: bool = False,
    project: str = "", replicas: str = "1", worker_command: str = "", shm_size: str = "", min_available: str = "",
    restart_policy: str = "fail", max_retry: str = "", node_selector: str = "", draft: bool = False,
) -> dict:
    """The raw job spec (the dict ``services.jobs.submit_job`` validates) from the form's text fields.

    ``kind`` (:data:`JOB_KINDS`; only a non-default kind is written, the service checks it) decides the shape (see
    :func:`tasks_of`): a batch job of one replica and an interactive session are the single-task form
    (``command``/``env``/``resources`` at the top), the others have ``tasks``. ``replicas`` is the batch gang's
    replicas or the pytorch/mpi workers (blank: 1); ``cpu``, ``memory`` and ``gpus`` (of ``resource``, the model
    ``model``) are per replica. ``preemptible`` is written when true; ``project`` ``""`` leaves it to the service
    (the user's default project). The options are written only when given or not their default:
    ``shm_size``, ``min_available`` (blank: all replicas), ``restart_policy`` (``fail`` by default) with
    ``max_retry`` (only with ``restart``), ``node_selector`` (``key=value`` lines).
    ``draft``: for the YAML editor, an empty command is written as ``[]`` (the service then says what is missing)
    instead of refused.

    Raises:
        FormError: the command cannot be split or is empty (not in a draft), an env or node-selector line is not
            ``KEY=VALUE``, or a count (GPUs, replicas, priority, min_available, max_retry) is not a whole number.
    """
    def argv(text: str, field: str) -> list[str]:
        return [] if draft and not text.strip() else parse_command(text, command_mode, field)

    argv_main = argv(command, "command")
    spec: dict = {"name": name.strip()}
    if project.strip():
        spec["project"] = project.strip()
    if kind != "batch":
        spec["kind"] = kind
    if preemptible:
        spec["preemptible"] = True
    env_map = parse_env(env)
    resources: dict = {}
    if cpu.strip():
        resources["cpu"] = cpu.strip()
    if memory.strip():
        resources["memory"] = memory.strip()
    try:
        count = int(gpus or "0")
    except ValueError:
        raise FormError("form.error.gpus", "gpus") from None
    if count < 0:
        raise FormError("form.error.gpus", "gpus")
    accelerators = {resource or "nvidia.com/gpu": count} if count else {}
    if kind in KINDS_WITH_REPLICAS:
        replica_count = parse_count(replicas, "replicas", 1, 0 if kind in ("pytorch", "mpi") else 1)
    else:
        replica_count = 1
    argv_worker = argv(worker_command, "worker_command") if kind == "mpi" and replica_count else []
    tasks = tasks_of(kind, replica_count or 0, argv_main, argv_worker, env_map, resources, accelerators)
    if tasks is None:
        spec["command"] = argv_main
        if env_map:
            spec["env"] = env_map
        spec["resources"] = {**resources, **accelerators}
        gpu_requested = bool(accelerators)
    else:
        spec["tasks"] = tasks
        gpu_requested = any(name in t["resources"] for t in tasks for name in accelerators)
    if gpu_requested and model:
        spec["accelerator_model"] = model
    _options(spec, shm_size=shm_size, min_available=min_available, restart_policy=restart_policy,
             max_retry=max_retry, node_selector=node_selector)
    if max_runtime.strip():
        spec["max_runtime"] = max_runtime.strip()
    if priority.strip():
        try:
            spec["priority"] = int(priority.strip())
        except ValueError:
            raise FormError("form.error.priority", "priority") from None
    return spec


def _options(spec: dict, *, shm_size: str, min_available: str, restart_policy: str, max_retry: str,
             node_selector: str) -> None:
    """Write the advanced options the form gives into ``spec`` (see :func:`build_spec`)."""
    if shm_size.strip():
        spec["shm_size"] = shm_size.strip()
    gang = parse_count(min_available, "min_available", None)
    if gang is not None:
        spec["min_available"] = gang
    policy = restart_policy or DEFAULT_RESTART_POLICY
    if policy != DEFAULT_RESTART_POLICY:
        spec["restart_policy"] = policy
    if policy == "restart":
        retries = parse_count(max_retry, "max_retry", None)
        if retries is not None:
            spec["max_retry"] = retries
    selector = parse_node_selector(node_selector)
    if selector:
        spec["node_selector"] = selector


def job_fields(kind: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The new-job form's inputs and the spec paths whose errors each shows, for a job of ``kind`` as
    :func:`build_spec` writes it (``tasks[0]`` the main task, master or launcher; ``tasks[1]`` the workers): a
    ``FieldMap`` of :mod:`crater_app.state.field_errors` (first match wins). Errors on the whole ``tasks`` list (the
    gang larger than the cluster or the project's capability, too many replicas) go beside the replicas; errors of
    the mpi workers' command beside the worker command."""
    either = ("tasks[0]", "tasks[1]")
    worker_command = (("worker_command", ("tasks[1].command", "tasks[1].args")),) if kind == "mpi" else ()
    return (
        ("name", ("name",)), ("project", ("project",)), ("kind", ("kind",)), ("preemptible", ("preemptible",)),
        ("env", ("env", *(f"{t}.env" for t in either))),
        ("cpu", ("resources.cpu", *(f"{t}.resources.cpu" for t in either))),
        ("memory", ("resources.memory", *(f"{t}.resources.memory" for t in either))),
        ("gpus", ("resources", "accelerator_model", "gpus", *(f"{t}.resources" for t in either))),
        ("replicas", ("replicas", *(f"{t}.replicas" for t in either))),
        *worker_command,
        ("command", ("command", *(f"{t}.{f}" for t in either for f in ("command", "args")))),
        ("max_runtime", ("max_runtime",)), ("priority", ("priority",)), ("shm_size", ("shm_size",)),
        ("min_available", ("min_available",)), ("restart_policy", ("restart_policy",)),
        ("max_retry", ("max_retry",)), ("node_selector", ("node_selector",)),
        ("command" if kind == "interactive" else "replicas", ("tasks",)),
    )


#: the inputs of the form's advanced part (hidden until opened; opened when one of them has an error)
ADVANCED_FIELDS = ("shm_size", "min_available", "restart_policy", "max_retry", "node_selector")
