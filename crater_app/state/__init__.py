"""Reflex state for the console (thin: one service call per handler; plain values only)."""

from crater_app.state.account import AccountState
from crater_app.state.admin import AdminUsersState
from crater_app.state.approvals import ApprovalsState
from crater_app.state.auth import LoginState
from crater_app.state.base import AppState
from crater_app.state.job_detail import JobDetailState
from crater_app.state.job_new import NewJobState
from crater_app.state.jobs import JobsState
from crater_app.state.nodes import NodesState
from crater_app.state.notifications import NotificationsState
from crater_app.state.oplog import OperationLogState
from crater_app.state.projects import ProjectDetailState, ProjectsState
from crater_app.state.tokens import TokensState
from crater_app.state.usage import UsageState

__all__ = [
    "AccountState", "AppState", "AdminUsersState", "ApprovalsState", "NotificationsState", "JobDetailState", "JobsState",
    "LoginState", "NewJobState", "NodesState", "OperationLogState", "ProjectDetailState", "ProjectsState",
    "TokensState", "UsageState",
]
