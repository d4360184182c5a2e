"""User names (Unicode, NFKC case-folded keys), names derived from OIDC claims, the DNS-1123 slug of a name, and the
DNS-1123 label rule: tables of inputs and what each gives."""

from __future__ import annotations

import re

import pytest

from crater_app.domain.errors import InvalidInput
from crater_app.domain.naming import (
    MAX_USERNAME_CHARS, check_dns1123_label, check_text, check_username, derive_username, is_username, safe_slug,
    username_key, username_skeleton,
)

RFC1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


@pytest.mark.parametrize(("given", "stored"), [
    ("alice", "alice"),
    ("Alice", "Alice"),
    ("\u5f20\u4e09", "\u5f20\u4e09"),  # 张三
    ("\u00c9lodie", "\u00c9lodie"),  # Élodie, composed
    ("E\u0301lodie", "\u00c9lodie"),  # Élodie typed with a combining accent: stored composed (NFC)
    ("_alice", "_alice"),
    ("alice@example.org", "alice@example.org"),
    ("zhang.san", "zhang.san"),
    ("Zhang-San_2", "Zhang-San_2"),
    ("\u0926\u0947\u0935", "\u0926\u0947\u0935"),  # देव: Devanagari with a vowel sign (a combining mark)
    ("2021010101", "2021010101"),  # a student number
    ("a" * MAX_USERNAME_CHARS, "a" * MAX_USERNAME_CHARS),
    ("\ufdfa" * 14, "\ufdfa" * 14),  # a key of 252 characters fits
    ("\ufb03" * 64, "\ufb03" * 64),  # the ligature ffi: a key of 192 characters
])
def test_user_names_people_have(given, stored):
    assert check_username(given) == stored
    assert is_username(stored)


@pytest.mark.parametrize(("given", "code", "args"), [
    (5, "name.not_string", {"field_name": "username"}),
    (None, "name.not_string", {"field_name": "username"}),
    ("", "name.empty", {"field_name": "username"}),
    ("a" * 65, "name.too_long", {"field_name": "username", "length": 65, "max": 64}),
    ("-alice", "name.username_start", {"field_name": "username", "char": "-"}),
    (".alice", "name.username_start", {"field_name": "username", "char": "."}),
    ("@alice", "name.username_start", {"field_name": "username", "char": "@"}),
    ("\u0301alice", "name.username_start", {"field_name": "username", "char": "\u0301"}),
    (" alice", "name.username_start", {"field_name": "username", "char": "U+0020"}),
    ("a b", "name.username_chars", {"field_name": "username", "char": "U+0020", "position": 2}),
    ("bad name!", "name.username_chars", {"field_name": "username", "char": "U+0020", "position": 4}),
    ("a/b", "name.username_chars", {"field_name": "username", "char": "/", "position": 2}),
    ("<script>", "name.username_start", {"field_name": "username", "char": "<"}),
    ("a\x00", "name.username_chars", {"field_name": "username", "char": "U+0000", "position": 2}),
    ("alice\n", "name.username_chars", {"field_name": "username", "char": "U+000A", "position": 6}),
    ("al\u202eice", "name.username_chars", {"field_name": "username", "char": "U+202E", "position": 3}),
    # U+FDFA is one letter that NFKC writes as 18: 15 of them are a 270-character key (the column holds 256)
    ("\ufdfa" * 15, "name.username_key_too_long", {"field_name": "username", "length": 270, "max": 256}),
    ("system", "name.username_reserved", {"field_name": "username", "name": "system"}),
    ("System", "name.username_reserved", {"field_name": "username", "name": "System"}),
])
def test_user_names_refused(given, code, args):
    with pytest.raises(InvalidInput) as info:
        check_username(given)
    assert (info.value.code, info.value.field, info.value.params) == (code, "username", args)
    assert not is_username(given)


def test_refusals_read_in_both_languages():
    with pytest.raises(InvalidInput) as info:
        check_username("a b", "members[2].username")
    assert info.value.message == ("members[2].username may hold letters, digits, '.', '_', '-' and '@' only: "
                                  "'U+0020' (character 2) is not allowed.")
    assert info.value.message_in("zh-CN") == ("members[2].username 只能包含字母、数字、“.”、“_”、“-”和“@”：第 2 个字符"
                                              "“U+0020”不允许。")
    with pytest.raises(InvalidInput) as info:
        check_username("-alice")
    assert info.value.message == "username must start with a letter, a digit or '_'; '-' cannot be its first character."
    with pytest.raises(InvalidInput) as info:
        check_username("\ufdfa" * 15)
    assert "270" in info.value.message and "256" in info.value.message_in("zh-CN")


