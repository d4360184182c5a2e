"""Console helpers of /approvals and the bell (pure): form text -> request arguments, rows, notification texts
in both languages, and the translation keys the page looks up through tables."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from crater_app import i18n
from crater_app.schemas import ApprovalPublic, NotificationPublic
from crater_app.state import approvals as console
from crater_app.state.forms import FormError

AT = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


def test_parse_resource_text():
    assert console.parse_resource_text("nvidia.com/gpu=8, cpu=64\nmemory: 512Gi") == {
        "nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi"}
    assert console.parse_resource_text("nvidia.com/gpu:NVIDIA-A100-SXM4-80GB: 4") == {
        "nvidia.com/gpu:NVIDIA-A100-SXM4-80GB": "4"}
    assert console.parse_resource_text("nvidia.com/gpu:A100=4") == {"nvidia.com/gpu:A100": "4"}
    for bad, key in (("", "approvals.error.resources_required"), (" , ", "approvals.error.resources_required"),
                     ("cpu", "approvals.error.resource_entry"), ("cpu=", "approvals.error.resource_entry")):
        with pytest.raises(FormError) as err:
            console.parse_resource_text(bad)
        assert err.value.key == key and err.value.field == "resources"


def test_request_arguments():
    assert console.request_arguments("extend_runtime", {"job_id": " #42 ", "max_runtime": " 24h", "reason": "r"},
                                     "proj", "capability") == {
        "kind": "extend_runtime", "reason": "r", "job_id": 42, "payload": {"max_runtime": "24h"}}
    assert console.request_arguments("reclaim_lock", {"job_id": "7", "reason": "r"}, "", "capability") == {
        "kind": "reclaim_lock", "reason": "r", "job_id": 7}
    assert console.request_arguments("quota", {"resources": "cpu=8", "reason": "r"}, "proj", "deserved") == {
        "kind": "quota", "reason": "r", "project": "proj", "payload": {"deserved": {"cpu": "8"}}}
    with pytest.raises(FormError) as err:
        console.request_arguments("reclaim_lock", {"job_id": "abc"}, "", "capability")
    assert err.value.field == "job_id"


def _approval(**fields) -> ApprovalPublic:
    base = dict(id=3, kind="extend_runtime", status="pending", requester="alice", project="proj", job_id=9,
                job_name="train", payload={"max_runtime": 86400}, current={"max_runtime": 3600}, reason="r",
                auto=False, decided_by=None, decision_note="", created_at=AT, decided_at=None, can_decide=True)
    base.update(fields)
    return ApprovalPublic(**base)


def test_approval_row():
    row = console.approval_row(_approval())
    assert (row["target"], row["value"], row["can_decide"], row["created"]) == (
        "train #9", "1h 0m → 1d 0h", "1", "2026-11-30 12:00:00")
    quota = console.approval_row(_approval(kind="quota", job_id=None, job_name=None, can_decide=False,
                                           payload={"capability": {"nvidia.com/gpu": 8}}))
    assert (quota["target"], quota["value"], quota["job_id"], quota["can_decide"]) == (
        "proj", "capability: nvidia.com/gpu=8", "", "")


def test_notification_text_in_both_languages():
    n = NotificationPublic(id=1, at=AT, kind="approval.rejected", read=False, message="English",
                           args={"id": 3, "kind": "reclaim_lock", "target": "job train (#9)", "by": "pat",
                                 "note": "not now"})
    assert console.notification_text("en", n) == (
        "Your request #3 (Reclaim lock) for job train (#9) was rejected by pat. Note: not now")
    assert console.notification_text("zh-CN", n) == (
        "你的申请 #3（免回收锁定，作业 train（#9））已被拒绝，审批人 pat。 备注：not now")
    auto = NotificationPublic(id=2, at=AT, kind="approval.approved", read=True, message="m",
                              args={"id": 4, "kind": "extend_runtime", "target": "job a (#1)", "by": "", "note": ""})
    assert console.notification_text("en", auto) == "Your request #4 (Longer run time) for job a (#1) was approved."
    asked = NotificationPublic(id=4, at=AT, kind="approval.requested", read=False, message="m",
                               args={"id": 5, "kind": "quota", "target": "project proj", "by": "alice", "note": ""})
    assert console.notification_text("en", asked) == (
        "alice asks for approval: More project quota, project proj (request #5).")
    assert console.notification_text("zh-CN", asked) == "alice 申请增加项目配额（项目 proj，申请 #5）。"
    other = NotificationPublic(id=3, at=AT, kind="job.preempted", read=False, message="as written", args={})
    assert console.notification_text("zh-CN", other) == "as written"


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_table_keys_exist(lang):
    table = i18n.messages(lang)
    keys = [*console.KIND_KEYS.values(), *console.STATUS_KEYS.values(), *console.SECTION_KEYS.values(),
            *console.NOTIFY_KEYS.values(), "approvals.created", "approvals.created.auto",
            "approvals.decided.approved", "approvals.decided.rejected", "notify.by", "notify.note",
            "approvals.error.job_id", "approvals.error.resource_entry", "approvals.error.resources_required"]
    assert [k for k in keys if k not in table] == []
