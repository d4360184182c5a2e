"""cluster.local.accounts and cluster.local.isolation rules that need no root: account names, settings checks,
the trust model, and folders made without following links."""

from __future__ import annotations

import os
import re
from itertools import islice

import pytest

from crater_app.cluster.local.accounts import NAME_MAX, account_names, check_settings
from crater_app.cluster.local.isolation import closed_ancestors, make_dirs, trust_model
from crater_app.domain.errors import InvalidInput
from crater_app.domain.naming import safe_slug

POSIX_NAME = re.compile(r"[a-z_][a-z0-9_-]*")


@pytest.mark.parametrize(("user", "first"), [("alice", "crater-alice"), ("a-b", "crater-a-b"), ("bob2", "crater-bob2")])
def test_a_user_name_that_is_its_own_slug_is_the_account_name(user, first):
    assert next(account_names(user)) == first


@pytest.mark.parametrize("user", ["张三", "Élodie", "Alice", "a.b@example.org", "x" * 64, "ｚｈａｎｇ", "-lead",
                                  "bob_2", "_svc", "a--b", "2fast"])
def test_other_names_get_the_slug_hash_and_stay_valid(user):
    names = list(islice(account_names(user), 3))
    assert len(names) == len(set(names)) == 3, names
    for name in names:
        assert POSIX_NAME.fullmatch(name) and len(name) <= NAME_MAX and name.startswith("crater-"), name
    assert re.fullmatch(r"crater-[a-z][a-z0-9-]*---[0-9a-f]{8}", names[0]), names[0]
    assert [len(n.rpartition("---")[2]) for n in names] == [8, 12, 16]


@pytest.mark.parametrize("user", ["alice", "张三", "Élodie", "a.b@example.org", "x" * 64, "bob_2"])
@pytest.mark.parametrize("prefix", ["crater-", "ct-", "p" * 16])
def test_the_account_name_is_the_prefix_and_the_users_slug(user, prefix):
    """One slug scheme: the account name is what ``safe_slug`` gives the user name, within the 32 characters."""
    assert next(account_names(user, prefix)) == prefix + safe_slug(user, NAME_MAX - len(prefix))


def test_the_hashes_are_the_slugs_own():
    slug = safe_slug("Élodie")
    assert slug.startswith("elodie---")
    assert next(account_names("Élodie")) == "crater-" + slug, "the same 8 hex digits as the slug everywhere else"
    assert next(account_names("a.b@example.org")) == "crater-a-b-example-or---" + safe_slug("a.b@example.org")[-8:]
    assert next(account_names("bob_2")).startswith("crater-bob-2---")


def test_a_kept_name_falls_back_to_its_hashed_forms():
    assert list(islice(account_names("alice"), 4)) == [
        "crater-alice", "crater-" + safe_slug("alice", 25, always_hash=True),
        "crater-" + safe_slug("alice", 25, hash_chars=12, always_hash=True),
        "crater-" + safe_slug("alice", 25, hash_chars=16, always_hash=True),
    ]
    assert list(islice(account_names("alice"), 2))[1].startswith("crater-alice---")


def test_a_long_prefix_leaves_room_only_for_the_short_hash():
    names = list(islice(account_names("Élodie", "p" * 16), 2))
    assert len(names[0]) <= NAME_MAX and names[0].endswith(safe_slug("Élodie")[-8:])
    assert names[1].endswith("-2"), "no room for a longer hash: the numbered forms come next"


def test_two_names_never_share_an_account_name():
    users = ["alice", "Alice", "ALICE", "alicé", "a.lice", "张三", "张四", "x" * 64, "x" * 63 + "y", "bob_2", "bob-2"]
    firsts = [next(account_names(u)) for u in users]
    assert len(set(firsts)) == len(users)


def test_account_names_are_stable():
    assert list(islice(account_names("张三", "ct-"), 50)) == list(islice(account_names("张三", "ct-"), 50))


@pytest.mark.parametrize(("uid_range", "prefix", "code", "field"), [
    ((999, 2000), "crater-", "local.uid_min", "CRATER_LOCAL_UID_MIN"),
    ((2000, 1999), "crater-", "local.uid_max", "CRATER_LOCAL_UID_MAX"),
    ((2000, 2**31), "crater-", "local.uid_max", "CRATER_LOCAL_UID_MAX"),
    ((60514, 61183), "Crater-", "local.account_prefix", "CRATER_LOCAL_ACCOUNT_PREFIX"),
    ((60514, 61183), "1x-", "local.account_prefix", "CRATER_LOCAL_ACCOUNT_PREFIX"),
    ((60514, 61183), "a" * 17, "local.account_prefix", "CRATER_LOCAL_ACCOUNT_PREFIX"),
    ((60514, 61183), "", "local.account_prefix", "CRATER_LOCAL_ACCOUNT_PREFIX"),
])
def test_account_settings_are_checked(uid_range, prefix, code, field):
    with pytest.raises(InvalidInput) as info:
        check_settings(uid_range, prefix)
    assert (info.value.code, info.value.field) == (code, field)
    assert field in info.value.message and field in info.value.message_in("zh-CN")


