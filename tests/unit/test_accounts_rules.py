"""Pure rules behind accounts: user names from OIDC claims, the account-change permissions, the edit form."""

from __future__ import annotations

from crater_app.domain.naming import check_dns1123_label, to_dns1123_label
from crater_app.domain.policy import Actor, can_change_user, can_read_user, can_sign_up
from crater_app.state.admin import limit_changes


def test_to_dns1123_label():
    assert to_dns1123_label("Zhang.San") == "zhang-san"
    assert to_dns1123_label("zhang.san@example.org") == "zhang-san"
    assert to_dns1123_label("__a__b__") == "a-b"
    assert to_dns1123_label("张三") == "user" and to_dns1123_label("", "x") == "x"
    long = to_dns1123_label("a" * 70 + "-b")
    assert len(long) == 63 and check_dns1123_label(long, "username") == long
    assert to_dns1123_label("a" * 62 + "-b") == "a" * 62  # no trailing '-' after the cut


def test_account_permissions():
    admin, other_admin, user = Actor(1, "root", "admin"), Actor(2, "ops", "admin"), Actor(3, "u", "user")
    assert can_read_user(admin) and not can_read_user(user)
    assert not can_change_user(admin, 1, "role") and not can_change_user(admin, 1, "status")
    assert can_change_user(admin, 1, "max_sessions") and can_change_user(other_admin, 1, "role")
    assert not can_change_user(user, 3, "max_sessions")
    assert can_sign_up(True) and not can_sign_up(False)


def test_limit_changes_from_form():
    assert limit_changes({"max_sessions": " 3 ", "max_accelerators_per_job": "", "max_runtime": "12h"}) == {
        "max_sessions": 3, "max_accelerators_per_job": None, "max_runtime": "12h"}
    assert limit_changes({"max_sessions": "-1"})["max_sessions"] == "-1"  # the service names the field


def test_derived_keys(tmp_path):
    from crater_app.auth.keys import SECRET_FILE, derive_key

    a = derive_key("", tmp_path, "oidc-pending-login")
    assert derive_key("", tmp_path, "oidc-pending-login") == a and len(a) == 32  # the same file secret
    assert (tmp_path / SECRET_FILE).stat().st_mode & 0o777 == 0o600
    assert derive_key("", tmp_path, "other-purpose") != a
    assert derive_key("configured", tmp_path, "oidc-pending-login") != a
    assert derive_key("configured", tmp_path / "elsewhere", "oidc-pending-login") == \
        derive_key("configured", tmp_path, "oidc-pending-login")
