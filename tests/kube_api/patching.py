"""The patch types the API server accepts: JSON merge patch (RFC 7386), JSON patch (RFC 6902), and strategic
merge patch (here: a merge patch in which lists of objects with a ``name`` are merged by name, as the built-in
kinds' ``containers``, ``env``, ``ports`` and ``volumes`` are; ``$patch`` directives are not supported)."""

from __future__ import annotations

import copy

MERGE = "application/merge-patch+json"
JSON = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


class PatchError(ValueError):
    """A patch that cannot be applied (the API server answers ``422`` or ``400``)."""


def merge_patch(target, patch, *, by_name: bool = False):
    """``target`` with the merge ``patch`` applied (``None`` deletes a key); new values, inputs unchanged."""
    if not isinstance(patch, dict):
        if by_name and isinstance(patch, list) and isinstance(target, list) and _named(patch) and _named(target):
            merged = {item["name"]: item for item in target}
            for item in patch:
                merged[item["name"]] = merge_patch(merged.get(item["name"], {}), item, by_name=True)
            return list(merged.values())
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value, by_name=by_name)
    return out


def _named(items: list) -> bool:
    return bool(items) and all(isinstance(i, dict) and "name" in i for i in items)


def _pointer(path: str) -> list[str]:
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(target: dict, ops: list[dict]) -> dict:
    """``target`` with the RFC 6902 operations ``add``, ``replace``, ``remove``, ``test`` applied."""
    doc = copy.deepcopy(target)
    for op in ops:
        parts = _pointer(op.get("path", ""))
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        last, kind = parts[-1], op.get("op")
        try:
            if kind == "test":
                here = parent[int(last)] if isinstance(parent, list) else parent.get(last)
                if here != op.get("value"):
                    raise PatchError(f"test failed at {op['path']}")
            elif kind == "remove":
                del parent[int(last) if isinstance(parent, list) else last]
            elif kind in ("add", "replace"):
                if isinstance(parent, list):
                    index = len(parent) if last == "-" else int(last)
                    if kind == "add":
                        parent.insert(index, copy.deepcopy(op["value"]))
                    else:
                        parent[index] = copy.deepcopy(op["value"])
                else:
                    if kind == "replace" and last not in parent:
                        raise PatchError(f"replace operation does not apply: doc is missing path: {op['path']}")
                    parent[last] = copy.deepcopy(op["value"])
            else:
                raise PatchError(f"unsupported operation {kind!r}")
        except (KeyError, IndexError, ValueError) as exc:
            if isinstance(exc, PatchError):
                raise
            raise PatchError(f"{kind} operation does not apply: doc is missing path: {op.get('path')}") from None
    return doc


def apply_patch(target: dict, patch, content_type: str) -> dict:
    """``target`` patched as ``content_type`` says; raises :class:`PatchError`."""
    media = content_type.split(";")[0].strip()
    if media == JSON:
        if not isinstance(patch, list):
            raise PatchError("a JSON patch must be a list of operations")
        return json_patch(target, patch)
    if not isinstance(patch, dict):
        raise PatchError("a merge patch must be an object")
    return merge_patch(target, patch, by_name=media == STRATEGIC)
