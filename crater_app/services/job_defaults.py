"""The requests a job that names no ``cpu`` or no ``memory`` gets, for the console's new-job form to show.

The rule and its sources are in :mod:`crater_app.domain.job_defaults`; ``services.jobs.submit_job`` applies the
same settings to every submission (API and form), and the OpenAPI document shows them on ``POST /jobs``.
"""

from __future__ import annotations

from crater_app.domain.job_defaults import default_resources
from crater_app.domain.policy import Actor
from crater_app.services.context import ServiceContext


def resource_defaults(ctx: ServiceContext, actor: Actor) -> dict[str, str]:
    """The defaults as Kubernetes quantities by resource (``{"cpu": "1", "memory": "2Gi"}``), from the settings
    ``default_job_cpu``/``default_job_memory``; a resource the platform gives no default is absent. Any signed-in
    ``actor`` may read them."""
    settings = ctx.settings
    return dict(default_resources(settings.default_job_cpu, settings.default_job_memory))
