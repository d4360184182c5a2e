"""Every message code Crater can produce has its sentence in both catalogues, with the placeholders its callers pass.

The sources are read statically (``tests/message_sites.py`` lists the forms it reads), so that a code nobody has
triggered in a test is checked too. Both catalogues having the same placeholders per key is checked in
``tests/unit/test_i18n.py``. One test per source file, so that a failure names the file that still passes sentences.
"""

from __future__ import annotations

import ast

import pytest

from crater_app.services.reconcile import MAX_CODE_CHARS

from tests.message_sites import CODE_ONLY, COVERS, FORWARDING, RULES, Scan, Site, problems

SCAN = Scan()
SITES = SCAN.sites


def _scan_of(source: str, rel: str = "crater_app/services/example.py") -> list[str]:
    """The problems of one made-up module, scanned as if it were ``rel`` in the package."""
    from tests.message_sites import _module

    return problems(SCAN._sites(_module(rel, ast.parse(source))))


def test_the_scan_finds_the_sites():
    """The scan itself works: it sees errors, events, operation-log rows, notifications, parts, the local
    backend's statuses, the admission rules' values and the rules' returned tuples."""
    keys = {s.key for sites in SITES.values() for s in sites if s.key}
    assert sum(len(s) for s in SITES.values()) > 200
    assert {"error.project.not_found", "error.page.out_of_range", "oplog.project.member_set",
            "notify.approval.approved", "event.approval.runtime_extended", "approval.target.job",
            "event.local.oom_killed", "event.local.account_tool", "error.admission.over_share", "hold.fairshare",
            "error.job.replica_never_fits_cpu", "event.placement.queued_unbounded", "hold.preempted_exhausted",
            "error.job.field_boolean"} <= keys
    checks = {s.check for sites in SITES.values() for s in sites}
    assert {CODE_ONLY, COVERS} <= checks


def test_every_forwarding_and_rule_entry_is_still_in_the_code():
    """A FORWARDING or RULES entry whose call or function is gone (renamed, moved) is dead weight that could
    hide a new site with the same name: each must still match."""
    assert SCAN.forwarded == set(FORWARDING)
    functions = {(rel, node.name) for rel, module in SCAN.modules.items() for node in ast.walk(module.tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert set(RULES) <= functions


def test_problems_are_named():
    """A sentence as code, a code missing from the catalogues and arguments that do not fit are each reported."""
    assert problems([Site("x.py:1", None, "f'{name} is bad'")]) == ["x.py:1: the code is not a literal: f'{name} is bad'"]
    assert problems([Site("x.py:2", "error.name is bad", "name is bad", set())])[0].startswith("x.py:2: not a code")
    assert "missing in en, zh-CN" in problems([Site("x.py:3", "error.no.such", "no.such", set())])[0]
    assert problems([Site("x.py:4", "error.page.out_of_range", "page.out_of_range", {"max"})]) == [
        "x.py:4: error.page.out_of_range uses ['max', 'min'] but the call passes ['max']"]
    assert problems([Site("x.py:5", "error.page.out_of_range", "page.out_of_range", {"min", "max"})]) == []
    assert problems([Site("x.py:6", "hold.queue", "queue", None, CODE_ONLY)]) == []
    long = "local." + "started_somewhere_with_devices_" * 2
    assert problems([Site("x.py:8", f"event.{long}", long, set())])[0] == (
        f"x.py:8: {long} is longer than a job's reason code may be ({MAX_CODE_CHARS})")
    assert problems([Site("x.py:7", "hold.requeued", "requeued", {"previous"}, COVERS)])[0].startswith(
        "x.py:7: hold.requeued uses")


def test_the_literal_forms_and_what_escapes_them():
    """Constants, mappings of literals and conditional expressions are read through; a computed code, a spread of
    arguments and a rule that returns something else than a literal tuple are reported."""
    assert _scan_of('CODE = "page.out_of_range"\nraise InvalidInput(CODE, None, min=1, max=2)\n') == []
    assert _scan_of('M = {"a": "page.out_of_range", "b": "no.such"}\nraise InvalidInput(M[k], None, min=1, max=2)\n'
                    ) == ["crater_app/services/example.py:2: error.no.such is missing in en, zh-CN"]
    assert _scan_of('raise InvalidInput("page.out_of_range" if x else "no.such", None, min=1, max=2)\n') == [
        "crater_app/services/example.py:1: error.no.such is missing in en, zh-CN"]
    assert _scan_of('raise InvalidInput(f"page.{x}", None)\n') == [
        "crater_app/services/example.py:1: the code is not a literal: f'page.{x}'"]
    assert _scan_of('oplog.row(a, "x", "t", **details)\n')[0].startswith(
        "crater_app/services/example.py:1: the code is not a literal: keywords spread from a mapping")
    assert _scan_of('event_row(1, "Held", "Held", "job.cancelled_by", who)\n') == [
        "crater_app/services/example.py:1: event.job.cancelled_by: the arguments are not literal names"]
    rule = "def waiting_reason(req):\n    return problem\n"
    assert _scan_of(rule, "crater_app/domain/placement.py")[0].startswith(
        "crater_app/domain/placement.py:2: the code is not a literal: a rule's return is not a literal tuple")


@pytest.mark.parametrize("path", sorted(SITES))
def test_every_message_code_has_both_catalogues_and_its_arguments(path):
    assert problems(SITES[path]) == []
