"""Values inside translated sentences, written the way each language writes them (pure Python, no Reflex).

A catalogue template names how a placeholder is written after a colon, so the arguments stay plain JSON values
(numbers in Crater's units, strings, lists, resource dicts) and each language decides the words:

=================================  ======================================  ===================================
placeholder                        argument                                 ``en`` / ``zh-CN``
=================================  ======================================  ===================================
``{limit:duration}``               seconds (int)                            ``1h 30m`` / ``1小时30分钟``
``{size:bytes}``                   bytes (int)                              ``2 GiB`` / ``2 GiB``
``{cpu:cpu}``                      millicores (int)                         ``1.5 cores`` / ``1.5 核``
``{request:resources}``            ``{resource: amount}`` in Crater units   ``2 × nvidia.com/gpu, 4 cores``
``{names:list}``                   list of strings                          ``a, b and c`` / ``a、b 和 c``
``{names:choices}``                list of strings                          ``a, b or c`` / ``a、b 或 c``
``{jobs:plural:job|jobs}``         count (int)                              ``3 jobs`` / (Chinese writes none)
``{at:time}``                      ISO 8601 UTC instant (str)               ``2026-12-01 10:00 UTC``
``{points:number}``                a number                                 ``1,000,000``, ``12.5`` (both)
``{phase:phase}``                  a job phase (``Running``)                ``Running`` / ``运行中``
``{kind:term:approvals.kind}``     a word with a catalogue entry            ``approvals.kind.<word>``'s text
``{capability:limits}``            a resource dict; ``{}`` is no ceiling    as ``resources``; ``{}``: ``no limit``
``{why:message}``                  a nested message (:func:`part`)          its own template, same language
=================================  ======================================  ===================================

A duration of ``None`` (no limit, such as a job without ``max_runtime``) is written ``none`` / ``无``.

Numbers: an ``int`` is written exactly (never through a float: ``2**63 - 1`` stays ``…807``); a float with at most
two decimals and no trailing zeros (``3653.0`` -> ``3653``, also in a placeholder without a format); a float of
magnitude ``1e13`` or more, or an int of more than 30 digits, in scientific notation (``1e+308``, not 309 digits).

A resource dict's amounts are in Crater's units (DESIGN.md §5): ``cpu`` millicores, ``memory`` and
``ephemeral-storage`` bytes, anything else (accelerators) devices; a key may carry an accelerator model after a
colon (``nvidia.com/gpu:NVIDIA-A100-SXM4-80GB``). Amounts already written as Kubernetes quantity strings
(``"2Gi"``) are shown as written.
"""

from __future__ import annotations

import math
import string
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any, Callable, Mapping

ZH = "zh-CN"
#: the binary units sizes are written in (IEC 80000-13, as Kubernetes' ``Ki``/``Mi``/``Gi`` quantities)
_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
#: floats of at least this magnitude are written in scientific notation (:func:`_scientific`): 13 digits before
#: the point and two after are the 15 decimal digits a double holds exactly (IEEE 754 binary64: 15.95)
SCIENTIFIC_FROM = 1e13
#: ints of more digits than this are written in scientific notation (an exact 300-digit number helps no reader)
MAX_EXACT_DIGITS = 30
#: the units a duration is written in: seconds per unit, English and Chinese symbol
_DURATION_UNITS = ((86400, "d", "天"), (3600, "h", "小时"), (60, "m", "分钟"), (1, "s", "秒"))
#: resources whose amounts are bytes
BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})


