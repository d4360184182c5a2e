"""Resource lists as Kubernetes writes them (``cpu``, ``memory``, extended names like ``nvidia.com/gpu``).

Quantities are parsed with ``kubernetes.utils.parse_quantity`` (the Kubernetes quantity grammar).
Canonical units: CPU in millicores, memory in bytes, accelerators as whole devices.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

from kubernetes.utils import parse_quantity

from crater_app.domain.errors import InvalidInput

CPU = "cpu"
MEMORY = "memory"
NVIDIA_GPU = "nvidia.com/gpu"
# Kubernetes extended resource names: a domain-qualified name, e.g. nvidia.com/gpu, huawei.com/Ascend910.
_EXTENDED = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
MAX_RESOURCE_NAMES = 16
# Canonical amounts (millicores, bytes, devices) are stored as 64-bit integers. A larger one ('1e99999' is 7
# characters) is refused before int() would build, and str() would fail to print, a number of 100,000 digits.
MAX_CANONICAL = 2**63 - 1
# The Kubernetes quantity grammar (k8s.io/apimachinery resource.Quantity), ASCII only. parse_quantity goes through
# Python's Decimal, which also reads '1_000' and other scripts' digits ('١'): a finite value must match it too.
_QUANTITY = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?")


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
        """Render as a Kubernetes resource list (``{"cpu": "500m", "memory": "1073741824", ...}``)."""
        out: dict[str, str] = {}
        if self.cpu_m:
            out[CPU] = f"{self.cpu_m}m" if self.cpu_m % 1000 else str(self.cpu_m // 1000)
        if self.memory_bytes:
            out[MEMORY] = str(self.memory_bytes)
        for name, count in sorted(self.accelerators.items()):
            out[name] = str(count)
        return out


def _quantity(raw: object, field_name: str) -> Decimal:
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise InvalidInput(f"{field_name} must be a quantity such as '2', '500m' or '4Gi'", field_name)
    text = str(raw).strip()
    if len(text) > 32:
        raise InvalidInput(f"{field_name} is {len(text)} characters; the limit is 32", field_name)
    try:
        value = parse_quantity(text)
        if value.is_finite() and not _QUANTITY.fullmatch(text):
            raise ValueError(text)
    except (ValueError, TypeError, ArithmeticError):
        raise InvalidInput(
            f"{field_name} '{text}' is not a Kubernetes quantity (e.g. '2', '500m', '4Gi')", field_name
        ) from None
    if not value.is_finite():  # parse_quantity accepts "inf"/"Infinity"
        raise InvalidInput(f"{field_name} '{text}' is not a finite quantity (e.g. '2', '500m', '4Gi')", field_name)
    if value < 0:
        raise InvalidInput(f"{field_name} must not be negative (got {text})", field_name)
    return value


def parse_resources(raw: object, field_prefix: str = "resources") -> ResourceList:
    """Parse a Kubernetes-style resource list into a :class:`ResourceList`.

    Args:
        raw: mapping of resource name to quantity (string or number), or ``None``.
        field_prefix: path used in error fields, e.g. ``resources`` -> ``resources.memory``.

    Raises:
        InvalidInput: unknown name shape, unparseable/negative quantity, fractional accelerators,
            CPU finer than 1m, memory finer than 1 byte.
    """
    if raw is None:
        return ResourceList()
    if not isinstance(raw, dict):
        raise InvalidInput(f"{field_prefix} must be a mapping of resource name to quantity", field_prefix)
    if len(raw) > MAX_RESOURCE_NAMES:
        raise InvalidInput(
            f"{field_prefix} has {len(raw)} entries; the limit is {MAX_RESOURCE_NAMES}", field_prefix
        )
    cpu_m = 0
    memory = 0
    accelerators: dict[str, int] = {}
    for name, quantity in raw.items():
        field_name = f"{field_prefix}.{name}"
        if not isinstance(name, str):
            raise InvalidInput(f"{field_prefix} keys must be strings", field_prefix)
        value = _quantity(quantity, field_name)
        if value > MAX_CANONICAL or value * (1000 if name == CPU else 1) > MAX_CANONICAL:
            unit = "millicores" if name == CPU else "bytes" if name == MEMORY else "devices"
            raise InvalidInput(f"{field_name} '{str(quantity)[:32]}' is too large (over {MAX_CANONICAL} {unit})", field_name)
        if name == CPU:
            millis = value * 1000
            if millis != millis.to_integral_value():
                raise InvalidInput(f"{field_name} must be a whole number of millicores (got {quantity})", field_name)
            cpu_m = int(millis)
        elif name == MEMORY:
            if value != value.to_integral_value():
                raise InvalidInput(f"{field_name} must be a whole number of bytes (got {quantity})", field_name)
            memory = int(value)
        elif len(name) <= 253 and _EXTENDED.fullmatch(name):
            if value != value.to_integral_value():
                raise InvalidInput(
                    f"{field_name} must be a whole number of devices; fractional accelerators "
                    f"are not supported (got {quantity})",
                    field_name,
                )
            if value:
                accelerators[name] = int(value)
        else:
            raise InvalidInput(
                f"{field_prefix} has unknown resource '{name[:64]}'; use cpu, memory or an extended "
                "name such as nvidia.com/gpu",
                field_name,
            )
    return ResourceList(cpu_m=cpu_m, memory_bytes=memory, accelerators=accelerators)


def format_bytes(n: int) -> str:
    """Format ``n`` bytes with binary units (``"4.0 GiB"``)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
