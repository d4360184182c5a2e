"""The project page's Quota card, "Edit quota" and "Share" dialogs and the new-job form's kind / preemptible /
project fields, run in-process on real Reflex state objects against the test database (no browser): what they
show, what they write, and that an error leaves the dialog open with everything typed and nothing written."""

from __future__ import annotations

import re

import pytest
import reflex as rx
from sqlmodel import select

from crater_app.db.models import OperationLog
from crater_app.services import jobs, projects, quotas
from crater_app.state import base as base_state
from crater_app.state.job_new import NewJobState
from crater_app.state.projects import ProjectDetailState
from tests.helpers import run_handler
from tests.sessions import signed_in_router

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

GPU = "nvidia.com/gpu"
URL = "http://localhost/projects/vision"


@pytest.fixture
def console(world, monkeypatch):
    """The handlers' process context is the test world's; project ``vision``: bob its admin, alice a member."""
    monkeypatch.setattr(base_state, "get_context", lambda: world.ctx)
    projects.create_project(world.ctx, world.admin, "vision")
    projects.set_member(world.ctx, world.admin, "vision", "bob", "admin")
    projects.set_member(world.ctx, world.admin, "vision", "alice", "member")
    return world


def page(cls, who: str, world, url: str = URL):
    root = rx.State(_reflex_internal_init=True)
    sub = root.get_substate(cls.get_full_name().split(".")[1:])
    sub.router = signed_in_router(world.ctx, url, who)
    return sub


def run(st, name: str, *args):
    """Call the handler ``name`` of ``st`` and return its last answer (see :func:`tests.helpers.run_handler`)."""
    return run_handler(type(st).event_handlers[name].fn, st, *args)


def _quota_actions(world) -> list[str]:
    with world.ctx.session(read_only=True) as s:
        return [r.details for r in s.exec(select(OperationLog).where(OperationLog.action == "project:quota:set"))]


def test_admin_edits_the_quota_errors_stay_in_the_dialog(console):
    admin = page(ProjectDetailState, "admin", console)
    run(admin, "load")
    assert admin.can_set_quota and admin.quota == [] and admin.quota_admitted == "0" and admin.quota_held == "0"
    run(admin, "open_quota")
    assert admin.quota_open and [r["resource"] for r in admin.quota_edit] == [GPU]
    run(admin, "set_quota_cell", 0, "capability", "1")
    run(admin, "add_quota_row")
    run(admin, "set_quota_cell", 1, "resource", "memory")
    run(admin, "set_quota_cell", 1, "guarantee", "8Gi")
    run(admin, "set_quota_cell", 1, "capability", "4Gi")
    run(admin, "set_quota_cell", 1, "nonsense", "x")  # not a column: ignored
    run(admin, "save_quota")
    # guarantee > capability: the service's error under that cell, the dialog open, the rows as typed, nothing saved
    assert admin.quota_open and admin.quota_edit[1]["error_col"] == "guarantee"
    assert "must not exceed" in admin.quota_edit[1]["error"] and admin.quota_error == ""
    assert admin.quota_edit[1]["guarantee"] == "8Gi" and admin.quota_edit[0]["capability"] == "1"
    assert quotas.get_quota(console.ctx, console.admin, "vision").capability == {} and _quota_actions(console) == []
    # a row with amounts but no resource name is refused before anything is sent
    run(admin, "add_quota_row")
    run(admin, "set_quota_cell", 2, "deserved", "3")
    run(admin, "save_quota")
    assert admin.quota_edit[2]["error_col"] == "resource" and admin.quota_edit[1]["error"] == ""
    run(admin, "remove_quota_row", 2)
    run(admin, "set_quota_cell", 1, "guarantee", "2Gi")
    run(admin, "save_quota")
    assert not admin.quota_open and admin.quota_error == ""
    stored = quotas.get_quota(console.ctx, console.admin, "vision")
    assert stored.capability == {GPU: "1", "memory": str(4 * 1024 ** 3)} and stored.guarantee == {
        "memory": str(2 * 1024 ** 3)}
    assert [(r["key"], r["capability"], r["used"]) for r in admin.quota] == [("memory", "4 GiB", "0 B"),
                                                                            (GPU, "1", "0")]
    assert len(_quota_actions(console)) == 1
    # reopening shows what is stored, as quantity text
    run(admin, "open_quota")
    assert [(r["resource"], r["guarantee"], r["capability"]) for r in admin.quota_edit] == [
        ("memory", "2Gi", "4Gi"), (GPU, "", "1")]
    run(admin, "set_quota_open", False)
    assert not admin.quota_open


