"""Forms show each error beside the field it names, in the console's language, and the error goes when that field
changes; an error that names no field of the form is the form's. Run in-process on real Reflex state objects
against the test database (no browser): the new-job form, the project and member forms, the approval request
form, the operation-log filters and the price editor."""

from __future__ import annotations

import pytest
import reflex as rx

from crater_app.services import billing, jobs, projects
from crater_app.state import base as base_state
from crater_app.state.approvals import ApprovalsState
from crater_app.state.field_errors import input_for
from crater_app.state.job_new import NEW_JOB_FIELDS, NewJobState
from crater_app.state.oplog import OperationLogState
from crater_app.state.projects import ProjectDetailState, ProjectsState
from crater_app.state.usage import UsageState, price_cell
from tests.helpers import run_handler
from tests.sessions import session_secret, tab_router

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

JOB = {"name": "train", "command": "sleep\n1", "cpu": "1", "memory": "1Gi", "env": "", "max_runtime": "",
       "priority": "0"}


@pytest.fixture
def console(world, monkeypatch):
    """The handlers' process context is the test world's; project ``vision`` with alice as its admin."""
    monkeypatch.setattr(base_state, "get_context", lambda: world.ctx)
    projects.create_project(world.ctx, world.admin, "vision")
    projects.set_member(world.ctx, world.admin, "vision", "alice", "admin")
    return world


def page(cls, who: str, world, url: str, lang: str = "en"):
    """A page state of a tab at ``url`` signed in as ``who`` (the session cookie its websocket sent)."""
    root = rx.State(_reflex_internal_init=True)
    sub = root.get_substate(cls.get_full_name().split(".")[1:])
    sub.router = tab_router(world.ctx, url, session_secret(world.ctx, who))
    sub.lang = lang
    return sub


def run(st, name: str, *args):
    return run_handler(type(st).event_handlers[name].fn, st, *args)


@pytest.mark.parametrize(("path", "name"), [
    ("name", "name"), ("resources.cpu", "cpu"), ("resources.memory", "memory"), ("resources.nvidia.com/gpu", "gpus"),
    ("resources", "gpus"), ("accelerator_model", "gpus"), ("tasks[0].command", "command"), ("env.A", "env"),
    ("max_runtime", "max_runtime"), ("priority", "priority"), ("project", "project"),
    ("image", None), ("", None), (None, None), ("namespace", None), ("resourcesx", None),
])
def test_service_field_paths_map_to_the_new_job_forms_inputs(path, name):
    assert input_for(path, NEW_JOB_FIELDS) == name


def test_new_job_form_starts_with_the_platforms_defaults_and_an_empty_field_gets_them(console):
    """The cpu/memory fields start with the settings the API applies too; a field left empty gets the default."""
    form = page(NewJobState, "alice", console, "http://localhost/jobs/new")
    run(form, "load")
    assert (form.default_cpu, form.default_memory) == ("1", "2Gi")
    console.ctx.settings = console.ctx.settings.model_copy(update={"default_job_cpu": "500m",
                                                                   "default_job_memory": ""})
    run(form, "load")
    assert (form.default_cpu, form.default_memory) == ("500m", "")
    run(form, "set_gpus", "0")
    run(form, "submit", {**JOB, "name": "defaults", "cpu": "", "memory": "3Gi"})
    assert form.field_errors == {} and form.form_error == ""
    job = next(j for j in jobs.list_jobs(console.ctx, console.alice).items if j.name == "defaults")
    assert job.resources == {"cpu": "500m", "memory": "3Gi"}


def test_new_job_form_errors_sit_beside_their_fields_and_clear_on_change(console):
    form = page(NewJobState, "alice", console, "http://localhost/jobs/new", "zh-CN")
    run(form, "load")
    run(form, "set_gpus", "0")
    # the service's error on the name beside the name; nothing below the form
    run(form, "submit", {**JOB, "name": "Bad_Name"})
    assert list(form.field_errors) == ["name"] and form.form_error == ""
    # the user types into another field: the name's error stays; into the name: it goes
    run(form, "clear_field_error", "cpu")
    assert list(form.field_errors) == ["name"]
    run(form, "clear_field_error", "name")
    assert form.field_errors == {}
    # a quantity the service refuses (resources.cpu) goes beside CPU, in Chinese
    run(form, "submit", {**JOB, "cpu": "lots"})
    assert list(form.field_errors) == ["cpu"] and "不是 Kubernetes 数量" in form.field_errors["cpu"]
    # the form's own check (an env line without '=') goes beside the environment box, and a new error replaces it
    run(form, "submit", {**JOB, "env": "JUST_A_NAME"})
    assert list(form.field_errors) == ["env"]
    # choosing from a select clears its field's error on the server
    form.field_errors = {"project": "x", "name": "y"}
    run(form, "set_project", "vision")
    assert form.field_errors == {"name": "y"}
    # a good job: no error anywhere, on to the job's page
    form.field_errors = {}
    answer = run(form, "submit", JOB)
    assert form.field_errors == {} and form.form_error == "" and "/jobs/" in str(answer)


