"""A project's Volcano Queues (``scheduling.volcano.sh/v1beta1``) from its quota, as dicts: :func:`project_queues`.

Volcano's queue resources (``capability``, ``deserved``, ``guarantee.resource``) are Kubernetes resource lists:
they know resource names only, not Crater's per-model keys (``nvidia.com/gpu:NVIDIA-A100-SXM4-80GB``,
:func:`crater_app.domain.quota.model_key`). So the Queue bounds each accelerator by name, and Crater's own
admission (:mod:`crater_app.domain.admission`) enforces the per-model amounts before a Job is made:

- ``capability`` (a ceiling; an absent key has none, in Crater and in Volcano): the plain key where the quota has
  it; model keys alone give no ceiling on the name (a model-less job, or one of another model, has none in Crater,
  and Volcano must never refuse what Crater admitted);
- ``deserved`` and ``guarantee`` (an absent key is zero): the larger of the plain key and the sum of its model
  keys (a project deserving 4 A100 and 2 H100 deserves 6 GPUs), never above the section above it
  (``guarantee <= deserved <= capability``, as Volcano's queue webhook checks).

Quantities: ``cpu`` in millicores (``"64000m"``), ``memory`` in bytes, accelerators as counts.

Member shares are child queues (Volcano hierarchical queues, ``spec.parent``; Volcano's capacity plugin docs):
a member's share is its queue's ``capability`` (each key at most the project's); the project's ``deserved`` is
split over the members' queues, each getting at most its share, in proportion when they ask for more than there
is, the rest going to :func:`~crater_app.cluster.kube.object_names.others_queue_name` (Volcano places jobs only in
leaf queues, so members without a share need one too); ``guarantee`` stays on the project's queue.
"""

from __future__ import annotations

from typing import Mapping

from crater_app.cluster.kube.object_names import (ANNOTATION_PROJECT, ANNOTATION_USER, LABEL_PROJECT, LABEL_USER,
                                                  base_labels, member_queue_name, others_queue_name, project_slug,
                                                  project_queue_name, user_slug)
from crater_app.cluster.kube.options import KubeOptions
from crater_app.domain.quota import Quota, Usage, split_key
from crater_app.domain.resources import CPU

API_VERSION = "scheduling.volcano.sh/v1beta1"
KIND = "Queue"
#: the largest ``spec.weight`` Volcano takes (its Queue CRD: 1..65535)
MAX_WEIGHT = 65535


def quantities(amounts: Mapping[str, int]) -> dict[str, str]:
    """A by-name usage (no model keys) as a Kubernetes resource list: ``cpu`` in millicores (``"500m"``), the others
    as integers (bytes, devices); keys sorted."""
    return {key: f"{amount}m" if key == CPU else str(amount) for key, amount in sorted(amounts.items())}


def by_name(usage: Mapping[str, int], *, sum_models: bool) -> Usage:
    """``usage`` by resource name: plain keys as they are; with ``sum_models``, a name also gets the sum of its
    model keys when that is larger (deserved, guarantee); without it, model keys are left out (capability)."""
    plain = {key: amount for key, amount in usage.items() if split_key(key)[1] is None}
    if not sum_models:
        return plain
    models: Usage = {}
    for key, amount in usage.items():
        name, model = split_key(key)
        if model is not None:
            models[name] = models.get(name, 0) + amount
    return {name: max(plain.get(name, 0), models.get(name, 0)) for name in {*plain, *models}}


def _capped(usage: Usage, ceiling: Mapping[str, int]) -> Usage:
    return {key: min(amount, ceiling[key]) if key in ceiling else amount for key, amount in usage.items()}


def queue_sections(quota: Quota) -> tuple[Usage, Usage, Usage]:
    """(capability, deserved, guarantee) by resource name for Volcano, as this module's docstring says."""
    capability = by_name(quota.capability, sum_models=False)
    deserved = _capped(by_name(quota.deserved, sum_models=True), capability)
    guarantee = _capped(_capped(by_name(quota.guarantee, sum_models=True), capability), deserved)
    return capability, deserved, guarantee


def _queue(name: str, labels: dict[str, str], annotations: dict[str, str], spec: dict) -> dict:
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": name, "labels": labels, "annotations": annotations}, "spec": spec}


