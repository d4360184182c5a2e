"""Quota resource lists: a project's ``guarantee``/``deserved``/``capability`` and a member's ``share``.

A quota list is a Kubernetes-style resource list (``{"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": 8}``) that
may also name an accelerator *model* after a colon (``"nvidia.com/gpu:NVIDIA-A100-SXM4-80GB": 4``), as Volcano
Queues do with per-model scalar resources. Parsed, it is a *usage*: resource key -> integer amount, in canonical
units (``cpu`` millicores, ``memory`` bytes, accelerators whole devices), the shape :mod:`crater_app.domain.admission`
works with. Quantities go through :func:`crater_app.domain.resources.parse_amount` (hence
``kubernetes.utils.parse_quantity``), so a quota accepts exactly what a JobSpec's ``resources`` accepts.

Rules (Volcano Queue spec, ``guarantee <= deserved <= capability``): a key absent from ``capability`` has no
ceiling; a key absent from ``guarantee``/``deserved`` is zero. An amount of ``0`` is kept (a capability of ``0``
GPUs forbids GPUs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from crater_app.domain import field_paths
from crater_app.domain.errors import InvalidInput
from crater_app.domain.naming import ACCELERATOR_MODEL, MAX_MODEL_CHARS
from crater_app.domain.resources import CPU, MEMORY, ResourceList, format_bytes, parse_amount

Usage = dict[str, int]

SECTIONS = ("guarantee", "deserved", "capability")
MAX_QUOTA_KEYS = 64  # cpu, memory and a few accelerator names, each with a few models


def model_key(resource: str, model: str) -> str:
    """The usage key of ``model`` devices of accelerator ``resource`` (``nvidia.com/gpu:NVIDIA-A100-SXM4-80GB``)."""
    return f"{resource}:{model}"


def split_key(key: str) -> tuple[str, str | None]:
    """Split a usage key into (resource name, model or ``None``): ``"nvidia.com/gpu:H100"`` -> (``nvidia.com/gpu``,
    ``H100``). Resource names never hold a colon, so the first colon separates the model."""
    resource, sep, model = key.partition(":")
    return (resource, model) if sep else (resource, None)


def is_accelerator(key: str) -> bool:
    """True for an accelerator key (an extended resource name, with or without a model)."""
    resource = split_key(key)[0]
    return resource not in (CPU, MEMORY)


def parse_quota_list(raw: object, field_prefix: str) -> Usage:
    """Parse one quota resource list into a usage.

    Args:
        raw: mapping resource key -> quantity (string or number), or ``None`` (= ``{}``). Keys: ``cpu``, ``memory``,
            an extended name (``nvidia.com/gpu``) or an extended name with a model (``nvidia.com/gpu:MODEL``, model
            as in JobSpec ``accelerator_model``, at most 128 characters).
        field_prefix: path used in error fields, e.g. ``guarantee`` -> ``guarantee.nvidia.com/gpu``.

    Returns:
        ``{key: amount}``; cpu millicores, memory bytes, accelerators devices; zero amounts kept.

    Raises:
        InvalidInput: ``quota.list_not_mapping``, ``quota.list_too_many`` (``count``, ``max``), ``quota.key_type``
            (field ``<prefix>``); ``quota.model_not_accelerator``, ``quota.model_name`` (``max``) and every error of
            :func:`crater_app.domain.resources.parse_amount` (field ``<prefix>.<key>``, the key as written).
    """
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidInput("quota.list_not_mapping", field_prefix, field_name=field_prefix)
    if len(raw) > MAX_QUOTA_KEYS:
        raise InvalidInput("quota.list_too_many", field_prefix, field_name=field_prefix, count=len(raw),
                           max=MAX_QUOTA_KEYS)
    out: Usage = {}
    for key, quantity in raw.items():
        if not isinstance(key, str):
            raise InvalidInput("quota.key_type", field_prefix, field_name=field_prefix)
        field_name = field_paths.key(field_prefix, key)
        resource, model = split_key(key)
        if model is not None:
            if resource in (CPU, MEMORY):
                raise InvalidInput("quota.model_not_accelerator", field_name, field_name=field_name)
            if not model or len(model) > MAX_MODEL_CHARS or not ACCELERATOR_MODEL.fullmatch(model):
                raise InvalidInput("quota.model_name", field_name, field_name=field_name, max=MAX_MODEL_CHARS)
        out[key] = parse_amount(resource, quantity, field_name)
    return out


@dataclass(frozen=True)
class Quota:
    """A project's parsed quota (Volcano Queue spec): each a usage, see :func:`parse_quota_list`."""

    guarantee: Usage = field(default_factory=dict)
    deserved: Usage = field(default_factory=dict)
    capability: Usage = field(default_factory=dict)


