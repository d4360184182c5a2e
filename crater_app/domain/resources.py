"""Resource lists as Kubernetes writes them (``cpu``, ``memory``, extended names like ``nvidia.com/gpu``).

Quantities are parsed with ``kubernetes.utils.parse_quantity`` (the Kubernetes quantity grammar).
Canonical units: CPU in millicores, memory in bytes, accelerators as whole devices.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache

from kubernetes.utils import parse_quantity

from crater_app.domain import field_paths
from crater_app.domain.errors import InvalidInput

CPU = "cpu"
MEMORY = "memory"
NVIDIA_GPU = "nvidia.com/gpu"
# Kubernetes extended resource names: a domain-qualified name, e.g. nvidia.com/gpu, huawei.com/Ascend910.
_EXTENDED = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
MAX_RESOURCE_NAMES = 16
#: the longest quantity text (``"512Gi"``, ``"1.5"``) a resource list takes
MAX_QUANTITY_CHARS = 32
# Canonical amounts (millicores, bytes, devices) are stored as 64-bit integers. A larger one ('1e99999' is 7
# characters) is refused before int() would build, and str() would fail to print, a number of 100,000 digits.
MAX_CANONICAL = 2**63 - 1
# The Kubernetes quantity grammar (k8s.io/apimachinery resource.Quantity), ASCII only. parse_quantity goes through
# Python's Decimal, which also reads '1_000' and other scripts' digits ('١'): a finite value must match it too.
_QUANTITY = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?P<suffix>[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?")
#: Kubernetes' decimal SI suffixes by power of ten, and its binary ones by power of 1024 (resource.Quantity)
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


@dataclass(frozen=True)
class ResourceList:
    """A parsed request: ``cpu_m`` millicores, ``memory_bytes`` bytes, ``accelerators`` name -> devices."""

    cpu_m: int = 0
    memory_bytes: int = 0
    accelerators: dict[str, int] = field(default_factory=dict)

    @property
    def gpus(self) -> int:
        """Total accelerator devices requested, all resource names together."""
        return sum(self.accelerators.values())

    def to_k8s(self) -> dict[str, str]:
        """Render as a Kubernetes resource list (``{"cpu": "500m", "memory": "1Gi", ...}``; memory in the largest
        binary unit that divides it, else bytes)."""
        out: dict[str, str] = {}
        if self.cpu_m:
            out[CPU] = f"{self.cpu_m}m" if self.cpu_m % 1000 else str(self.cpu_m // 1000)
        if self.memory_bytes:  # in binary units where it divides (kubectl's form of a byte count): "1536Mi"
            out[MEMORY] = (canonical_quantity(f"{self.memory_bytes // 1024}Ki") if self.memory_bytes % 1024 == 0
                           else str(self.memory_bytes))
        for name, count in sorted(self.accelerators.items()):
            out[name] = str(count)
        return out


def _quantity(raw: object, field_name: str) -> Decimal:
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise InvalidInput("resources.quantity_type", field_name, field_name=field_name)
    text = str(raw).strip()
    if len(text) > MAX_QUANTITY_CHARS:
        raise InvalidInput("resources.quantity_too_long", field_name, field_name=field_name, length=len(text),
                           max=MAX_QUANTITY_CHARS)
    try:
        value = parse_quantity(text)
        if value.is_finite() and not _QUANTITY.fullmatch(text):
            raise ValueError(text)
    except (ValueError, TypeError, ArithmeticError):
        raise InvalidInput("resources.quantity_format", field_name, field_name=field_name, value=text) from None
    if not value.is_finite():  # parse_quantity accepts "inf"/"Infinity"
        raise InvalidInput("resources.quantity_infinite", field_name, field_name=field_name, value=text)
    if value < 0:
        raise InvalidInput("resources.quantity_negative", field_name, field_name=field_name, value=text)
    return value


def _decimal_form(value: Decimal, exponent_suffix: bool) -> str:
    """``value`` (not 0) as an integer mantissa and a power of ten that is a multiple of 3, as large as possible
    without losing a digit; the power written as an SI suffix (``k``, ``M``, ``m``) or, for the exponent form,
    ``e<power>``."""
    sign, digits, exponent = value.normalize().as_tuple()
    mantissa = int("".join(map(str, digits)))
    shift = int(exponent) % 3  # down to a multiple of 3: 1.5e4 -> 15e3
    mantissa, exponent = mantissa * 10**shift, int(exponent) - shift
    if exponent_suffix or exponent not in _DECIMAL_SUFFIXES:
        suffix = f"e{exponent}" if exponent else ""
    else:
        suffix = _DECIMAL_SUFFIXES[exponent]
    return f"{'-' if sign else ''}{mantissa}{suffix}"


@lru_cache(maxsize=4096)  # the same few quantities ("100m", "16Mi", 1) come with every submission
def canonical_quantity(raw: str | int | float) -> str:
    """A Kubernetes quantity (``" 1 "``, ``"1.0"``, ``"0.5"``, ``"1536Mi"``, ``2``) in Kubernetes' canonical form, the
    text ``kubectl`` shows for it (k8s.io/apimachinery resource.Quantity ``CanonicalizeBytes``): the suffix kind as
    written is kept (decimal SI, binary SI or an exponent), the mantissa is an integer and the suffix as large as no
    digit is lost. ``" 1 "`` and ``"1.0"`` -> ``"1"``; ``"-0"`` -> ``"0"``; ``"0.5"`` -> ``"500m"``; ``"1000"`` ->
    ``"1k"``; ``"1.5Gi"`` -> ``"1536Mi"``; ``"1e3"`` -> ``"1e3"``; a binary quantity under 1024 or with a fraction in
    decimal SI (``"0.5Ki"`` -> ``"512"``). It parses (``parse_quantity``) to the same value.

    Raises:
        ValueError: ``raw`` is not a Kubernetes quantity (validate with :func:`parse_amount` first).
    """
    text = str(raw).strip()
    match = _QUANTITY.fullmatch(text)
    value = parse_quantity(text)
    if match is None or not value.is_finite():
        raise ValueError(f"not a Kubernetes quantity: {text[:MAX_QUANTITY_CHARS]!r}")
    if value == 0:
        return "0"
    suffix = match.group("suffix") or ""
    if suffix.endswith("i") and abs(value) >= 1024 and value == value.to_integral_value():
        amount, power = int(value), 0
        while amount % 1024 == 0 and power < len(_BINARY_SUFFIXES) - 1:
            amount, power = amount // 1024, power + 1
        return f"{amount}{_BINARY_SUFFIXES[power]}"
    return _decimal_form(value, len(suffix) > 1 and suffix[0] in "eE")  # "E" alone is exa, "E3" an exponent


def canonical_resources(raw: dict[str, object]) -> dict[str, str]:
    """A resource list with every quantity in canonical form (:func:`canonical_quantity`), keys and order kept:
    what a job stores and shows is what its limits are enforced with (``{"cpu": " 1 ", "memory": "1.0Gi"}`` ->
    ``{"cpu": "1", "memory": "1Gi"}``). Validate with :func:`parse_resources` first."""
    return {name: canonical_quantity(quantity) for name, quantity in raw.items()}


def is_resource_name(name: object) -> bool:
    """``cpu``, ``memory`` or a Kubernetes extended resource name (``nvidia.com/gpu``, at most 253 characters)."""
    return isinstance(name, str) and (name in (CPU, MEMORY) or (len(name) <= 253 and bool(_EXTENDED.fullmatch(name))))


def parse_amount(name: str, quantity: object, field_name: str) -> int:
    """One entry of a resource list in Crater's units: ``cpu`` millicores, ``memory`` bytes, an extended resource
    (``nvidia.com/gpu``) whole devices. ``field_name`` is the full path errors name
    (``resources.nvidia.com/gpu``, ``capability.nvidia.com/gpu:NVIDIA-A100-SXM4-80GB``).

    Raises:
        InvalidInput: (field ``field_name``, also the argument ``field_name``) ``resources.quantity_*`` (not a
        Kubernetes quantity of at most 32 characters, infinite, negative: ``value``), ``resources.*_too_large``
        (over a 64-bit amount: ``value``, ``max``), ``resources.*_fraction`` (finer than 1m CPU, 1 byte, 1 device:
        ``value``), ``resources.unknown_name`` (``name``: not cpu, memory or an extended name).
    """
    value = _quantity(quantity, field_name)
    given = str(quantity)[:MAX_QUANTITY_CHARS]
    if name == CPU:
        if value > MAX_CANONICAL or value * 1000 > MAX_CANONICAL:
            raise InvalidInput("resources.cpu_too_large", field_name, field_name=field_name, value=given,
                               max=MAX_CANONICAL)
        if value * 1000 != (value * 1000).to_integral_value():
            raise InvalidInput("resources.cpu_fraction", field_name, field_name=field_name, value=given)
        return int(value * 1000)
    if value > MAX_CANONICAL and name == MEMORY:
        raise InvalidInput("resources.memory_too_large", field_name, field_name=field_name, value=given,
                           max=MAX_CANONICAL)
    if value > MAX_CANONICAL:
        raise InvalidInput("resources.devices_too_large", field_name, field_name=field_name, value=given,
                           max=MAX_CANONICAL)
    if not is_resource_name(name):
        raise InvalidInput("resources.unknown_name", field_name, field_name=field_name, name=field_paths.shown(name))
    if value != value.to_integral_value():
        if name == MEMORY:
            raise InvalidInput("resources.memory_fraction", field_name, field_name=field_name, value=given)
        raise InvalidInput("resources.devices_fraction", field_name, field_name=field_name, value=given)
    return int(value)


def parse_resources(raw: object, field_prefix: str = "resources") -> ResourceList:
    """Parse a Kubernetes-style resource list into a :class:`ResourceList`.

    Args:
        raw: mapping of resource name to quantity (string or number), or ``None``.
        field_prefix: path used in error fields, e.g. ``resources`` -> ``resources.memory``.

    Raises:
        InvalidInput: ``resources.not_mapping``, ``resources.too_many`` (``count``, ``max``), ``resources.key_type``
            (field ``field_prefix``), and any error of :func:`parse_amount` (field ``<prefix>.<name>``).
    """
    if raw is None:
        return ResourceList()
    if not isinstance(raw, dict):
        raise InvalidInput("resources.not_mapping", field_prefix, field_name=field_prefix)
    if len(raw) > MAX_RESOURCE_NAMES:
        raise InvalidInput("resources.too_many", field_prefix, field_name=field_prefix, count=len(raw),
                           max=MAX_RESOURCE_NAMES)
    cpu_m = 0
    memory = 0
    accelerators: dict[str, int] = {}
    for name, quantity in raw.items():
        if not isinstance(name, str):
            raise InvalidInput("resources.key_type", field_prefix, field_name=field_prefix)
        amount = parse_amount(name, quantity, field_paths.key(field_prefix, name))
        if name == CPU:
            cpu_m = amount
        elif name == MEMORY:
            memory = amount
        elif amount:
            accelerators[name] = amount
    return ResourceList(cpu_m=cpu_m, memory_bytes=memory, accelerators=accelerators)


def format_bytes(n: int) -> str:
    """Format ``n`` bytes with binary units (``"4.0 GiB"``)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
