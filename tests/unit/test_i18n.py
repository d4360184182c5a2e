"""The console's translations: both languages have the same keys, no empty text, and every key the
console uses exists (``t("key")`` in ``crater_app/ui``, ``msg("key")``/``FormError("key", ...)`` in
``crater_app/state``, plus the key families built at run time: phases, roles, statuses, languages, approval kinds
and states), and every key is used by something (``tests/message_sites.py``). The codes the services produce are
checked in ``tests/unit/test_message_codes.py``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crater_app import i18n
from crater_app.i18n.format import placeholders
from crater_app.domain.jobs import JobPhase
from crater_app.domain.approvals import KINDS, STATUSES
from crater_app.domain.policy import PLATFORM_ROLES, PROJECT_ROLES, USER_STATUSES
from tests.message_sites import Scan, unused_keys

PKG = Path(i18n.__file__).resolve().parent.parent
LANGS = ("en", "zh-CN")
# t("key"), self.msg("key", ...), FormError("key", ...), t(f"prefix.{x}")
USE = re.compile(r"""\b(?:t|t_format|msg|FormError|translate)\(\s*(f?)(["'])([^"']+)\2""")


def _load(lang: str) -> dict[str, str]:
    """The language's whole table: ``i18n/<lang>.json`` merged with every area's ``i18n/<area>/<lang>.json``."""
    return dict(i18n.messages(lang))


def _used_keys() -> tuple[set[str], set[str]]:
    """Literal keys and f-string prefixes used in ui/ and state/ sources."""
    literal, prefixes = set(), set()
    for folder in ("ui", "state"):
        for path in (PKG / folder).rglob("*.py"):
            for is_f, _, key in USE.findall(path.read_text(encoding="utf-8")):
                if is_f:
                    prefixes.add(key.split("{", 1)[0])
                else:
                    literal.add(key)
    return literal, prefixes


def test_both_languages_have_the_same_keys():
    en, zh = _load("en"), _load("zh-CN")
    assert set(en) == set(zh), {"only in en": sorted(set(en) - set(zh)), "only in zh-CN": sorted(set(zh) - set(en))}


@pytest.mark.parametrize("lang", LANGS)
def test_no_empty_values_and_same_placeholders(lang):
    table, en = _load(lang), _load("en")
    assert all(isinstance(v, str) and v.strip() for v in table.values()), [k for k, v in table.items() if not v.strip()]
    # the same names, each written in the same format (``{limit:duration}`` in both; plurals are English-only)
    assert {k: placeholders(v) for k, v in table.items()} == {k: placeholders(en[k]) for k in table}


def test_every_key_used_by_the_console_exists():
    literal, prefixes = _used_keys()
    assert len(literal) > 100, "the scan found suspiciously few keys"
    en = _load("en")
    assert sorted(k for k in literal if k not in en) == []
    # Families built at run time (t(f"phase.{p}"), t_dynamic("phase.", var), ...): every member exists.
    families = {
        "phase.": [p.value for p in JobPhase],
        "role.": list(PLATFORM_ROLES),
        "status.": list(USER_STATUSES),
        "lang.": list(i18n.LANGUAGES),
        "project.role.": list(PROJECT_ROLES),
        "approvals.kind.": list(KINDS),
        "approval.state.": list(STATUSES),
    }
    assert prefixes <= set(families), prefixes - set(families)
    missing = [prefix + member for prefix, members in families.items() for member in members if prefix + member not in en]
    assert missing == []


def test_every_key_is_used():
    """A key nothing writes, renders or builds at run time is a sentence nobody can see (often a stale one)."""
    scan = Scan()
    assert unused_keys(scan, _load("en")) == []
    made_up = {"nosuch.key": "x", "phase.Running": "x", "reason.NoSuchReason": "x", "approval.state.closed": "x",
               "error.approval.already_decided": "{status:term:approval.state}", "jobs.title": "x"}
    assert unused_keys(scan, made_up) == ["nosuch.key", "reason.NoSuchReason"]


def test_loader_falls_back_to_english():
    assert i18n.messages("zh-CN")["nav.jobs"] == "作业"
    assert i18n.messages("klingon") is i18n.messages("en")
    assert i18n.normalize(None) == "en"
    assert i18n.translate("zh-CN", "admin.created", username="alice") == "已创建用户 alice。"
    assert i18n.translate("en", "no.such.key") == "no.such.key"
