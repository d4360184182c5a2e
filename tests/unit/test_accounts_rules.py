"""Pure rules behind accounts: the account-change, password and session permissions, the edit form, derived keys
(user names and their slugs: tests/unit/test_naming.py)."""

from __future__ import annotations

from crater_app.domain.policy import (
    Actor, can_change_password, can_change_user, can_manage_sessions, can_read_user, can_reset_password, can_sign_up,
)
from crater_app.state.admin import limit_changes


def test_account_permissions():
    admin, other_admin, user = Actor(1, "root", "admin"), Actor(2, "ops", "admin"), Actor(3, "u", "user")
    assert can_read_user(admin) and not can_read_user(user)
    assert not can_change_user(admin, 1, "role") and not can_change_user(admin, 1, "status")
    assert can_change_user(admin, 1, "max_sessions") and can_change_user(other_admin, 1, "role")
    assert not can_change_user(user, 3, "max_sessions")
    assert can_sign_up(True) and not can_sign_up(False)


def test_password_and_session_permissions():
    admin, user, guest = Actor(1, "root", "admin"), Actor(3, "u", "user"), Actor(4, "g", "guest")
    assert can_change_password(admin) and can_change_password(user) and can_change_password(guest)
    assert not can_change_password(Actor(5, "x", "robot"))
    assert can_reset_password(admin, 3) and not can_reset_password(admin, 1), "not one's own: needs the current one"
    assert not can_reset_password(user, 4)
    assert can_manage_sessions(user, 3) and not can_manage_sessions(user, 4) and not can_manage_sessions(admin, 3)


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
