"""Field paths: where in a request body an error is, written one way by every layer (README, "API conventions").

``tasks[1].resources.nvidia.com/gpu``: object keys joined by ``.``, list items as ``[index]``. Keys are written as
they are (a resource name's own ``.`` and ``/`` included) unless they could not be read back that way: a key that is
empty, starts or ends with a space, or holds ``[``, ``]``, ``"``, ``\\`` or a character that is not printable (a
control or format character, a separator other than the space, a lone surrogate) is written in brackets as a JSON
string - ``env["A\\u0000"]``, ``resources[""]`` - as JSONPath writes such names (RFC 9535 §2.5.1.1). A key longer
than :data:`MAX_KEY_CHARS` is cut there and ends with ``…``: paths are echoed in error bodies and messages.
"""

from __future__ import annotations

from typing import Iterable, Sequence

#: the longest key (characters) a path shows before cutting it
MAX_KEY_CHARS = 64
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_BRACKETED = frozenset('[]"\\')


def _escaped(ch: str) -> str:
    """``ch`` inside a JSON string: a short escape, itself when printable, else ``\\uXXXX`` (a UTF-16 pair above
    U+FFFF, as JSON writes it)."""
    if ch in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[ch]
    if ch.isprintable():
        return ch
    code = ord(ch)
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def shown(name: object) -> str:
    """A key as a message quotes it: cut to :data:`MAX_KEY_CHARS` characters (then ``…``), every character that is
    not printable written as its JSON escape (``A\\u0000``), never a Python repr."""
    text = str(name)
    cut = len(text) > MAX_KEY_CHARS
    return "".join(ch if ch.isprintable() and ch != "\\" else _escaped(ch) for ch in text[:MAX_KEY_CHARS]) + (
        "…" if cut else "")


def key_text(name: object) -> str:
    """One key as a path writes it after its ``.`` (bare), or as ``["…"]`` (see the module); cut to
    :data:`MAX_KEY_CHARS` characters. A key that is not a string (a YAML ``1:``) is written as its JSON value."""
    if isinstance(name, bool):
        text = "true" if name else "false"
    elif name is None:
        text = "null"
    else:
        text = str(name)
    cut = len(text) > MAX_KEY_CHARS
    text = text[:MAX_KEY_CHARS] + ("…" if cut else "")
    bare = text and text == text.strip(" ") and not any(ch in _BRACKETED or not ch.isprintable() for ch in text)
    if bare:
        return text
    return '["' + "".join(_escaped(ch) for ch in text) + '"]'


def key(prefix: str | None, name: object) -> str:
    """The path of key ``name`` of the object at ``prefix`` (``None`` or ``""``: the body itself):
    ``key("resources", "nvidia.com/gpu")`` -> ``resources.nvidia.com/gpu``, ``key("env", "")`` -> ``env[""]``."""
    text = key_text(name)
    if text.startswith("["):
        return (prefix or "") + text
    return f"{prefix}.{text}" if prefix else text


def item(prefix: str | None, index: int) -> str:
    """The path of item ``index`` of the list at ``prefix``: ``item("command", 0)`` -> ``command[0]``."""
    return f"{prefix or ''}[{index}]"


def join(parts: Iterable[str | int]) -> str | None:
    """A path from its parts in order: strings are keys, integers list items (``("tasks", 1, "name")`` ->
    ``tasks[1].name``); ``None`` for no parts (the body itself)."""
    path = ""
    for part in parts:
        path = item(path, part) if isinstance(part, int) and not isinstance(part, bool) else key(path, part)
    return path or None


def from_loc(loc: Sequence[str | int], data: object) -> str | None:
    """The path of a pydantic error location ``loc`` (``("env", 1, "[key]")``) in the validated ``data``.

    pydantic gives a list item and an integer key (YAML's ``{1: a}``) the same integer, so ``data`` is walked
    along ``loc`` to tell them apart; its ``[key]`` marker (the error is the key itself, not its value) adds nothing.
    """
    path = ""
    node = data
    for part in loc:
        if part == "[key]":
            continue
        if isinstance(part, int) and not isinstance(part, bool) and not isinstance(node, dict):
            path = item(path, part)  # a list item (also where ``data`` does not reach: pydantic's usual meaning)
            node = node[part] if isinstance(node, list) and -len(node) <= part < len(node) else None
            continue
        name: object = part
        if isinstance(node, dict) and part not in node and str(part) in node:
            name = str(part)
        path = key(path, name)
        node = node.get(name) if isinstance(node, dict) else None
    return path or None
