"""Which ``volumes`` a job may mount (pure): the registry of PersistentVolumeClaims each project may mount, and what
the backend can mount at all.

- A ``pvc`` volume names a claim in the job's namespace; without a check any user could mount any claim there,
  including the one that holds every project's and user's spaces. A claim may be mounted only by the projects the
  registry (``CRATER_VOLUME_CLAIMS``: claim name -> project names, :data:`ANY_PROJECT` for every project) lists for
  it, and the spaces claim (``CRATER_KUBE_SPACES_CLAIM``) never: :func:`check_claims`.
- A backend that cannot honour a volume refuses it at the field, by capability: a backend of host processes
  (the local one: processes on this machine, no mount namespaces) mounts nothing, and a ``pvc`` volume needs a
  backend that mounts claims: :func:`check_volume_support`.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from crater_app.domain import field_paths
from crater_app.domain.errors import InvalidInput
from crater_app.domain.job_volumes import VolumeSpec

#: in the registry: every project may mount the claim
ANY_PROJECT = "*"


def claims_of(project: str, registry: Mapping[str, Sequence[str]]) -> list[str]:
    """The claims ``project`` may mount (sorted): those the registry lists it, or :data:`ANY_PROJECT`, for."""
    return sorted(claim for claim, projects in registry.items() if project in projects or ANY_PROJECT in projects)


def check_claims(volumes: Sequence[VolumeSpec], project: str, registry: Mapping[str, Sequence[str]],
                 spaces_claim: str) -> None:
    """Every ``pvc`` volume of a job of ``project`` names a claim the registry lets the project mount, and not
    ``spaces_claim`` (the claim of every project's and user's spaces, mounted only as ``project``/``user`` volumes).

    Raises:
        InvalidInput: naming ``volumes[i].claim``: ``job.volume_claim_spaces`` (``claim``);
            ``job.volume_claim_not_registered`` (``claim``, ``project``, ``claims``: those it may mount, joined with
            ``, ``); ``job.volume_claim_none_registered`` (``claim``, ``project``) when it may mount none.
    """
    allowed: list[str] | None = None
    for i, volume in enumerate(volumes):
        if volume.source != "pvc":
            continue
        field = f"{field_paths.item('volumes', i)}.claim"
        if volume.claim == spaces_claim:
            raise InvalidInput("job.volume_claim_spaces", field, claim=volume.claim)
        if allowed is None:
            allowed = [c for c in claims_of(project, registry) if c != spaces_claim]
        if volume.claim not in allowed:
            if allowed:
                raise InvalidInput("job.volume_claim_not_registered", field, claim=volume.claim, project=project,
                                   claims=", ".join(allowed))
            raise InvalidInput("job.volume_claim_none_registered", field, claim=volume.claim, project=project)


def check_volume_support(volumes: Sequence[VolumeSpec], *, host_processes: bool, pvc_volumes: bool) -> None:
    """Whether the backend can mount ``volumes`` (from its capabilities: ``host_processes`` it runs processes on
    its own machine, which has no mount namespaces to mount anything into; ``pvc_volumes`` it mounts registered
    PersistentVolumeClaims).

    Raises:
        InvalidInput: ``job.volume_host_processes`` naming ``volumes[i]`` on a backend of host processes;
            ``job.volume_pvc_unsupported`` naming ``volumes[i].source`` for a ``pvc`` volume elsewhere without
            ``pvc_volumes``.
    """
    for i, volume in enumerate(volumes):
        at = field_paths.item("volumes", i)
        if host_processes:
            raise InvalidInput("job.volume_host_processes", at)
        if volume.source == "pvc" and not pvc_volumes:
            raise InvalidInput("job.volume_pvc_unsupported", f"{at}.source")


def by_role(volumes: Sequence[VolumeSpec], *, writes_project_space: bool) -> list[VolumeSpec]:
    """``volumes`` as the submitter's role lets them be mounted: the project's space (``source: project``) is
    read-only for a submitter who does not write it (a project member; its admins and platform admins write it, the
    rule of Crater's storage spaces); the user's own space and registered claims keep what the spec says. The volumes
    come back in order, the changed ones with ``read_only`` true (what is stored and shown with the job)."""
    return [v.model_copy(update={"read_only": True})
            if v.source == "project" and not v.read_only and not writes_project_space else v for v in volumes]