@pytest.mark.parametrize(("names", "key"), [
    (("alice", "Alice", "ALICE", "\uff21\uff4c\uff49\uff43\uff45"), "alice"),  # full-width Ａｌｉｃｅ too
    (("Stra\u00dfe", "STRASSE", "strasse"), "strasse"),
    (("\u00c9lodie", "\u00e9lodie", "E\u0301lodie"), "\u00e9lodie"),
    (("\u5f20\u4e09",), "\u5f20\u4e09"),
])
def test_names_with_one_key_are_one_account(names, key):
    assert {username_key(n) for n in names} == {key}


@pytest.mark.parametrize(("names", "skeleton"), [
    (("alice", "\u0430lice", "al\u0131ce", "AL\u0130CE", "\u0391LICE", "\u0430l\u0456\u0441\u0435"), "alice"),
    (("paypal", "\u0440\u0430ypal", "\u03c1\u03b1yp\u03b1l"), "paypal"),  # Cyrillic р а, Greek ρ α
    (("\u0441\u043e\u0440", "cop"), "cop"),  # Cyrillic сор reads as cop
    (("\u00c9lodie", "\u00e9lodie", "E\u0301lodie"), "\u00e9lodie"),  # an accent is visible: kept
    (("\u5f20\u4e09",), "\u5f20\u4e09"),
    (("\u0438\u0432\u0430\u043d",), "\u0438\u0432a\u043d"),  # иван: only the а has a Latin look-alike
])
def test_names_people_cannot_tell_apart_share_a_skeleton(names, skeleton):
    assert {username_skeleton(n) for n in names} == {skeleton}


def test_ascii_names_are_their_own_skeleton():
    """Migration 0005 fills the skeleton of the accounts made before (DNS-1123 labels) with the name itself."""
    for name in ("alice", "zhang-san", "a1", "rn-m", "l1"):
        assert username_skeleton(name) == name
    assert username_skeleton("elodie") != username_skeleton("\u00e9lodie")


@pytest.mark.parametrize(("claim", "name"), [
    ("alice@example.org", "alice@example.org"),  # a valid name stays as it is
    ("Zhang.San", "Zhang.San"),
    ("\u5f20\u4e09", "\u5f20\u4e09"),
    ("Zhang San", "Zhang-San"),
    ("  zhang  ", "zhang"),
    ("a b  c", "a-b-c"),
    ("-x", "x"),
    (".hidden", "hidden"),
    ("o'brien", "o-brien"),
    ("x" * 80, "x" * 64),
    ("   ", "user"),
    ("!!!", "user"),
    ("system", "user"),
    ("\ufdfa" * 20, "\ufdfa" * 14),  # cut until its key fits the column
])
def test_names_derived_from_claims(claim, name):
    assert derive_username(claim) == name
    assert is_username(name)


# Expected slugs, fixed: a slug must never change for an existing name (it names Kubernetes objects and labels).
# The hash is kubespawner's (SHA-256 of the UTF-8 name, first 8 hex digits): its tests give 'a5aaf5dd' for
# 'jupyter-üni' and 'f587e2dc' for '-start' as here.
SLUGS = [
    ("alice", "alice"),
    ("Alice", "alice---3bc51062"),
    ("\u5f20\u4e09", "x---1d841bc0"),
    ("\u00c9lodie", "elodie---e822264d"),
    ("_alice", "alice---e8ec4c3c"),
    ("alice@example.org", "alice-example-org---7a64adf2"),
    ("zhang.san", "zhang-san---5aee43ad"),
    ("a--b", "a-b---90827a2e"),
    ("1password", "x-1password---d58fc8da"),
    ("jupyter-\u00fcni", "jupyter-uni---a5aaf5dd"),
    ("-start", "start---f587e2dc"),
    ("x" * 64, "x" * 52 + "---7ce10097"),
]


@pytest.mark.parametrize(("name", "slug"), SLUGS)
def test_slugs(name, slug):
    assert safe_slug(name) == slug
    assert len(slug) <= 63 and RFC1035.fullmatch(slug), "a DNS-1035 label: valid for every Kubernetes name"