def test_good_account_settings_pass():
    check_settings((60514, 61183), "crater-")
    check_settings((1000, 1000), "_j")


@pytest.mark.parametrize(("mode", "euid", "tools", "model"), [
    ("auto", 0, True, "os-account"), ("auto", 1000, True, "not-root"), ("auto", 0, False, "no-tools"),
    ("on", 0, True, "os-account"), ("off", 0, True, "off"), ("off", 1000, False, "off"),
])
def test_trust_model(mode, euid, tools, model):
    assert trust_model(mode, euid, tools) == model


@pytest.mark.parametrize(("euid", "tools", "reason"), [(1000, True, "not-root"), (0, False, "no-tools")])
def test_isolation_on_refuses_where_it_cannot_be_had(euid, tools, reason):
    with pytest.raises(InvalidInput) as info:
        trust_model("on", euid, tools)
    assert (info.value.code, info.value.field, info.value.params) == (
        "local.isolation_unavailable", "CRATER_LOCAL_ISOLATION", {"reason": reason})
    assert "root" in info.value.message


def test_an_unknown_mode_names_the_allowed_ones():
    with pytest.raises(InvalidInput) as info:
        trust_model("yes", 0, True)
    assert info.value.message == "CRATER_LOCAL_ISOLATION takes the values auto, on and off (got 'yes')"
    assert info.value.message_in("zh-CN") == "CRATER_LOCAL_ISOLATION 的取值为 auto、on 和 off（实际为 'yes'）"


def test_make_dirs_creates_the_working_folder(tmp_path):
    made = make_dirs(tmp_path, "a/b/./c", None)
    assert made == tmp_path / "a" / "b" / "c" and made.is_dir()
    assert make_dirs(tmp_path, None, None) == tmp_path
    assert make_dirs(tmp_path, "a/b", None) == tmp_path / "a" / "b", "existing folders are fine"


@pytest.mark.parametrize("bad", ["../x", "a/../../x", "/etc"])
def test_make_dirs_stays_inside(tmp_path, bad):
    with pytest.raises(ValueError):
        make_dirs(tmp_path, bad, None)


def test_make_dirs_never_follows_a_planted_link(tmp_path):
    """A job's earlier attempt left ``work/sub`` as a link to a folder of Crater's: the next start must not make
    folders (or hand them to the job's account) there."""
    target = tmp_path / "crater-data"
    target.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    os.symlink(target, work / "sub")
    with pytest.raises(OSError):
        make_dirs(work, "sub/inner", None)
    assert list(target.iterdir()) == []


@pytest.mark.parametrize("user", ["admin", "张三", "x" * 64])
def test_after_the_hashed_names_come_numbered_ones_so_other_installs_cannot_use_them_all_up(user):
    """Every Crater on a host makes ``crater-admin``: once the slug and its hashed forms are taken by accounts of
    other installs, the numbered forms follow, each a valid, distinct POSIX name."""
    names = list(islice(account_names(user), 4000))
    assert len(set(names)) == len(names) == 4000
    hashed = next(i for i, n in enumerate(names) if n.endswith("-2"))
    assert 2 <= hashed <= 4, names[:hashed + 1]  # the slug and its hashed forms first
    assert [n.rpartition("-")[2] for n in names[hashed:hashed + 3]] == ["2", "3", "4"], names[:hashed + 3]
    for name in names:
        assert POSIX_NAME.fullmatch(name) and len(name) <= NAME_MAX, name


def test_closed_ancestors_are_the_folders_above_the_data_folder_others_cannot_traverse(tmp_path):
    base = tmp_path.resolve()  # pytest's own folders above it are 0700: only those from here down are looked at
    data = base / "top" / "open" / "data"
    data.mkdir(parents=True)
    os.chmod(base, 0o755)
    os.chmod(base / "top", 0o700)  # as mktemp -d makes it
    os.chmod(base / "top" / "open", 0o711)
    os.chmod(data, 0o700)  # the data folder itself is not looked at: the os-account model sets it 0711

    def closed_here():
        return [p for p in closed_ancestors(data) if base in (p, *p.parents)]

    assert closed_here() == [base / "top"]
    os.chmod(base / "top", 0o701)
    assert closed_here() == []
    os.chmod(base, 0o750)
    assert closed_here() == [base]
