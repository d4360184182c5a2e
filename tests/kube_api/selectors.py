"""Label and field selectors as the API server parses them (``?labelSelector=``, ``?fieldSelector=``).

Labels: equality (``a=b``, ``a==b``, ``a!=b``) and set-based (``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``)
requirements joined by commas. Fields: equality on dotted paths (``metadata.name=x``, ``status.phase!=Running``,
``spec.nodeName=n``, ``involvedObject.uid=u``), as the API server's field selectors for the kinds Crater reads.
"""

from __future__ import annotations

import re
from typing import Callable

Matcher = Callable[[dict], bool]

_SET = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")
_EQ = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|=|!=)\s*([A-Za-z0-9_.-]*)\s*$")


class SelectorError(ValueError):
    """A selector the API server would refuse (``400 BadRequest``)."""


def _split(selector: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p for p in parts if p.strip()]


def label_matcher(selector: str) -> Matcher:
    """A predicate on an object's ``metadata.labels``; raises :class:`SelectorError` for bad syntax."""
    reqs = []
    for part in _split(selector or ""):
        if m := _EQ.match(part):
            key, op, value = m.groups()
            reqs.append((key, "!=" if op == "!=" else "=", {value}))
        elif m := _SET.match(part):
            neg, key, op, values = m.groups()
            if op:
                reqs.append((key, op, {v.strip() for v in values.split(",") if v.strip()}))
            else:
                reqs.append((key, "!exists" if neg else "exists", set()))
        else:
            raise SelectorError(f"unable to parse requirement: {part!r}")

    def match(obj: dict) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        for key, op, values in reqs:
            have = key in labels
            if op in ("=", "in") and (not have or labels[key] not in values):
                return False
            if op in ("!=", "notin") and have and labels[key] in values:
                return False
            if (op == "exists") != have and op in ("exists", "!exists"):
                return False
        return True
    return match


def field_value(obj: dict, path: str) -> str:
    """The string value of a dotted ``path`` in ``obj`` (``""`` when absent)."""
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    return "" if cur is None else str(cur)


def field_matcher(selector: str) -> Matcher:
    """A predicate on dotted field paths; raises :class:`SelectorError` for bad syntax."""
    reqs = []
    for part in _split(selector or ""):
        if not (m := re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*?)\s*$", part)):
            raise SelectorError(f"invalid field selector: {part!r}")
        reqs.append(m.groups())

    def match(obj: dict) -> bool:
        for path, op, value in reqs:
            if (field_value(obj, path) == value) == (op == "!="):
                return False
        return True
    return match
