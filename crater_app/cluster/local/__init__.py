"""The embedded *local* backend: workloads as process groups on this machine.

Modules: :mod:`~.backend` (:class:`LocalBackend`, the ``ClusterBackend``), :mod:`~.store` (its SQLite state),
:mod:`~.placement` (the placement round), :mod:`~.specs` (a workload as the store keeps it), :mod:`~.replicas`
(a replica's names, devices and record), :mod:`~.gangs` (starting a placed gang whole), :mod:`~.launch` (starting one
replica), :mod:`~.supervisor` (exits, the gang's end, deadlines, cgroups left behind), :mod:`~.gang_outcomes`
(a gang's statuses as codes),
:mod:`~.processes` (starting and stopping runners), :mod:`~.environment` (the job's and the runner's environments),
:mod:`~.runner` (the stdlib-only wrapper each job runs under), :mod:`~.outcomes` (statuses as codes),
:mod:`~.cgroups` (per-job limits), :mod:`~.isolation` and :mod:`~.accounts` (who a job runs as),
:mod:`~.inventory` (this machine's CPU, memory and accelerators). See ``docs/local-backend.md``.
"""

from crater_app.cluster.local.backend import LocalBackend

__all__ = ["LocalBackend"]