def test_project_form_and_member_form(console):
    create = page(ProjectsState, "admin", console, "http://localhost/projects", "zh-CN")
    run(create, "load")
    run(create, "create", {"name": "vision", "display_name": "", "description": "", "expires_at": ""})
    assert list(create.field_errors) == ["name"] and "项目“vision”已存在" in create.field_errors["name"]
    run(create, "clear_field_error", "name")
    assert create.field_errors == {}
    run(create, "create", {"name": "new-one", "display_name": "", "description": "x" * 2000, "expires_at": ""})
    assert list(create.field_errors) == ["description"]

    detail = page(ProjectDetailState, "alice", console, "http://localhost/projects/vision", "zh-CN")
    run(detail, "load")
    run(detail, "add_member", {"username": "nosuchuser"})
    assert detail.field_errors == {"username": "用户“nosuchuser”不存在。"} and detail.error == ""
    run(detail, "set_new_member_role", "viewer")  # another field: the user name's error stays
    assert list(detail.field_errors) == ["username"]
    run(detail, "clear_field_error", "username")
    run(detail, "add_member", {"username": "bob"})
    assert detail.field_errors == {} and any(m["username"] == "bob" for m in detail.members)


def test_quota_dialog_cell_error_goes_when_that_cell_changes(console):
    admin = page(ProjectDetailState, "admin", console, "http://localhost/projects/vision", "zh-CN")
    run(admin, "load")
    run(admin, "open_quota")
    run(admin, "set_quota_cell", 0, "guarantee", "4")
    run(admin, "set_quota_cell", 0, "capability", "2")
    run(admin, "save_quota")
    assert admin.quota_edit[0]["error_col"] == "guarantee" and "不能超过" in admin.quota_edit[0]["error"]
    run(admin, "set_quota_cell", 0, "capability", "8")  # another cell: the error stays
    assert admin.quota_edit[0]["error_col"] == "guarantee"
    run(admin, "set_quota_cell", 0, "guarantee", "1")
    assert (admin.quota_edit[0]["error"], admin.quota_edit[0]["error_col"]) == ("", "")


def test_approval_form_and_decision_note(console):
    asks = page(ApprovalsState, "alice", console, "http://localhost/approvals", "zh-CN")
    run(asks, "load")
    run(asks, "set_new_open", True)
    run(asks, "set_new_kind", "quota")
    run(asks, "create", {"resources": "cpu=8", "reason": "   "})
    assert list(asks.field_errors) == ["reason"] and "理由不能为空" in asks.field_errors["reason"]
    run(asks, "create", {"resources": "cpu", "reason": "more"})  # the form's own check
    assert list(asks.field_errors) == ["resources"]
    run(asks, "create", {"resources": "cpu=lots", "reason": "more"})  # the service's, on payload.capability.cpu
    assert list(asks.field_errors) == ["resources"] and "不是 Kubernetes 数量" in asks.field_errors["resources"]
    run(asks, "set_new_section", "deserved")
    assert asks.field_errors == {}
    run(asks, "set_new_kind", "extend_runtime")
    run(asks, "create", {"job_id": "424242", "max_runtime": "2h", "reason": "r"})
    assert list(asks.field_errors) == ["job_id"] and "作业 424242 不存在" in asks.field_errors["job_id"]


def test_operation_log_filters(console):
    log = page(OperationLogState, "admin", console, "http://localhost/admin/operation-logs", "zh-CN")
    run(log, "load")
    run(log, "apply", {"actor": "", "target": "", "from": "2026-02-01", "to": "2026-01-01"})
    assert list(log.field_errors) == ["from"] and log.form_error == ""
    run(log, "clear_field_error", "from")
    run(log, "apply", {"actor": "a" * 64, "target": "", "from": "", "to": ""})
    assert log.field_errors == {} and log.form_error == ""


def test_price_editor_error_sits_under_its_cell(console):
    billing.set_prices(console.ctx, console.admin, [{"resource": "cpu", "points_per_hour": 1}])
    usage = page(UsageState, "admin", console, "http://localhost/usage", "zh-CN")
    run(usage, "load")
    run(usage, "add_price")
    run(usage, "add_price")
    run(usage, "set_price_field", 2, "resource", "gpu")  # row 1 stays blank (not sent), row 2 is the service's 1
    run(usage, "set_price_field", 2, "points_per_hour", "3")
    run(usage, "save_prices")
    assert list(usage.field_errors) == ["2.resource"] and "prices[1].resource" in usage.field_errors["2.resource"]
    run(usage, "set_price_field", 2, "points_per_hour", "4")  # another cell of the row: stays
    assert list(usage.field_errors) == ["2.resource"]
    run(usage, "set_price_field", 2, "resource", "nvidia.com/gpu")
    assert usage.field_errors == {}
    run(usage, "save_prices")
    assert usage.field_errors == {} and usage.form_error == ""


def test_price_cells_count_only_the_rows_sent():
    rows = [{"resource": "cpu", "model": "", "points_per_hour": "1"}, {"resource": "", "model": "", "points_per_hour": ""},
            {"resource": "gpu", "model": "", "points_per_hour": "1"}]
    assert price_cell("prices[1].resource", rows) == "2.resource"
    assert price_cell("prices[0].points_per_hour", rows) == "0.points_per_hour"
    assert price_cell("prices[1]", rows) == "2.resource"
    assert price_cell("prices[5].model", rows) is None and price_cell("prices", rows) is None
