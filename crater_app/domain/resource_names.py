"""Resource names a request asks for that no node offers, and the offered name the user probably meant.

``nvidia.com/gpus`` is a valid extended resource name (Kubernetes accepts it and the pod would wait forever); when
no node has such devices, the submission is refused with the names the cluster does offer and, when one is close
(``nvidia.com/gpu``), "did you mean ...?". Closeness is :func:`difflib.get_close_matches` (Ratcliff/Obershelp
similarity, cutoff 0.6) on lower-cased names, as Python's own "did you mean" for misspelt attributes does.
"""

from __future__ import annotations

import difflib
from typing import Iterable

from crater_app.domain import field_paths
from crater_app.domain.errors import Unschedulable
from crater_app.domain.resources import CPU, MEMORY

#: similarity a candidate needs to be suggested (difflib's default)
CUTOFF = 0.6


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate most similar to ``name`` (case-insensitive; at least :data:`CUTOFF`), or ``None``."""
    by_folded: dict[str, str] = {}
    for candidate in candidates:
        by_folded.setdefault(candidate.lower(), candidate)
    found = difflib.get_close_matches(name.lower(), list(by_folded), n=1, cutoff=CUTOFF)
    return by_folded[found[0]] if found else None


def check_offered(requested: Iterable[str], offered: Iterable[str], field_prefix: str = "resources") -> None:
    """Raise when a name in ``requested`` (accelerator resource names) is not in ``offered`` (the resource name of
    every device of every node; read only as far as needed). ``cpu`` and ``memory`` are always offered.

    Raises:
        Unschedulable: field ``<field_prefix>.<name>``; code ``job.resource_not_offered_suggestion`` with arguments
            ``resource``, ``suggestion`` and ``offered`` (sorted names, ``cpu`` and ``memory`` first) when an offered
            name is close, else ``job.resource_not_offered`` with ``resource`` and ``offered``.
    """
    wanted = set(requested) - {CPU, MEMORY}
    if not wanted:
        return
    seen: set[str] = set()
    for name in offered:
        seen.add(name)
        if wanted <= seen:
            return
    missing = sorted(wanted - seen)[0]
    names = [CPU, MEMORY, *sorted(seen - {CPU, MEMORY})]
    suggestion = closest(missing, names)
    field = field_paths.key(field_prefix, missing)
    if suggestion is not None:
        raise Unschedulable("job.resource_not_offered_suggestion", field, resource=missing, suggestion=suggestion,
                            offered=names)
    raise Unschedulable("job.resource_not_offered", field, resource=missing, offered=names)
