"""Pure helpers that turn console form fields into a job spec dict (no Reflex, no I/O).

The command is never run through a shell by Crater: it is split into an argv list here (one
argument per line, or ``shlex.split`` of a shell-like line) and passed to the backend as a list.
Problems raise :class:`FormError` with an i18n key, the form field, and format parameters.
"""

from __future__ import annotations

import shlex

COMMAND_MODES = ("lines", "shell")
#: the new-job form's "Kind" choices (``JobSpec.kind``: a batch job, or an interactive session that counts towards
#: the user's ``max_sessions``)
JOB_KINDS = ("batch", "interactive")


class FormError(Exception):
    """A form field that cannot be turned into a spec: ``key`` is an i18n key, ``field`` the input name."""

    def __init__(self, key: str, field: str, **params: object) -> None:
        super().__init__(key)
        self.key = key
        self.field = field
        self.params = params


def parse_command(text: str, mode: str) -> list[str]:
    """Split the command box into an argv list.

    ``mode`` ``"lines"``: every non-blank line is one argument, kept verbatim (no quoting rules).
    ``mode`` ``"shell"``: the text is split like a POSIX shell would split words (``shlex.split``),
    but nothing is expanded or executed.
    """
    if mode == "shell":
        try:
            argv = shlex.split(text, comments=False, posix=True)
        except ValueError as exc:  # unbalanced quotes, trailing backslash
            raise FormError("form.error.command_quotes", "command", detail=str(exc)) from None
    else:
        argv = [line.rstrip("\r") for line in text.split("\n") if line.strip()]
    if not argv:
        raise FormError("form.error.command_required", "command")
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


def build_spec(
    *, name: str, command: str, command_mode: str, env: str, cpu: str, memory: str, gpus: str,
    model: str, resource: str, max_runtime: str, priority: str, kind: str = "batch", preemptible: bool = False,
    project: str = "",
) -> dict:
    """The raw job spec (the dict ``services.jobs.submit_job`` validates) from the form's text fields.

    ``kind`` (``batch``/``interactive``; only a non-default kind is written, the service checks it) and
    ``preemptible`` (written when true); ``project`` ``""`` leaves it to the service (the user's default project).
    """
    spec: dict = {"name": name.strip(), "command": parse_command(command, command_mode)}
    if project.strip():
        spec["project"] = project.strip()
    if kind != "batch":
        spec["kind"] = kind
    if preemptible:
        spec["preemptible"] = True
    env_map = parse_env(env)
    if env_map:
        spec["env"] = env_map
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
    if count:
        resources[resource or "nvidia.com/gpu"] = count
        if model:
            spec["accelerator_model"] = model
    spec["resources"] = resources
    if max_runtime.strip():
        spec["max_runtime"] = max_runtime.strip()
    if priority.strip():
        try:
            spec["priority"] = int(priority.strip())
        except ValueError:
            raise FormError("form.error.priority", "priority") from None
    return spec
