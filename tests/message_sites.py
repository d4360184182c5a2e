"""A static scan (``ast``) of every place in ``crater_app`` that produces a message code, and what is wrong with each.

A site is a call (or a rule's returned tuple) that names a catalogue key and passes its arguments. The forms:

- constructions of :class:`crater_app.domain.errors.CraterError` and its subclasses (``raise InvalidInput(code,
  field, **args)``): ``error.<code>``;
- ``event_row(job_id, phase, reason, code, args)`` (``services.job_events``): ``event.<code>`` (a ``JobEvent``
  built directly is reported; ``event_row`` without a code keeps a backend's own text verbatim);
- ``oplog.record(..., code=, args=)`` and ``oplog.row(..., code=, args=)``: ``oplog.<code>`` (``details`` as free
  text, or the keywords spread from a mapping, is reported);
- ``notifications.row(user_id, kind, args)``: ``notify.<kind>``;
- ``part(key, **args)`` (a message nested in another one's arguments, ``crater_app.i18n.format.part``): ``key``;
- the backends' status messages, ``say(code, **args)`` (``cluster.local.outcomes``, ``cluster.kube.status``) and
  ``AccountError(code, **args)`` (``cluster.local.accounts``): ``event.<code>``;
- a console form's field error, ``FormError(key, field, **args)`` (``state.forms``): ``key``;
- the admission rules' values: ``Refusal(field, code, args)`` (``error.<code>``) and ``Hold(code, args)``
  (``hold.<code>``; its arguments are built from the plan's base and are checked by rendering real holds in both
  languages, ``tests/unit/test_event_translations.py``, so only the code is checked here);
- the ``return`` tuples of the pure rules in :data:`RULES`, which hand ``(code, args)`` to a caller that forwards
  them.

A code is a literal of dotted lower-case words, never a sentence and never computed; three forms still count as
literal, because every value they can take is written in the source: a module-level constant
(``APPROVAL = "approval"``, also where it is imported), a module-level mapping whose values are literals
(``_TYPE_ERRORS[kind]``: each value is a site) and a conditional expression of literals (``"a" if x else "b"``:
each branch is a site). A call that passes on a code made elsewhere is listed in :data:`FORWARDING` with where its
codes are checked. Keyword arguments are literal names (no ``**mapping``), and the English template's placeholders
are exactly those names - except for a job's reason (``hold.<code>``, a backend's placement reason), whose
arguments are also data (``reason_args`` in the API, ``expected_at`` to write the estimate when it is read): there
the placeholders must be among the names. An event's or a hold's code fits ``jobs.reason_code``
(``services.reconcile.MAX_CODE_CHARS``): a backend status's code is both the job's reason and its event's, and the
reconciler keeps only a code that fits.
"""

from __future__ import annotations

import ast
import re
import string
from dataclasses import dataclass, field
from pathlib import Path

from crater_app import i18n
from crater_app.services.reconcile import MAX_CODE_CHARS

PKG = Path(i18n.__file__).resolve().parent.parent
ROOT = PKG.parent
CODE = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+")
#: a hold's code is one word of its own namespace (``hold.<code>``, ``job_reasons.HOLD_CODES``)
HOLD_CODE = re.compile(r"[a-z][a-z0-9_]*")
#: how a site's arguments are compared with its template's placeholders
EXACT, COVERS, CODE_ONLY = "exact", "covers", "code only"

#: pure rules whose ``return`` tuples are messages their callers forward: (file, function) -> (catalogue prefix,
#: index of the code in the tuple, index of the arguments, comparison)
RULES = {
    ("crater_app/domain/placement.py", "waiting_reason"): ("event.", 0, 1, COVERS),
    ("crater_app/domain/placement.py", "queued_reason"): ("event.", 0, 1, COVERS),
    ("crater_app/services/job_reasons.py", "after_preemption"): ("hold.", 0, 1, COVERS),
}

#: call sites that pass on a code made elsewhere: (file, enclosing function, the code as written) -> where the
#: codes it can carry are checked
FORWARDING = {
    ("crater_app/services/admission.py", "admit_submissions", "refusal.code"):
        "the Refusal(...) constructions of domain.admission.never_admissible",
    ("crater_app/services/jobs.py", "_events_of", "f\"hold.{v['reason_code']}\""):
        "the Hold(...) constructions (a held job's reason as its Held event)",
    ("crater_app/services/reconcile.py", "_apply_one", "code"):
        "the backends' status codes: say(...) of the local backend, domain.placement's reasons (RULES)",
    ("crater_app/services/reconcile_bulk.py", "phase_change", "code"):
        "the backends' status codes (the same as services.reconcile._apply_one's)",
    ("crater_app/services/reconcile.py", "_apply", "new_code"):
        "the backends' status codes of a gang starting again (replicas.restarting, replicas.restarted)",
    ("crater_app/services/reconcile.py", "_preempted", "f'hold.{code}'"):
        "the returns of services.job_reasons.after_preemption (RULES)",
    ("crater_app/cluster/local/supervisor.py", "start", "exc.code"):
        "the AccountError(...) and StartFailed(...) constructions",
    ("crater_app/cluster/local/supervisor.py", "_restart", "exc.code"):
        "the AccountError(...) and StartFailed(...) constructions",
    ("crater_app/cluster/local/outcomes.py", "stopping", "f'event.{code}'"):
        "the codes the services cancel with (ClusterBackend.cancel(code=...): job.cancelled_by in services.jobs)",
    ("crater_app/cluster/kube/status.py", "_stopping", "f'event.{stop.code}'"):
        "the codes the services cancel with (ClusterBackend.cancel(code=...): job.cancelled_by in services.jobs)",
}