def parse_quota(body: object) -> Quota:
    """Parse and check a quota body ``{"guarantee": {...}, "deserved": {...}, "capability": {...}}``.

    Absent sections are ``{}``. For every key present in two sections, ``guarantee <= deserved <= capability``
    (Volcano's Queue validation webhook rule); ``guarantee <= capability`` where ``deserved`` omits the key.

    Raises:
        InvalidInput: ``quota.not_mapping`` (field ``quota``), ``quota.unknown_section`` (field ``quota.<name>``;
            ``section``, ``sections``), any error of :func:`parse_quota_list`, or ``quota.order`` (see
            :func:`check_order`).
    """
    if not isinstance(body, Mapping):
        raise InvalidInput("quota.not_mapping", "quota", sections=list(SECTIONS))
    for name in body:
        if name not in SECTIONS:
            raise InvalidInput("quota.unknown_section", field_paths.key(None, name), section=str(name)[:64],
                               sections=list(SECTIONS))
    parsed = {name: parse_quota_list(body.get(name), name) for name in SECTIONS}
    check_order(parsed["guarantee"], parsed["deserved"], parsed["capability"])
    return Quota(**parsed)


def check_order(guarantee: Usage, deserved: Usage, capability: Usage) -> None:
    """Check ``guarantee <= deserved <= capability`` per key where both sides give the key.

    Raises:
        InvalidInput: ``quota.order``, field ``guarantee.<key>`` or ``deserved.<key>``; arguments ``low``/``high``
        (the two field paths) and ``low_amount``/``high_amount`` (``{key: amount}`` in Crater's units).
    """
    pairs = (("guarantee", guarantee, "deserved", deserved), ("deserved", deserved, "capability", capability),
             ("guarantee", guarantee, "capability", capability))
    for low_name, low, high_name, high in pairs:
        for key in sorted(low):
            if key in high and low[key] > high[key]:
                raise InvalidInput("quota.order", field_paths.key(low_name, key), low=field_paths.key(low_name, key),
                                   high=field_paths.key(high_name, key), low_amount={key: low[key]},
                                   high_amount={key: high[key]})


def render_quota_list(usage: Mapping[str, int]) -> dict[str, str]:
    """Render a usage as a Kubernetes-style resource list (``{"cpu": "500m", "memory": "1073741824",
    "nvidia.com/gpu": "8"}``); :func:`parse_quota_list` reads it back to the same usage."""
    out: dict[str, str] = {}
    for key in sorted(usage):
        amount = usage[key]
        if key == CPU:
            out[key] = f"{amount}m" if amount % 1000 else str(amount // 1000)
        else:
            out[key] = str(amount)
    return out


def usage_of(resources: ResourceList, model: str | None) -> Usage:
    """What a job with ``resources`` (and ``accelerator_model`` ``model``) holds: ``cpu``/``memory`` and, per
    accelerator name ``n`` devices under the name and, when ``model`` is set, also under ``name:model``.
    Zero amounts are left out."""
    out: Usage = {}
    if resources.cpu_m:
        out[CPU] = resources.cpu_m
    if resources.memory_bytes:
        out[MEMORY] = resources.memory_bytes
    for name, count in resources.accelerators.items():
        if count:
            out[name] = count
            if model:
                out[model_key(name, model)] = count
    return out


def add(a: Mapping[str, int], b: Mapping[str, int]) -> Usage:
    """Key-wise sum of two usages (a new dict)."""
    out = dict(a)
    for key, amount in b.items():
        out[key] = out.get(key, 0) + amount
    return out


def sub(a: Mapping[str, int], b: Mapping[str, int]) -> Usage:
    """Key-wise ``a - b`` (a new dict; amounts may go negative, callers decide)."""
    out = dict(a)
    for key, amount in b.items():
        out[key] = out.get(key, 0) - amount
    return out


def over(used: Mapping[str, int], demand: Mapping[str, int], limit: Mapping[str, int]) -> str | None:
    """The first key (sorted) where ``used + demand`` exceeds ``limit``, looking only at keys ``demand`` asks for
    and ``limit`` gives (an absent key has no ceiling); ``None`` when everything fits."""
    for key in sorted(demand):
        amount = demand[key]
        if amount > 0 and key in limit and used.get(key, 0) + amount > limit[key]:
            return key
    return None


def fits(used: Mapping[str, int], demand: Mapping[str, int], limit: Mapping[str, int]) -> bool:
    """True when ``used + demand <= limit`` for every key ``limit`` gives (see :func:`over`)."""
    return over(used, demand, limit) is None


def devices(usage: Mapping[str, int]) -> int:
    """Accelerator devices in ``usage``: the sum over accelerator names without a model (model keys repeat them)."""
    return sum(amount for key, amount in usage.items() if is_accelerator(key) and split_key(key)[1] is None)


def format_amount(key: str, amount: int) -> str:
    """An amount of ``key`` for people: cpu ``4 cores`` / ``1 core`` / ``500m``; memory ``16.0 GiB``; accelerators
    ``4 × nvidia.com/gpu`` or ``4 × nvidia.com/gpu (NVIDIA-A100-SXM4-80GB)``."""
    if key == CPU:
        if amount % 1000:
            return f"{amount}m"
        cores = amount // 1000
        return f"{cores} core" if cores == 1 else f"{cores} cores"
    if key == MEMORY:
        return format_bytes(amount)
    resource, model = split_key(key)
    return f"{amount} × {resource} ({model})" if model else f"{amount} × {resource}"


def format_usage(usage: Mapping[str, int], keys: Iterable[str] | None = None) -> str:
    """A usage for people, keys sorted, ``", "``-separated (``"4 cores, 16.0 GiB, 2 × nvidia.com/gpu"``)."""
    chosen = sorted(usage if keys is None else keys)
    return ", ".join(format_amount(key, usage.get(key, 0)) for key in chosen) or "nothing"
