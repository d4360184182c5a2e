"""Every message code Crater can produce has its sentence in both catalogues, with the placeholders its callers pass.

The sources are read statically (``ast``), so that a code nobody has triggered in a test is checked too:

- constructions of :class:`crater_app.domain.errors.CraterError` and its subclasses (``raise InvalidInput(code,
  field, **args)``): ``error.<code>``;
- ``event_row(job_id, phase, reason, code, args)`` (``services.job_events``): ``event.<code>`` (a ``JobEvent``
  built directly is reported; ``event_row`` without a code keeps a backend's own text verbatim);
- ``oplog.record(..., code=, args=)`` and ``oplog.row(..., code=, args=)``: ``oplog.<code>`` (``details`` as free
  text is reported);
- ``notifications.row(user_id, kind, args)``: ``notify.<kind>``;
- ``part(key, **args)`` (a message nested in another one's arguments, ``crater_app.i18n.format.part``): ``key``.

Each code is a literal of dotted lower-case words (never a sentence, never computed), its keyword arguments are
literal names (no ``**mapping``), and the English template's placeholders are exactly those names. Both catalogues
having the same placeholders per key is checked in ``tests/unit/test_i18n.py``. One test per source file, so that
a failure names the file that still passes sentences.
"""

from __future__ import annotations

import ast
import re
import string
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from crater_app import i18n

PKG = Path(i18n.__file__).resolve().parent.parent
ROOT = PKG.parent
CODE = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+")
#: call sites that forward a caller's code unchanged (the caller's literal is what the scan checks):
#: (file, enclosing function)
FORWARDING = {
    ("crater_app/services/oplog.py", "record"),
    ("crater_app/services/oplog.py", "details_text"),
    ("crater_app/services/job_events.py", "event_row"),
    ("crater_app/cluster/local/outcomes.py", "stopping"),  # nests the code a cancel came with (ClusterBackend.cancel)
}


@dataclass
class Site:
    """One place that produces a message: its catalogue key (``None`` when the code is not a literal), the
    argument names it passes (``None`` when they are not literal names) and where it is."""

    where: str
    key: str | None
    code: object
    names: set[str] | None = field(default_factory=set)


def _func_name(node: ast.Call) -> tuple[str | None, str]:
    """(object name or None, attribute or function name) of a call: ``oplog.record`` -> (``oplog``, ``record``)."""
    func = node.func
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else None
        return owner, func.attr
    if isinstance(func, ast.Name):
        return None, func.id
    return None, ""


def _error_classes(trees: dict[str, ast.Module]) -> set[str]:
    """``CraterError`` and every class that derives from it (by name, through any module)."""
    found = {"CraterError"}
    changed = True
    while changed:
        changed = False
        for tree in trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in found:
                    bases = {b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                             for b in node.bases}
                    if bases & found:
                        found.add(node.name)
                        changed = True
    return found


def _argument(node: ast.Call, index: int, name: str) -> ast.expr | None:
    for kw in node.keywords:
        if kw.arg == name:
            return kw.value
    return node.args[index] if len(node.args) > index else None


def _keywords(node: ast.Call, skip: tuple[str, ...]) -> set[str] | None:
    """The literal keyword names of a call (``None`` when it spreads a mapping with ``**``)."""
    if any(kw.arg is None for kw in node.keywords):
        return None
    return {kw.arg for kw in node.keywords if kw.arg not in skip}


def _dict_names(node: ast.expr | None) -> set[str] | None:
    """The keys of a literal ``{"a": ..}`` or ``dict(a=..)`` (``set()`` for none; ``None`` when not literal)."""
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return set()
    if isinstance(node, ast.Dict):
        if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
            return {k.value for k in node.keys}  # type: ignore[union-attr]
        return None
    if isinstance(node, ast.Call) and _func_name(node) == (None, "dict") and not node.args:
        return _keywords(node, ())
    return None


def _site(where: str, prefix: str, code: ast.expr | None, names: set[str] | None) -> Site | None:
    if code is None or (isinstance(code, ast.Constant) and code.value in ("", None)):
        return None  # a row without a code: free text
    if isinstance(code, ast.Constant) and isinstance(code.value, str):
        return Site(where, prefix + code.value, code.value, names)
    return Site(where, None, ast.unparse(code), names)


def _enclosing(tree: ast.Module) -> dict[ast.AST, str]:
    """node -> name of the function it is in."""
    out: dict[ast.AST, str] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                out.setdefault(node, fn.name)
    return out