def _spec(capability: Usage, deserved: Usage, guarantee: Usage, *, weight: int, reclaimable: bool,
          parent: str | None) -> dict:
    spec: dict = {"weight": weight, "reclaimable": reclaimable}
    if parent:
        spec["parent"] = parent
    if capability:
        spec["capability"] = quantities(capability)
    if deserved:
        spec["deserved"] = quantities(deserved)
    if guarantee:
        spec["guarantee"] = {"resource": quantities(guarantee)}
    return spec


def split_deserved(deserved: Usage, shares: Mapping[str, Usage]) -> tuple[dict[str, Usage], Usage]:
    """Split the project's by-name ``deserved`` over members' by-name share capabilities: (per member, the rest).

    Per key, each member asks ``min(share, deserved)`` (a share without the key asks nothing); when the asks fit
    they are given, else each gets ``floor(deserved * ask / total)``; the rest (never negative) is the others'
    queue's. The members' amounts and the rest add up to at most ``deserved`` (Volcano's rule for a parent)."""
    members: dict[str, Usage] = {user: {} for user in shares}
    rest: Usage = {}
    for key, total in sorted(deserved.items()):
        asks = {user: min(share[key], total) for user, share in shares.items() if key in share}
        asked = sum(asks.values())
        given = asks if asked <= total else {user: total * ask // asked for user, ask in asks.items()}
        for user, amount in given.items():
            if amount:
                members[user][key] = amount
        if total - sum(given.values()):
            rest[key] = total - sum(given.values())
    return members, rest


def project_queues(project: str, quota: Quota, options: KubeOptions, shares: Mapping[str, Quota] | None = None, *,
                   weight: int = 1, reclaimable: bool = True) -> list[dict]:
    """The Queue of ``project`` and, with ``shares`` (and ``options.member_queues``), its members' child queues
    (first the project's, then the members' sorted by queue name, then the others' queue).

    The project's Queue: name :func:`~crater_app.cluster.kube.object_names.project_queue_name`, labels
    ``crater.io/project`` (the slug) and ``app.kubernetes.io/managed-by``, the raw name in an annotation,
    ``spec`` with ``capability``/``deserved``/``guarantee.resource`` (:func:`queue_sections`), ``weight`` (1..65535,
    Volcano's share when queues compete without ``deserved``) and ``reclaimable`` (whether other queues may take
    back what it uses beyond ``deserved``). A member's queue (user name -> the member's share, its ``capability``;
    :func:`~crater_app.cluster.kube.object_names.member_queue_name`) has ``parent`` the project's Queue, its share
    as ``capability`` (each key at most the project's), its part of ``deserved`` (:func:`split_deserved`), the
    ``crater.io/user`` label and the raw user name; the others' queue has the rest of ``deserved`` and the
    project's ``capability``.

    Raises:
        ValueError: ``weight`` outside 1..65535.
    """
    if not 1 <= weight <= MAX_WEIGHT:
        raise ValueError(f"weight must be in 1..{MAX_WEIGHT}, not {weight}")
    parent = project_queue_name(project, options)
    labels = {**base_labels(options), LABEL_PROJECT: project_slug(project)}
    annotations = {ANNOTATION_PROJECT: project}
    capability, deserved, guarantee = queue_sections(quota)
    out = [_queue(parent, labels, annotations,
                  _spec(capability, deserved, guarantee, weight=weight, reclaimable=reclaimable, parent=None))]
    if not shares or not options.member_queues:
        return out
    member_caps = {user: _capped(by_name(share.capability, sum_models=False), capability)
                   for user, share in shares.items()}
    member_deserved, rest = split_deserved(deserved, member_caps)
    children = []
    for user in shares:
        children.append(_queue(member_queue_name(project, user, options),
                               {**labels, LABEL_USER: user_slug(user)}, {**annotations, ANNOTATION_USER: user},
                               _spec(member_caps[user], member_deserved[user], {}, weight=1,
                                     reclaimable=reclaimable, parent=parent)))
    children.sort(key=lambda q: q["metadata"]["name"])
    others = _queue(others_queue_name(project, options), dict(labels), dict(annotations),
                    _spec(capability, rest, {}, weight=1, reclaimable=reclaimable, parent=parent))
    return [*out, *children, others]