def _scientific(value: int | float | Decimal) -> str:
    """``value`` with four significant digits in scientific notation, trailing zeros dropped (``1e+308``,
    ``9.223e+18``): a number too large to be read digit by digit (``1e308`` would be 309 digits)."""
    mantissa, _, exponent = f"{Decimal(value):.3e}".partition("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{exponent}"


def _plain(value: int | float | Decimal, places: int = 2, grouping: bool = False) -> str:
    """``value`` for a sentence: an ``int`` exactly (``9223372036854775807``, never through a float); anything else
    with at most ``places`` decimals and no trailing zeros (``1.5``, ``2``, ``0.25``; ``3653.0`` -> ``3653``; a
    ``Decimal`` exactly to those places); a float of magnitude :data:`SCIENTIFIC_FROM` or more (an int or
    ``Decimal`` of more than :data:`MAX_EXACT_DIGITS` digits) in :func:`_scientific` form; ``grouping``: thousands separators (``1,000,000``). ``-0`` is ``0``; ``inf`` and
    ``nan`` as Python writes them."""
    if isinstance(value, int):
        if abs(value) >= 10**MAX_EXACT_DIGITS:
            return _scientific(value)
        return f"{value:,}" if grouping else str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if abs(value) >= (SCIENTIFIC_FROM if isinstance(value, float) else 10**MAX_EXACT_DIGITS):
        return _scientific(value)
    text = f"{value:,.{places}f}" if grouping else f"{value:.{places}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def _number(value: int | float) -> str:
    """``value`` with at most two decimals and no trailing zeros (``1.5``, ``2``, ``0.25``), ints exactly."""
    return _plain(value)


def number(lang: str, value: object) -> str:
    """A number with thousands separators and at most two decimals (``1000000`` -> ``1,000,000``; ``12.5``; ``-3``),
    the same in both languages. Ints are written exactly (``9,223,372,036,854,775,807``); a magnitude of at least
    :data:`SCIENTIFIC_FROM` in scientific notation (``1e+308``)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    return _plain(value, grouping=True)


def significant(value: float, digits: int = 2) -> str:
    """A non-negative amount that may be small (hours of use): with thousands separators and one decimal from 1
    up (``1,234.5``), below 1 with ``digits`` significant digits (``0.035``, ``0.5``, ``0.0012``) so that a small
    amount never reads as ``0``; exactly 0 is ``0``."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    if value == 0:
        return "0"
    if abs(value) >= 1:
        return _plain(value, places=1, grouping=True)
    places = digits - 1 - math.floor(math.log10(abs(value)))
    return _plain(round(value, places), places=places)


def bare(value: object) -> str:
    """A placeholder without a format (``{days}``): numbers as :func:`_plain` writes them but with every decimal a
    float has (``3653.0`` -> ``3653``, ``0.125`` stays, ``1e308`` -> ``1e+308``, ints exact); anything else as
    ``str``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return _plain(value)
    if math.isfinite(value) and abs(value) < SCIENTIFIC_FROM:
        return str(int(value)) if value.is_integer() else repr(value)
    return _plain(value)


def duration(lang: str, seconds: object) -> str:
    """Seconds as the two largest units (``90`` -> ``1m 30s`` / ``1分钟30秒``; ``0`` -> ``0s`` / ``0秒``); ``None``
    (no limit) -> ``none`` / ``无``."""
    if seconds is None:
        return "无" if lang == ZH else "none"
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return str(seconds)
    if isinstance(seconds, float) and not math.isfinite(seconds):
        return str(seconds)
    left = int(round(seconds))
    sign = "-" if left < 0 else ""
    left = abs(left)
    parts: list[str] = []
    for size, en, zh in _DURATION_UNITS:
        if left >= size or (size == 1 and not parts):
            count, left = divmod(left, size)
            parts.append(f"{_plain(count)}{zh if lang == ZH else en}")
        if len(parts) == 2:
            break
    return sign + ("" if lang == ZH else " ").join(parts)


def size(lang: str, amount: object) -> str:
    """Bytes in binary units (``2147483648`` -> ``2 GiB``; ``1536`` -> ``1.5 KiB``); the same in both languages."""
    if not isinstance(amount, (int, float)) or isinstance(amount, bool):
        return str(amount)
    if isinstance(amount, float) and not math.isfinite(amount):
        return f"{amount} {_BYTE_UNITS[0]}"
    value, unit = amount, 0
    while abs(value) >= 1024 and unit < len(_BYTE_UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{_number(value)} {_BYTE_UNITS[unit]}"


def cpu(lang: str, millicores: object) -> str:
    """Millicores as cores, exactly (``1500`` -> ``1.5 cores`` / ``1.5 核``; ``1000`` -> ``1 core``; ``125`` ->
    ``0.125 cores``)."""
    if not isinstance(millicores, (int, float)) or isinstance(millicores, bool):
        return str(millicores)
    if isinstance(millicores, int):
        cores: int | float | Decimal = millicores // 1000 if millicores % 1000 == 0 else Decimal(millicores) / 1000
    else:
        cores = millicores / 1000
    text = _plain(cores, places=3)
    if lang == ZH:
        return f"{text} 核"
    return f"{text} {'core' if cores == 1 else 'cores'}"


def _resource_name(lang: str, key: str) -> str:
    name, _, model = key.partition(":")
    return f"{name} ({model})" if model else name


def resource_amount(lang: str, key: str, amount: object) -> str:
    """One entry of a resource list: ``cpu`` as cores, memory as bytes, anything else as ``N × name``."""
    name = key.partition(":")[0]
    if isinstance(amount, str):  # a quantity as the user wrote it
        return f"{_resource_name(lang, key)} {amount}"
    if name == "cpu":
        return cpu(lang, amount) + (" CPU" if lang == ZH else "")
    if name in BYTE_RESOURCES:
        label = {"memory": "内存", "ephemeral-storage": "临时存储", "storage": "存储"}[name] if lang == ZH else name
        return f"{size(lang, amount)} {label}"
    shown = _number(amount) if isinstance(amount, (int, float)) and not isinstance(amount, bool) else amount
    return f"{shown} × {_resource_name(lang, key)}"


def resources(lang: str, amounts: object) -> str:
    """A resource dict (``{"nvidia.com/gpu": 2, "cpu": 4000}``) as a list (``2 × nvidia.com/gpu, 4 cores``)."""
    if not isinstance(amounts, Mapping):
        return str(amounts)
    if not amounts:
        return "无" if lang == ZH else "nothing"
    order = sorted(amounts, key=lambda k: (k.partition(":")[0] in ("cpu", *BYTE_RESOURCES), k))
    return ("、" if lang == ZH else ", ").join(resource_amount(lang, k, amounts[k]) for k in order)


def limits(lang: str, amounts: object) -> str:
    """A resource dict that is a ceiling (a quota's ``capability``, a member's ``share``): as :func:`resources`, but
    ``{}`` means no ceiling (``no limit`` / ``不限``)."""
    if isinstance(amounts, Mapping) and not amounts:
        return "不限" if lang == ZH else "no limit"
    return resources(lang, amounts)


def part(key: str, **args: object) -> dict:
    """A message nested in another one's arguments: ``{"key": <catalogue key>, "args": {...}}``, written by the
    ``{name:message}`` placeholder in the outer message's language (e.g. a notification's target
    ``part("approval.target.job", job_id=12, job_name="train")``). The arguments are JSON values as any message's."""
    return {"key": key, "args": args}