@dataclass
class Site:
    """One place that produces a message: its catalogue key (``None`` when the code is not a literal), the
    argument names it passes (``None`` when they are not literal names), where it is and how its arguments are
    compared with the template (:data:`EXACT`, :data:`COVERS` or :data:`CODE_ONLY`)."""

    where: str
    key: str | None
    code: object
    names: set[str] | None = field(default_factory=set)
    check: str = EXACT


@dataclass
class Module:
    """One source file: its tree, the function each node is in and its module-level string constants and
    mappings of literals."""

    rel: str
    tree: ast.Module
    inside: dict[ast.AST, str]
    constants: dict[str, str]
    mappings: dict[str, list[str]]


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


def _module(rel: str, tree: ast.Module) -> Module:
    inside: dict[ast.AST, str] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                inside.setdefault(node, fn.name)
    constants: dict[str, str] = {}
    mappings: dict[str, list[str]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            pairs = [(stmt.target, stmt.value)]
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                pairs = list(zip(target.elts, value.elts))
            else:
                pairs = [(target, value)]
        else:
            continue
        for target, value in pairs:
            if not isinstance(target, ast.Name):
                continue
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                constants[target.id] = value.value
            elif isinstance(value, ast.Dict) and value.values and all(
                    isinstance(v, ast.Constant) and isinstance(v.value, str) for v in value.values):
                mappings[target.id] = [v.value for v in value.values]  # type: ignore[union-attr]
    return Module(rel, tree, inside, constants, mappings)


class Scan:
    """Every site of every module under ``crater_app`` (``sites``: file -> its sites)."""

    def __init__(self) -> None:
        trees = {}
        for path in sorted(PKG.rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            trees[rel] = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        self.errors = _error_classes(trees)
        self.modules = {rel: _module(rel, tree) for rel, tree in trees.items()}
        everywhere: dict[str, set[str]] = {}
        for module in self.modules.values():
            for name, value in module.constants.items():
                everywhere.setdefault(name, set()).add(value)
        #: module-level constants defined once across the package (an imported name resolves to its value)
        self.shared = {name: next(iter(values)) for name, values in everywhere.items() if len(values) == 1}
        #: every string constant of the sources, and the constant starts of f-strings (``f"phase.{p}"``)
        self.strings: set[str] = set()
        self.prefixes: set[str] = set()
        for module in self.modules.values():
            for node in ast.walk(module.tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    self.strings.add(node.value)
                elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
                    self.prefixes.add(str(node.values[0].value))
        self.forwarded: set[tuple[str, str, str]] = set()
        self.sites = {rel: sites for rel, module in self.modules.items() if (sites := self._sites(module))}

    def _codes(self, module: Module, code: ast.expr) -> list[str] | None:
        """Every value ``code`` can take when it is literal in one of the accepted forms, else ``None``."""
        if isinstance(code, ast.Constant) and isinstance(code.value, str):
            return [code.value]
        if isinstance(code, ast.IfExp):
            body, orelse = self._codes(module, code.body), self._codes(module, code.orelse)
            return body + orelse if body is not None and orelse is not None else None
        if isinstance(code, ast.Name):
            value = module.constants.get(code.id, self.shared.get(code.id))
            return [value] if value is not None else None
        if isinstance(code, ast.Subscript) and isinstance(code.value, ast.Name) and code.value.id in module.mappings:
            return list(module.mappings[code.value.id])
        return None

    def _site(self, module: Module, node: ast.AST, prefix: str, code: ast.expr | None, names: set[str] | None,
              check: str = EXACT) -> list[Site]:
        where = f"{module.rel}:{node.lineno}"  # type: ignore[attr-defined]
        if code is None or (isinstance(code, ast.Constant) and code.value in ("", None)):
            return []  # a row without a code: free text
        written = ast.unparse(code)
        key = (module.rel, module.inside.get(node, ""), written)
        if key in FORWARDING:
            self.forwarded.add(key)
            return []
        codes = self._codes(module, code)
        if codes is None:
            return [Site(where, None, written, names, check)]
        return [Site(where, prefix + value, value, names, check) for value in codes]

    def _call(self, module: Module, node: ast.Call) -> list[Site]:
        owner, name = _func_name(node)
        if name in self.errors:
            return self._site(module, node, "error.", _argument(node, 0, "code"), _keywords(node, ("field", "code")))
        if name == "event_row":
            return self._site(module, node, "event.", _argument(node, 3, "code"), _dict_names(_argument(node, 4, "args")))
        if owner == "oplog" and name in ("record", "row"):
            offset = 6 if name == "record" else 5
            if any(kw.arg is None for kw in node.keywords):
                return [Site(f"{module.rel}:{node.lineno}", None, "keywords spread from a mapping: " + ast.unparse(node))]
            sites = self._site(module, node, "oplog.", _argument(node, offset, "code"),
                               _dict_names(_argument(node, offset + 1, "args")))
            details = _argument(node, offset - 1, "details")
            if not sites and _argument(node, offset, "code") is None and details is not None \
                    and not (isinstance(details, ast.Constant) and not details.value):
                return [Site(f"{module.rel}:{node.lineno}", None, "details as free text: " + ast.unparse(details))]
            return sites
        if name == "JobEvent":
            return [Site(f"{module.rel}:{node.lineno}", None, "a job event built without services.job_events.event_row")]
        if owner == "notifications" and name == "row":
            return self._site(module, node, "notify.", _argument(node, 1, "kind"), _dict_names(_argument(node, 2, "args")))
        if name == "part" and owner in (None, "i18n", "fmt", "format"):
            return self._site(module, node, "", _argument(node, 0, "key"), _keywords(node, ("key",)))
        if name in ("say", "AccountError") and module.rel.startswith("crater_app/cluster/"):
            return self._site(module, node, "event.", _argument(node, 0, "code"), _keywords(node, ("code",)))
        if name == "FormError":
            return self._site(module, node, "", _argument(node, 0, "key"), _keywords(node, ("key", "field")))
        if name == "Refusal":
            return self._site(module, node, "error.", _argument(node, 1, "code"), _dict_names(_argument(node, 2, "args")))
        if name == "Hold":
            return self._site(module, node, "hold.", _argument(node, 0, "code"), None, CODE_ONLY)
        return []

    def _returns(self, module: Module, node: ast.Return, rule: tuple[str, int, int, str]) -> list[Site]:
        prefix, code_at, args_at, check = rule
        value = node.value
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            return []
        if not isinstance(value, ast.Tuple) or len(value.elts) <= max(code_at, args_at):
            return [Site(f"{module.rel}:{node.lineno}", None, "a rule's return is not a literal tuple: "
                         + ast.unparse(value))]
        return self._site(module, node, prefix, value.elts[code_at], _dict_names(value.elts[args_at]), check)

    def _sites(self, module: Module) -> list[Site]:
        out: list[Site] = []
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Call):
                out += self._call(module, node)
            elif isinstance(node, ast.Return):
                rule = RULES.get((module.rel, module.inside.get(node, "")))
                if rule is not None:
                    out += self._returns(module, node, rule)
        return out


def placeholders(template: str) -> set[str]:
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
        pattern = HOLD_CODE if site.key == f"hold.{site.code}" else CODE
        if not pattern.fullmatch(str(site.code)):
            out.append(f"{site.where}: not a code (dotted lower-case words): {site.code!r}")
            continue
        if site.key.startswith(("event.", "hold.")) and len(str(site.code)) > MAX_CODE_CHARS:
            out.append(f"{site.where}: {site.code} is longer than a job's reason code may be ({MAX_CODE_CHARS})")
            continue
        missing = [lang for lang, table in (("en", en), ("zh-CN", zh)) if site.key not in table]
        if missing:
            out.append(f"{site.where}: {site.key} is missing in {', '.join(missing)}")
            continue
        if site.check == CODE_ONLY:
            continue
        if site.names is None:
            out.append(f"{site.where}: {site.key}: the arguments are not literal names")
            continue
        wanted = placeholders(en[site.key])
        if (wanted != site.names) if site.check == EXACT else not wanted <= site.names:
            out.append(f"{site.where}: {site.key} uses {sorted(wanted)} but the call passes {sorted(site.names)}")
    return out


#: ``{x:term:<prefix>}`` in a template: the word ``x`` is looked up as ``<prefix>.<word>``
_TERM = re.compile(r"\{[^{}:]+:term:([a-z0-9_.]+)\}")


def unused_keys(scan: Scan, table: dict[str, str]) -> list[str]:
    """The keys of ``table`` (a language's catalogue) that nothing uses, sorted.

    A key is used when a message site names it, when the sources write it whole (``t("jobs.title")``, a constant),
    or when it is a family member built at run time: ``<prefix><word>`` where ``<prefix>`` ends with ``.`` and is
    written in the sources (``t_dynamic("phase.", phase)``, ``REASON_PREFIX = "reason."``, ``f"event.{code}"``) or
    in a template's ``{x:term:<prefix>}``, and ``<word>`` is a string the sources write (a phase, a role, a reason
    word, a code stored in a row and rendered later).
    """
    used = {site.key for sites in scan.sites.values() for site in sites if site.key}
    families = {p for p in scan.prefixes | scan.strings if p.endswith(".") and len(p) > 1}
    families |= {f"{prefix}." for template in table.values() for prefix in _TERM.findall(template)}
    out = []
    for key in table:
        if key in used or key in scan.strings:
            continue
        if any(key.startswith(prefix) and key[len(prefix):] in scan.strings for prefix in families):
            continue
        out.append(key)
    return sorted(out)