def test_slugs_never_collide():
    names = [n for n, _ in SLUGS] + ["alice---3bc51062", "x", "X", "alice-example-org"]
    slugs = [safe_slug(n) for n in names]
    assert len(set(slugs)) == len(names)
    assert safe_slug("alice---3bc51062") != "alice---3bc51062", "a name that looks hashed is hashed again"


def test_slug_length():
    assert safe_slug("Alice" * 10, max_length=20) == "alicealic---" + safe_slug("Alice" * 10)[-8:]
    assert len(safe_slug("\u5f20" * 64, max_length=13)) == 12
    with pytest.raises(ValueError):
        safe_slug("alice", max_length=12)


def test_slug_hash_forms():
    """The further candidates of the same scheme (for a slug already taken): the hashed form of a kept name, and
    longer hashes; the hash is always SHA-256 of the name, so the 8-digit form is a prefix of the longer ones."""
    hashed8 = safe_slug("alice", always_hash=True)
    hashed16 = safe_slug("alice", hash_chars=16, always_hash=True)
    assert safe_slug("alice") == "alice"
    assert hashed8.startswith("alice---") and len(hashed8) == len("alice---") + 8
    assert hashed16.startswith(hashed8) and len(hashed16) == len("alice---") + 16
    assert safe_slug("Élodie", hash_chars=12) == safe_slug("Élodie", hash_chars=12, always_hash=True)
    assert safe_slug("Élodie", hash_chars=12).startswith(safe_slug("Élodie"))
    assert len(safe_slug("x" * 64, 25, hash_chars=16)) == 25
    with pytest.raises(ValueError):
        safe_slug("alice", max_length=20, hash_chars=16)


@pytest.mark.parametrize(("value", "code", "args"), [
    (7, "name.not_string", {"field_name": "name"}),
    ("", "name.empty", {"field_name": "name"}),
    ("a" * 64, "name.too_long", {"field_name": "name", "length": 64, "max": 63}),
    ("Train", "name.dns1123", {"field_name": "name", "max": 63}),
    ("train\n", "name.dns1123", {"field_name": "name", "max": 63}),
])
def test_dns1123_label(value, code, args):
    assert check_dns1123_label("train-1", "name") == "train-1"
    with pytest.raises(InvalidInput) as info:
        check_dns1123_label(value, "name")
    assert (info.value.code, info.value.params) == (code, args)


def test_text():
    assert check_text("Ünïcode ok", "display_name", 10) == "Ünïcode ok"
    for bad in ("x" * 11, "nul\x00", "\ud800", 3):
        with pytest.raises(InvalidInput) as info:
            check_text(bad, "display_name", 10)
        assert (info.value.code, info.value.params) == ("name.text", {"field_name": "display_name", "max": 10})


@pytest.mark.parametrize(("value", "char", "position"), [
    ("\u202eevil", "U+202E", 1),  # right-to-left override: "\u202eexe.txt" shows as "txt.exe"
    ("ok\u202a", "U+202A", 3), ("a\u202bb", "U+202B", 2), ("a\u202cb", "U+202C", 2), ("a\u202db", "U+202D", 2),
    ("x\u2066y", "U+2066", 2), ("x\u2067y", "U+2067", 2), ("x\u2068y", "U+2068", 2), ("x\u2069y", "U+2069", 2),
])
def test_text_refuses_bidirectional_overrides_and_isolates(value, char, position):
    with pytest.raises(InvalidInput) as info:
        check_text(value, "members[0].display_name", 64)
    assert (info.value.code, info.value.field, info.value.params) == (
        "name.text_bidi", "members[0].display_name",
        {"field_name": "members[0].display_name", "char": char, "position": position})
    assert "members[0].display_name" in info.value.message and char in info.value.message_in("zh-CN")


def test_text_keeps_right_to_left_scripts_and_marks():
    """Arabic and Hebrew text, and the implicit marks (LRM/RLM) that only nudge neighbouring punctuation, stay."""
    for text in ("\u0645\u0631\u062d\u0628\u0627", "\u05e9\u05dc\u05d5\u05dd", "a\u200eb", "a\u200fb"):
        assert check_text(text, "display_name", 64) == text