def _sites(rel: str, tree: ast.Module, errors: set[str]) -> list[Site]:
    out: list[Site] = []
    inside = _enclosing(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if (rel, inside.get(node, "")) in FORWARDING:
            continue
        owner, name = _func_name(node)
        where = f"{rel}:{node.lineno}"
        site = None
        if name in errors:
            site = _site(where, "error.", _argument(node, 0, "code"), _keywords(node, ("field", "code")))
        elif name == "event_row":
            site = _site(where, "event.", _argument(node, 3, "code"), _dict_names(_argument(node, 4, "args")))
        elif owner == "oplog" and name in ("record", "row"):
            offset = 6 if name == "record" else 5
            site = _site(where, "oplog.", _argument(node, offset, "code"), _dict_names(_argument(node, offset + 1, "args")))
            details = _argument(node, offset - 1, "details")
            if site is None and details is not None and not (isinstance(details, ast.Constant) and not details.value):
                site = Site(where, None, "details as free text: " + ast.unparse(details))
        elif name == "JobEvent":
            site = Site(where, None, "a job event built without services.job_events.event_row")
        elif owner == "notifications" and name == "row":
            site = _site(where, "notify.", _argument(node, 1, "kind"), _dict_names(_argument(node, 2, "args")))
        elif name == "part" and (owner in (None, "i18n", "fmt", "format")):
            site = _site(where, "", _argument(node, 0, "key"), _keywords(node, ("key",)))
        if site is not None:
            out.append(site)
    return out


def _scan() -> dict[str, list[Site]]:
    trees = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        trees[rel] = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
    errors = _error_classes(trees)
    return {rel: sites for rel, tree in trees.items() if (sites := _sites(rel, tree, errors))}


SITES = _scan()


def _placeholders(template: str) -> set[str]:
    """The argument names a template uses (``{a:duration}`` -> ``a``; ``{a[b]}`` -> ``a``)."""
    names = set()
    for _, name, _, _ in string.Formatter().parse(template):
        if name:
            names.add(re.split(r"[.\[]", name, maxsplit=1)[0])
    return names


def problems(sites: list[Site]) -> list[str]:
    """What is wrong with each site (an empty list when all is well)."""
    en, zh = i18n.messages("en"), i18n.messages("zh-CN")
    out = []
    for site in sites:
        if site.key is None:
            out.append(f"{site.where}: the code is not a literal: {site.code}")
            continue
        if not CODE.fullmatch(str(site.code)):
            out.append(f"{site.where}: not a code (dotted lower-case words): {site.code!r}")
            continue
        missing = [lang for lang, table in (("en", en), ("zh-CN", zh)) if site.key not in table]
        if missing:
            out.append(f"{site.where}: {site.key} is missing in {', '.join(missing)}")
            continue
        if site.names is None:
            out.append(f"{site.where}: {site.key}: the arguments are not literal names")
            continue
        wanted = _placeholders(en[site.key])
        if wanted != site.names:
            out.append(f"{site.where}: {site.key} uses {sorted(wanted)} but the call passes {sorted(site.names)}")
    return out


def test_the_scan_finds_the_sites():
    """The scan itself works: it sees errors, events, operation-log rows, notifications and parts."""
    keys = {s.key for sites in SITES.values() for s in sites if s.key}
    assert sum(len(s) for s in SITES.values()) > 200
    assert {"error.project.not_found", "error.page.out_of_range", "oplog.project.member_set",
            "notify.approval.approved", "event.approval.runtime_extended", "approval.target.job"} <= keys


def test_problems_are_named():
    """A sentence as code, a code missing from the catalogues and arguments that do not fit are each reported."""
    assert problems([Site("x.py:1", None, "f'{name} is bad'")]) == ["x.py:1: the code is not a literal: f'{name} is bad'"]
    assert problems([Site("x.py:2", "error.name is bad", "name is bad", set())])[0].startswith("x.py:2: not a code")
    assert "missing in en, zh-CN" in problems([Site("x.py:3", "error.no.such", "no.such", set())])[0]
    assert problems([Site("x.py:4", "error.page.out_of_range", "page.out_of_range", {"max"})]) == [
        "x.py:4: error.page.out_of_range uses ['max', 'min'] but the call passes ['max']"]
    assert problems([Site("x.py:5", "error.page.out_of_range", "page.out_of_range", {"min", "max"})]) == []


@pytest.mark.parametrize("path", sorted(SITES))
def test_every_message_code_has_both_catalogues_and_its_arguments(path):
    assert problems(SITES[path]) == []
