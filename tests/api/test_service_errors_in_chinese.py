"""The errors of the governance services (projects and members, quotas, approvals, usage, billing, the operation
log, notifications) come in Simplified Chinese with ``Accept-Language: zh-CN``, in English without it, with the same
``code``, ``field`` and ``args`` either way; and nothing is written. Notifications read in the request's language
too."""

from __future__ import annotations

import re

import pytest
from sqlmodel import func, select

from crater_app.db.models import OperationLog
from crater_app.services import projects
from tests.api.conftest import assert_error

ZH = {"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def _logged(api) -> int:
    with api.world.ctx.session(read_only=True) as s:
        return s.exec(select(func.count()).select_from(OperationLog)).one()


def both(api, method: str, path: str, who: str, status: str | int, code: str, field: str | None, json=None,
         zh_words: tuple[str, ...] = (), en_words: tuple[str, ...] = ()) -> dict:
    """The request in English and in Chinese: the same error (status, code, field, args), the message in each
    language; no operation-log row written."""
    before = _logged(api)
    headers = api.auth(who)
    en = api.client.request(method, path, json=json, headers=headers)
    zh = api.client.request(method, path, json=json, headers={**headers, **ZH})
    en_error = assert_error(en, int(status), None, field, *en_words, code=code)
    zh_error = assert_error(zh, int(status), None, field, *zh_words, code=code)
    assert (zh_error["args"], zh_error["kind"]) == (en_error["args"], en_error["kind"])
    assert CJK.search(zh_error["message"]) and not CJK.search(en_error["message"]), (en_error, zh_error)
    assert _logged(api) == before
    return zh_error


@pytest.fixture
def lab(api):
    projects.create_project(api.world.ctx, api.world.admin, "lab")
    projects.set_member(api.world.ctx, api.world.admin, "lab", "alice", "admin")
    return api


def test_adding_an_unknown_user_reads_in_chinese(lab):
    error = both(lab, "PUT", "/api/v1/projects/lab/members/nosuchuser", "alice", 404, "project.unknown_user",
                 "username", {"role": "member"}, ("用户“nosuchuser”不存在",), ("User 'nosuchuser' does not exist.",))
    assert error["args"] == {"name": "nosuchuser"}


def test_quota_errors_read_in_chinese(lab):
    order = {"guarantee": {"nvidia.com/gpu": 4}, "capability": {"nvidia.com/gpu": 2}}
    error = both(lab, "PUT", "/api/v1/projects/lab/quota", "admin", 422, "quota.order", "guarantee.nvidia.com/gpu",
                 order, ("不能超过", "4 × nvidia.com/gpu"), ("must not exceed",))
    assert error["args"]["low_amount"] == {"nvidia.com/gpu": 4}
    both(lab, "PUT", "/api/v1/projects/lab/quota", "admin", 422, "resources.quantity_format", "capability.cpu",
         {"capability": {"cpu": "lots"}}, ("不是 Kubernetes 数量",), ("is not a Kubernetes quantity",))
    both(lab, "PUT", "/api/v1/projects/lab/quota", "alice", 403, "quota.set_forbidden", None,
         {"capability": {"cpu": "4"}}, ("只有平台管理员",), ("only platform admins",))
    memory = both(lab, "PUT", "/api/v1/projects/lab/quota", "admin", 422, "quota.order", "guarantee.memory",
                  {"guarantee": {"memory": "2Gi"}, "capability": {"memory": "1Gi"}}, ("2 GiB 内存",), ("2 GiB memory",))
    assert memory["args"]["high_amount"] == {"memory": 2**30}


def test_share_over_the_capability_reads_in_chinese(lab):
    lab.client.put("/api/v1/projects/lab/quota", json={"capability": {"cpu": "8"}}, headers=lab.auth("admin"))
    both(lab, "PUT", "/api/v1/projects/lab/members/alice", "alice", 422, "quota.share_over_capability", "share.cpu",
         {"share": {"cpu": "16"}}, ("不能超过项目“lab”的上限", "16 核"), ("16 cores",))


def test_project_and_approval_errors_read_in_chinese(lab):
    both(lab, "POST", "/api/v1/projects", "admin", 422, "project.expiry_past", "expires_at",
         {"name": "old", "expires_at": "2001-01-01T00:00:00Z"}, ("已经过去",), ("is in the past",))
    both(lab, "POST", "/api/v1/projects", "alice", 403, "project.create_forbidden", None, {"name": "mine"},
         ("只有平台管理员可以创建项目",))
    both(lab, "POST", "/api/v1/approvals", "alice", 422, "approval.reason_required", "reason",
         {"kind": "quota", "project": "lab", "payload": {"capability": {"cpu": "8"}}}, ("必须填写理由",))
    both(lab, "POST", "/api/v1/approvals", "alice", 422, "approval.quota_payload_key", "payload.ceiling",
         {"kind": "quota", "project": "lab", "reason": "r", "payload": {"ceiling": {"cpu": "8"}}},
         ("未知的键“ceiling”", "guarantee、deserved 或 capability"))
    both(lab, "GET", "/api/v1/approvals?status=maybe", "alice", 422, "approval.status", "status",
         zh_words=("status 必须是",))


def test_usage_billing_oplog_and_notification_errors_read_in_chinese(lab):
    both(lab, "GET", "/api/v1/usage?group_by=colour", "alice", 422, "usage.choice", "group_by",
         zh_words=("user、project 或 model",), en_words=("user, project or model",))
    both(lab, "GET", "/api/v1/usage?from=2026-01-01T00:00:00", "alice", 422, "time.no_offset", "from",
         zh_words=("必须带 UTC 偏移",))
    both(lab, "PUT", "/api/v1/billing/prices", "admin", 422, "billing.price_resource", "prices[0].resource",
         [{"resource": "gpu", "points_per_hour": 1}], ("prices[0].resource 必须是",))
    both(lab, "GET", "/api/v1/operation-logs?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", "admin", 422,
         "oplog.filter_range", "from", zh_words=("晚于结束时间",))
    both(lab, "GET", "/api/v1/operation-logs", "alice", 403, "oplog.read_forbidden", None,
         zh_words=("只有平台管理员可以查看操作日志",))
    both(lab, "POST", "/api/v1/notifications/read", "alice", 422, "notification.ids", "ids", {"ids": ["x"]},
         zh_words=("ids 必须是通知编号",))


def test_notifications_read_in_the_requests_language(lab):
    from crater_app.services import approvals, jobs

    job = jobs.submit_job(lab.world.ctx, lab.world.alice, {"name": "long", "command": ["sleep", "600"],
                                                           "max_runtime": 3600})
    asked = approvals.create_request(lab.world.ctx, lab.world.alice, "reclaim_lock", "a week-long run", job_id=job.id)
    approvals.reject(lab.world.ctx, lab.world.admin, asked.id, "not now")
    en = lab.client.get("/api/v1/notifications", headers=lab.auth("alice")).json()["items"][0]
    zh = lab.client.get("/api/v1/notifications", headers={**lab.auth("alice"), **ZH}).json()["items"][0]
    assert en["message"] == (f"Your request #{asked.id} (Reclaim lock) for job long (#{job.id}) was rejected by admin: "
                             "not now.")
    assert zh["message"] == f"你针对作业 long（#{job.id}）的申请 #{asked.id}（免回收锁定）已由 admin 驳回：not now。"
    assert zh["kind"] == en["kind"] == "approval.rejected" and zh["args"] == en["args"]
    jobs.cancel_job(lab.world.ctx, lab.world.alice, job.id)