def listing(lang: str, items: object, conjunction: tuple[str, str] = ("and", "和")) -> str:
    """A list of words (``["a", "b", "c"]`` -> ``a, b and c`` / ``a、b 和 c``)."""
    if not isinstance(items, (list, tuple)):
        return str(items)
    words = [str(i) for i in items]
    if len(words) <= 1:
        return "".join(words)
    if lang == ZH:
        return "、".join(words[:-1]) + f" {conjunction[1]} " + words[-1]
    return ", ".join(words[:-1]) + f" {conjunction[0]} " + words[-1]


def alternatives(lang: str, items: object) -> str:
    """A list of choices (``["a", "b", "c"]`` -> ``a, b or c`` / ``a、b 或 c``)."""
    return listing(lang, items, ("or", "或"))


def plural(lang: str, count: object, forms: str) -> str:
    """``count`` with its noun: ``forms`` is ``singular|plural`` (English); Chinese nouns have no plural, so a
    Chinese template writes its measure word itself and this gives the bare number."""
    one, _, many = forms.partition("|")
    if lang == ZH:
        return str(count)
    return f"{count} {one if count == 1 else (many or one)}"


def instant(lang: str, value: object) -> str:
    """An ISO 8601 instant as ``YYYY-MM-DD HH:MM UTC``, or ``YYYY-MM-DD HH:MM:SS UTC`` when it is not on a whole
    minute (so that two instants a few seconds apart never read the same); the same in both languages (Crater's
    times are UTC)."""
    try:
        moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    moment = moment.astimezone(timezone.utc)
    seconds = f":{moment.second:02d}" if moment.second or moment.microsecond else ""
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} {moment.hour:02d}:{moment.minute:02d}{seconds} UTC"


