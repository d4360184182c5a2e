"""Default requests of a job that names no ``cpu`` or no ``memory``: the same through the API and the console.

The defaults are settings (``CRATER_DEFAULT_JOB_CPU``, default ``"1"``; ``CRATER_DEFAULT_JOB_MEMORY``, default
``"2Gi"``; Kubernetes quantities, ``""`` for none), applied at submission (``services.jobs.submit_job``), so a job
always records what it asked for. Slurm gives a job one CPU and ``DefMemPerNode``/``DefMemPerCPU`` when it names
none; Kubernetes applies a namespace's ``LimitRange`` ``defaultRequest`` the same way, per resource: a job that names
only one of the two gets the default of the other. A resource the job names (even ``0``) is left as it is.
"""

from __future__ import annotations

from functools import lru_cache
from types import MappingProxyType
from typing import Mapping

from crater_app.domain.errors import InvalidInput
from crater_app.domain.job_tasks import with_defaults
from crater_app.domain.jobs import JobSpec
from crater_app.domain.resources import CPU, MEMORY, canonical_quantity, parse_resources

#: the settings that hold the defaults, by resource (their environment variables in messages)
SETTINGS = {CPU: "CRATER_DEFAULT_JOB_CPU", MEMORY: "CRATER_DEFAULT_JOB_MEMORY"}


@lru_cache(maxsize=16)
def default_resources(cpu: str, memory: str) -> Mapping[str, str]:
    """The defaults as a resource list in canonical form (``{"cpu": "1", "memory": "2Gi"}``; ``"1000m"`` ->
    ``"1"``), without the empty ones.

    Raises:
        ValueError: a default that is not a Kubernetes quantity, naming its setting (a deployment error: Crater
            checks them at start, ``bootstrap.build_context``).
    """
    found: dict[str, str] = {}
    for name, value in ((CPU, cpu), (MEMORY, memory)):
        value = value.strip()
        if not value:
            continue
        try:
            parse_resources({name: value})
        except InvalidInput as exc:
            raise ValueError(f"{SETTINGS[name]}={value!r} is not a Kubernetes quantity such as '1', '500m' or "
                             f"'2Gi': {exc.message}") from None
        found[name] = canonical_quantity(value)
    return MappingProxyType(found)


def with_default_resources(spec: JobSpec, defaults: Mapping[str, str]) -> JobSpec:
    """``spec`` with each resource of ``defaults`` that it does not name added (``spec`` itself when none is
    missing): to the single-task form's ``resources``, or to each task's (per replica) when the spec has ``tasks``."""
    if spec.tasks is not None:
        tasks = with_defaults(spec.tasks, dict(defaults))
        return spec if all(a is b for a, b in zip(tasks, spec.tasks)) else spec.model_copy(update={"tasks": tasks})
    missing = {name: value for name, value in defaults.items() if name not in spec.resources}
    if not missing:
        return spec
    return spec.model_copy(update={"resources": {**spec.resources, **missing}})