def test_members_see_the_quota_read_only(console):
    quotas.set_quota(console.ctx, console.admin, "vision", {"capability": {GPU: 2}})
    alice = page(ProjectDetailState, "alice", console)
    run(alice, "load")
    assert not alice.can_set_quota and not alice.members_visible
    assert [(r["key"], r["capability"]) for r in alice.quota] == [(GPU, "2")]
    # the service refuses her even if the handler is called: the error in the dialog, nothing written
    run(alice, "open_quota")
    run(alice, "set_quota_cell", 0, "capability", "8")
    run(alice, "save_quota")
    assert "only platform admins" in alice.quota_error and alice.quota_open
    assert quotas.get_quota(console.ctx, console.admin, "vision").capability == {GPU: "2"}
    bob = page(ProjectDetailState, "bob", console)  # a project admin edits shares, not the quota
    run(bob, "load")
    assert not bob.can_set_quota and bob.can_manage
    outsider = page(ProjectDetailState, "gus", console)
    run(outsider, "load")
    assert outsider.not_found and outsider.quota == []


def test_project_admin_sets_a_share(console):
    quotas.set_quota(console.ctx, console.admin, "vision", {"capability": {GPU: 1}})
    bob = page(ProjectDetailState, "bob", console)
    run(bob, "load")
    alice_row = next(m for m in bob.members if m["username"] == "alice")
    assert alice_row["share"] == ""
    run(bob, "open_share", "alice")
    assert bob.share_user == "alice" and [r["resource"] for r in bob.share_edit] == [GPU]
    run(bob, "set_share_cell", 0, "amount", "2")
    run(bob, "save_share")
    assert bob.share_user == "alice" and bob.share_edit[0]["error_col"] == "amount"
    assert "capability" in bob.share_edit[0]["error"] and bob.share_edit[0]["amount"] == "2"
    run(bob, "set_share_cell", 0, "amount", "1")
    run(bob, "add_share_row")
    run(bob, "set_share_cell", 1, "resource", "cpu")
    run(bob, "set_share_cell", 1, "amount", "500m")
    run(bob, "save_share")
    assert bob.share_user == "" and bob.share_error == ""
    alice_row = next(m for m in bob.members if m["username"] == "alice")
    assert alice_row["share"] == "1 × nvidia.com/gpu, 0.5 cores"
    run(bob, "open_share", "alice")
    assert [(r["resource"], r["amount"]) for r in bob.share_edit] == [("cpu", "500m"), (GPU, "1")]
    run(bob, "remove_share_row", 0)
    run(bob, "remove_share_row", 0)
    run(bob, "save_share")  # no rows: no per-member limit
    members = projects.get_project(console.ctx, console.admin, "vision").members
    assert next(m for m in members if m.username == "alice").share == {}


def test_new_job_form_passes_kind_preemptible_and_project(console):
    form = page(NewJobState, "alice", console, "http://localhost/jobs/new")
    run(form, "load")
    assert form.loaded and form.project_options == ["default", "vision"] and form.project == "default"
    assert form.kind == "batch" and not form.preemptible
    run(form, "set_project", "secret")  # not hers: ignored
    run(form, "set_kind", "daemon")
    assert form.project == "default" and form.kind == "batch"
    run(form, "set_project", "vision")
    run(form, "set_kind", "interactive")
    run(form, "set_preemptible", True)
    run(form, "set_gpus", "0")
    answer = run(form, "submit", {"name": "notebook", "command": "sleep\n30", "cpu": "1", "memory": "1Gi",
                                  "env": "", "max_runtime": "", "priority": "0"})
    assert form.error == "", form.error
    job_id = int(re.search(r"/jobs/(\d+)", str(answer)).group(1))  # the redirect to the new job
    job = jobs.get_job(console.ctx, console.alice, job_id)
    assert (job.project, job.kind, job.preemptible) == ("vision", "interactive", True)
    assert form.kind == "batch" and not form.preemptible and form.project == "default"  # the form starts again
    assert not form.loaded, "the next visit shows the form once its on_load has run"
    viewer = page(NewJobState, "gus", console, "http://localhost/jobs/new")  # a guest may submit nowhere
    run(viewer, "load")
    assert viewer.project_options == [] and viewer.project == ""