#: format name -> writer(lang, value)
WRITERS: dict[str, Callable[[str, object], str]] = {
    "duration": duration, "bytes": size, "cpu": cpu, "resources": resources, "limits": limits, "list": listing,
    "choices": alternatives, "time": instant, "number": number,
}
#: how deep ``{x:message}`` parts may nest (a part's arguments holding parts)
MAX_DEPTH = 4


class MessageFormatter(string.Formatter):
    """``str.format`` with Crater's value formats (the table in this module's docstring) in one language.

    ``phase``, ``term`` and ``message`` are looked up through ``lookup`` (the language's catalogue: ``phase.<Name>``,
    ``<prefix>.<word>``, a part's key); an unknown format name falls back to ``str(value)`` so that a catalogue typo
    shows the value rather than failing the request.
    """

    def __init__(self, lang: str, lookup: Callable[[str], str | None], depth: int = 0) -> None:
        super().__init__()
        self.lang = lang
        self.lookup = lookup
        self.depth = depth

    def _part(self, value: Any) -> str:
        """A nested message (:func:`part`) in this language; anything else as ``str``."""
        if not isinstance(value, Mapping) or not isinstance(value.get("key"), str):
            return str(value)
        template = self.lookup(value["key"])
        args = value.get("args") or {}
        if template is None or self.depth >= MAX_DEPTH or not isinstance(args, Mapping):
            return value["key"]
        return MessageFormatter(self.lang, self.lookup, self.depth + 1).vformat(template, (), dict(args))

    def format_field(self, value: Any, format_spec: str) -> str:
        """``value`` formatted by its placeholder's type (``{x:plural:a|b}``, ``{x:duration}``, ``{x:resources}``, ...:
        the module docstring lists them) in this formatter's language."""
        name, _, rest = format_spec.partition(":")
        if name == "plural":
            return plural(self.lang, value, rest)
        if name == "phase":
            return self.lookup(f"phase.{value}") or str(value)
        if name == "term":
            return self.lookup(f"{rest}.{value}") or str(value)
        if name == "message":
            return self._part(value)
        writer = WRITERS.get(name)
        if writer is not None:
            return writer(self.lang, value)
        if not format_spec:
            return bare(value)
        try:
            return super().format_field(value, format_spec)
        except (ValueError, TypeError):
            return str(value)


def placeholders(template: str) -> dict[str, str]:
    """``template``'s placeholders: name -> format (``{used:resources}`` -> ``{"used": "resources"}``).

    A ``plural`` placeholder counts as no format: English writes ``{jobs:plural:job|jobs}`` where Chinese writes
    ``{jobs} 个作业``, and both mean the same number. Catalogue tests compare these maps across languages.
    """
    found: dict[str, str] = {}
    for _, name, spec, _ in string.Formatter().parse(template):
        if name is not None:
            spec = spec or ""
            found[name] = "" if spec.partition(":")[0] == "plural" else spec
    return found
