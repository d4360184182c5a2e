"""Console pages; :func:`register` adds them all to the app."""

from __future__ import annotations

import reflex as rx

from crater_app.state import (
    AccountState, AdminUsersState, ApprovalsState, JobDetailState, JobsState, LoginState, NewJobState, NodesState,
    OperationLogState, ProjectDetailState, ProjectsState, TokensState, UsageState,
)
from crater_app.ui.pages.account import account_page
from crater_app.ui.pages.admin_users import admin_users_page
from crater_app.ui.pages.approvals import approvals_page
from crater_app.ui.pages.job_detail import job_detail_page
from crater_app.ui.pages.job_new import new_job_page
from crater_app.ui.pages.jobs import jobs_page
from crater_app.ui.pages.login import login
from crater_app.ui.pages.nodes import nodes_page
from crater_app.ui.pages.not_found import not_found_page
from crater_app.ui.pages.operation_log import operation_log_page
from crater_app.ui.pages.project_detail import project_detail_page
from crater_app.ui.pages.projects import projects_page
from crater_app.ui.pages.tokens import tokens_page
from crater_app.ui.pages.usage import usage_page

TITLE = "Crater"


def index() -> rx.Component:
    """``/``: sends the browser on to the jobs list (which sends it to /login when signed out)."""
    return rx.center(rx.spinner(size="3"), min_height="100vh")


def register(app: rx.App) -> None:
    """Add every console page to ``app``."""
    app.add_page(index, route="/", title=TITLE, on_load=rx.redirect("/jobs"))
    app.add_page(login, route="/login", title=TITLE, on_load=LoginState.load)
    app.add_page(jobs_page, route="/jobs", title=TITLE, on_load=JobsState.load)
    app.add_page(new_job_page, route="/jobs/new", title=TITLE, on_load=NewJobState.load)
    app.add_page(job_detail_page, route="/jobs/[id]", title=TITLE, on_load=JobDetailState.load)
    app.add_page(nodes_page, route="/nodes", title=TITLE, on_load=NodesState.load)
    app.add_page(approvals_page, route="/approvals", title=TITLE, on_load=ApprovalsState.load)
    app.add_page(admin_users_page, route="/admin/users", title=TITLE, on_load=AdminUsersState.load)
    app.add_page(projects_page, route="/projects", title=TITLE, on_load=ProjectsState.load)
    app.add_page(project_detail_page, route="/projects/[project_name]", title=TITLE, on_load=ProjectDetailState.load)
    app.add_page(tokens_page, route="/tokens", title=TITLE, on_load=TokensState.load)
    app.add_page(account_page, route="/account", title=TITLE, on_load=AccountState.load)
    app.add_page(operation_log_page, route="/admin/operation-logs", title=TITLE, on_load=OperationLogState.load)
    app.add_page(usage_page, route="/usage", title=TITLE, on_load=UsageState.load)
    # Reflex's custom 404 page: the "404" route is what unknown paths render (App._prepare_page in reflex/app.py).
    app.add_page(not_found_page, route="404", title=f"404 · {TITLE}")
