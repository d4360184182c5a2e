"""The API's public shapes (``*Public``, pages): what services return and what routes and console state import.

They are not tables (those are in :mod:`crater_app.db.models`); one module per noun, all re-exported here.
"""

from crater_app.schemas.accounts import UserPublic, UserDetail, TokenPublic, PersonalTokenPublic, PersonalTokenCreated
from crater_app.schemas.console_sessions import ConsoleSessionPublic, ConsoleSessionStarted, SessionsEnded
from crater_app.schemas.jobs import JobPublic, JobPage, JobEventPublic
from crater_app.schemas.nodes import DevicePublic, NodePublic
from crater_app.schemas.projects import ProjectMemberPublic, ProjectQuotaPublic, ProjectPublic
from crater_app.schemas.oplog import OperationLogPublic, OperationLogPage
from crater_app.schemas.approvals import ApprovalPublic, ApprovalPage, NotificationPublic, NotificationList
from crater_app.schemas.replicas import ManifestList, ReplicaPublic
from crater_app.schemas.usage import UsageRowPublic, UsagePublic, BillingPricePublic, ProjectBalancePublic, BalancePublic, PointGrantPublic, ProjectBillingPublic

__all__ = [
    "UserPublic",
    "UserDetail",
    "TokenPublic",
    "PersonalTokenPublic",
    "PersonalTokenCreated",
    "ConsoleSessionPublic",
    "ConsoleSessionStarted",
    "SessionsEnded",
    "JobPublic",
    "JobPage",
    "JobEventPublic",
    "ReplicaPublic",
    "ManifestList",
    "DevicePublic",
    "NodePublic",
    "ProjectMemberPublic",
    "ProjectQuotaPublic",
    "ProjectPublic",
    "OperationLogPublic",
    "OperationLogPage",
    "ApprovalPublic",
    "ApprovalPage",
    "NotificationPublic",
    "NotificationList",
    "UsageRowPublic",
    "UsagePublic",
    "BillingPricePublic",
    "ProjectBalancePublic",
    "BalancePublic",
    "PointGrantPublic",
    "ProjectBillingPublic",
]
