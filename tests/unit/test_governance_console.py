"""Pure console helpers of the projects, API-token and operation-log pages: rows, expiry and token status,
the forms' checks (field named, i18n key, nothing sent), the operation log's day filters and URL query."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from crater_app import i18n
from crater_app.schemas import OperationLogPublic, PersonalTokenPublic, ProjectMemberPublic, ProjectPublic
from crater_app.domain.policy import PROJECT_ROLES
from crater_app.state import governance_views as gv
from crater_app.state.forms import FormError
from crater_app.state.governance_forms import (
    csv_filename, day_bounds, expiry_from_day, member_username, oplog_arguments, oplog_query, oplog_url,
    project_form, token_form,
)
from crater_app.state.projects import route_project_name

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=timezone.utc)
I18N = Path(i18n.__file__).resolve().parent


def _project(**fields) -> ProjectPublic:
    base = dict(name="vision", display_name="Vision Lab", description="GPUs for vision", created_at=NOW,
                expires_at=None, expired=False, role="admin", member_count=3)
    return ProjectPublic(**{**base, **fields})


def _token(**fields) -> PersonalTokenPublic:
    base = dict(id=7, name="laptop", user="alice", created_at=NOW - timedelta(days=1),
                expires_at=NOW + timedelta(days=89), last_used_at=None, revoked=False, revoked_at=None)
    return PersonalTokenPublic(**{**base, **fields})


# ---- expiry and rows -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("expires_at, state, days", [
    (None, "never", ""),
    (NOW - timedelta(seconds=1), "expired", ""),
    (NOW, "expired", ""),  # at the instant itself it has expired (the service's rule: expires_at <= now)
    (NOW + timedelta(hours=1), "soon", "1"),
    (NOW + timedelta(days=7), "soon", "7"),
    (NOW + timedelta(days=7, seconds=1), "active", "8"),
    (NOW + timedelta(days=90), "active", "90"),
])
def test_expiry_state_and_days_left(expires_at, state, days):
    assert gv.expiry_state(expires_at, NOW) == state
    assert gv.days_left(expires_at, NOW) == days


def test_naive_times_are_utc():
    naive = (NOW + timedelta(days=2)).replace(tzinfo=None)
    assert gv.expiry_state(naive, NOW) == "soon" and gv.days_left(naive, NOW) == "2"


def test_project_row():
    row = gv.project_row(_project(expires_at=NOW + timedelta(days=30)), NOW)
    assert row == {"name": "vision", "display_name": "Vision Lab", "description": "GPUs for vision",
                   "created": "2026-11-30 12:00:00", "expires": "2026-12-30 12:00:00", "expiry": "active",
                   "days_left": "30", "role": "admin", "members": "3"}
    never = gv.project_row(_project(role=None, member_count=0), NOW)
    assert (never["expires"], never["expiry"], never["role"], never["members"]) == ("", "never", "", "0")
    # The service's verdict wins when it says expired (its clock may be ahead of ours by a moment).
    assert gv.project_row(_project(expires_at=NOW + timedelta(seconds=5), expired=True), NOW)["expiry"] == "expired"


def test_member_row():
    member = ProjectMemberPublic(username="alice", display_name="Alice", role="viewer", default=True)
    assert gv.member_row(member) == {"username": "alice", "display_name": "Alice", "role": "viewer", "default": "1"}
    assert gv.member_row(member.model_copy(update={"default": False}))["default"] == ""


@pytest.mark.parametrize("fields, status", [
    ({}, "active"),
    ({"expires_at": NOW}, "expired"),
    ({"expires_at": NOW - timedelta(days=1)}, "expired"),
    ({"revoked": True, "revoked_at": NOW}, "revoked"),
    ({"revoked": True, "revoked_at": NOW - timedelta(days=3), "expires_at": NOW - timedelta(days=1)}, "revoked"),
    ({"expires_at": None}, "active"),
])
def test_token_status(fields, status):
    assert gv.token_status(_token(**fields), NOW) == status
    assert status in gv.TOKEN_STATUSES


def test_token_row_never_holds_a_secret():
    row = gv.token_row(_token(last_used_at=NOW - timedelta(minutes=5)), NOW)
    assert row == {"id": "7", "name": "laptop", "created": "2026-11-29 12:00:00", "expires": "2027-02-27 12:00:00",
                   "last_used": "2026-11-30 11:55:00", "revoked": "", "status": "active"}
    assert gv.token_row(_token(), NOW)["last_used"] == ""


def test_oplog_row():
    entry = OperationLogPublic(id=5, at=NOW, actor="admin", actor_role="admin", action="project:create",
                               target="vision", result="ok", details="")
    assert gv.oplog_row(entry) == {"id": "5", "at": "2026-11-30 12:00:00", "actor": "admin", "actor_role": "admin",
                                   "action": "project:create", "target": "vision", "result": "ok", "details": "",
                                   "code": "", "args": "{}"}


def test_oplog_details_render_from_their_code_and_old_rows_keep_their_text():
    coded = OperationLogPublic(id=6, at=NOW, actor="admin", actor_role="admin", action="project:member:set",
                               target="vision/bob", result="ok", details="role: Member → Project admin",
                               code="project.member_set", args={"role_before": "member", "role": "admin"})
    row = gv.oplog_row(coded)
    assert gv.oplog_texts("en", row)["details"] == "role: Member → Project admin"
    assert gv.oplog_texts("zh-CN", row)["details"] == "角色：成员 → 项目管理员"
    old = gv.oplog_row(OperationLogPublic(id=7, at=NOW, actor="admin", actor_role="admin", action="project:quota:set",
                                          target="vision", result="ok", details="capability={}->{gpu: 8}"))
    assert gv.oplog_texts("zh-CN", old)["details"] == "capability={}->{gpu: 8}"


# ---- forms ------------------------------------------------------------------------------------------------------


def test_project_form_strips_and_ends_the_expiry_day():
    fields = project_form({"name": " vision ", "display_name": " Vision ", "description": " d ",
                           "expires_at": "2026-12-31"}, NOW)
    assert fields == {"name": "vision", "display_name": "Vision", "description": "d",
                      "expires_at": "2026-12-31T23:59:59+00:00"}
    assert project_form({"name": "a"}, NOW)["expires_at"] is None


@pytest.mark.parametrize("form, key, field", [
    ({"name": ""}, "project.error.name", "name"),
    ({"name": "Vision"}, "project.error.name", "name"),
    ({"name": "-vision"}, "project.error.name", "name"),
    ({"name": "a" * 64}, "project.error.name", "name"),
    ({"name": "ok", "display_name": "x" * 129}, "project.error.too_long", "display_name"),
    ({"name": "ok", "description": "x" * 1025}, "project.error.too_long", "description"),
    ({"name": "ok", "expires_at": "31/12/2026"}, "project.error.expiry_format", "expires_at"),
    ({"name": "ok", "expires_at": "2026-11-29"}, "project.error.expiry_past", "expires_at"),
])
def test_project_form_errors_name_the_field(form, key, field):
    with pytest.raises(FormError) as err:
        project_form(form, NOW)
    assert (err.value.key, err.value.field) == (key, field)
    i18n.translate("zh-CN", key, **err.value.params)  # the message's placeholders are all given


def test_expiry_today_is_still_allowed():
    assert expiry_from_day("2026-11-30", NOW) == "2026-11-30T23:59:59+00:00"
    assert expiry_from_day("  ", NOW) is None
    with pytest.raises(FormError):
        expiry_from_day("2026-11-30", NOW.replace(hour=23, minute=59, second=59))


def test_member_username():
    assert member_username(" alice ") == "alice"
    assert member_username("\u5f20\u4e09") == "\u5f20\u4e09" and member_username("Alice") == "Alice"  # by key
    for bad in ("", "-alice", "al ice", "a" * 65):
        with pytest.raises(FormError) as err:
            member_username(bad)
        assert (err.value.key, err.value.field) == ("member.error.username", "username")


def test_token_form():
    assert token_form({"name": " ci ", "expires_in_days": "30"}) == ("ci", 30)
    assert token_form({"name": "x" * 64, "expires_in_days": "365"}) == ("x" * 64, 365)
    assert token_form({"name": "x", "expires_in_days": "1"}) == ("x", 1)
    for form, field in [({"name": "", "expires_in_days": "30"}, "name"),
                        ({"name": "x" * 65, "expires_in_days": "30"}, "name"),
                        ({"name": "ci", "expires_in_days": "0"}, "expires_in_days"),
                        ({"name": "ci", "expires_in_days": "366"}, "expires_in_days"),
                        ({"name": "ci", "expires_in_days": "1.5"}, "expires_in_days"),
                        ({"name": "ci", "expires_in_days": "-3"}, "expires_in_days"),
                        ({"name": "ci", "expires_in_days": ""}, "expires_in_days")]:
        with pytest.raises(FormError) as err:
            token_form(form)
        assert err.value.field == field, form


# ---- operation-log filters ---------------------------------------------------------------------------------------


def test_day_bounds_include_both_days():
    assert day_bounds("2026-11-01", "2026-11-30") == ("2026-11-01T00:00:00+00:00", "2026-12-01T00:00:00+00:00")
    assert day_bounds("2026-11-30", "2026-11-30") == ("2026-11-30T00:00:00+00:00", "2026-12-01T00:00:00+00:00")
    assert day_bounds("", "") == (None, None)
    assert day_bounds("", "2026-12-31") == (None, "2027-01-01T00:00:00+00:00")


@pytest.mark.parametrize("since, until, key, field", [
    ("yesterday", "", "oplog.error.date", "from"),
    ("", "2026-13-01", "oplog.error.date", "to"),
    ("2026-12-02", "2026-12-01", "oplog.error.range", "from"),
])
def test_day_bounds_errors(since, until, key, field):
    with pytest.raises(FormError) as err:
        day_bounds(since, until)
    assert (err.value.key, err.value.field) == (key, field)


def test_oplog_query_and_url_round_trip():
    params = {"actor": " alice ", "action": "token:create", "target": "", "from": "2026-11-01", "page": "3",
              "junk": "x"}
    filters, page = oplog_query(params)
    assert filters == {"actor": "alice", "action": "token:create", "target": "", "from": "2026-11-01", "to": ""}
    assert page == 3
    url = oplog_url(filters, page)
    assert url == "/admin/operation-logs?actor=alice&action=token%3Acreate&from=2026-11-01&page=3"
    assert oplog_query(dict(re.findall(r"([^?&=]+)=([^&]*)", url.replace("%3A", ":")))) == (filters, 3)
    assert oplog_url(oplog_query({})[0], 1) == "/admin/operation-logs"
    for bad in ("0", "-1", "x", "99999999999"):
        assert oplog_query({"page": bad})[1] == 1
    assert oplog_query({"actor": "a" * 100})[0]["actor"] == "a" * 64


def test_oplog_arguments():
    args = oplog_arguments({"actor": "", "action": "project:create", "target": "vis", "from": "", "to": "2026-11-30"})
    assert args == {"actor": None, "action": "project:create", "target": "vis", "since": None,
                    "until": "2026-12-01T00:00:00+00:00"}


def test_csv_filename():
    assert csv_filename(NOW) == "operation-log-20261130-120000.csv"


def test_route_project_name():
    assert route_project_name("/projects/vision") == "vision"
    assert route_project_name("/projects/vision/") == "vision"
    assert route_project_name("/projects") is None
    assert route_project_name("/projects/a/b") is None


# ---- translations --------------------------------------------------------------------------------------------------


def test_console_area_strings_exist_in_both_languages():
    en = json.loads((I18N / "console" / "en.json").read_text(encoding="utf-8"))
    zh = json.loads((I18N / "console" / "zh-CN.json").read_text(encoding="utf-8"))
    assert set(en) == set(zh)
    # Real Chinese, not copied English: every value but the example token name has a CJK character.
    untranslated = [k for k, v in zh.items() if not re.search(r"[\u4e00-\u9fff]", v)]
    assert untranslated == ["tokens.name.placeholder"]
    families = [f"project.role.{r}" for r in PROJECT_ROLES] + [f"token.status.{s}" for s in gv.TOKEN_STATUSES]
    assert [k for k in families if k not in en] == []


# ---- the page states' shared helper ---------------------------------------------------------------------------


def test_guarded_runs_on_the_calling_page_state():
    """Reflex makes each public state function an event handler bound to the state defining it, so an inherited
    ``guarded`` would write the page's ``error`` onto AppState, where the page never shows it. It must stay a
    plain method of whichever page state calls it (and not be an event the browser can send)."""
    import functools

    from crater_app import state

    assert isinstance(state.AppState.__dict__["guarded"], functools.partialmethod)
    for name in state.__all__:
        cls = getattr(state, name)
        assert "guarded" not in cls.event_handlers and "_guarded" not in cls.event_handlers, name


def test_fill_secret_script_quotes_the_secret():
    from crater_app.state.tokens import fill_secret_script

    script = fill_secret_script("crt_x'\"</script>\\")
    assert json.dumps("crt_x'\"</script>\\") in script
    assert script.count("token-secret") == 1 and script.endswith("(120)")
