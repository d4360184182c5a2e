"""Console helpers of /approvals and the bell (pure): form text -> request arguments, rows, notification texts
in both languages, and the translation keys the page looks up through tables."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from crater_app import i18n
from crater_app.schemas import ApprovalPublic, NotificationPublic
from crater_app.services import approvals, notifications
from crater_app.state import approvals as console
from crater_app.state import notifications as console_bell
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


def test_a_reason_crater_wrote_is_read_in_the_consoles_language_and_a_requesters_own_as_written():
    large = console.approval_row(_approval(
        kind="large_job", payload={"accelerators": 10, "threshold": 8}, current={"phase": "Held", "gpus": 10},
        reason="job 'train' asks for 10 accelerators, more than the 8 a job may use without an administrator's "
               "approval", reason_code="approval.large_job",
        reason_args={"job": "train", "accelerators": 10, "threshold": 8}))
    assert console.row_texts("en", large)["reason"] == large["reason"]
    assert console.row_texts("zh-CN", large)["reason"] == "作业“train”申请 10 个加速器，超过了无需管理员审批即可使用的 8 个"
    own = console.approval_row(_approval(reason="the run needs longer"))
    assert console.row_texts("zh-CN", own)["reason"] == "the run needs longer"


def _approval(**fields) -> ApprovalPublic:
    base = dict(id=3, kind="extend_runtime", status="pending", requester="alice", project="proj", job_id=9,
                job_name="train", payload={"max_runtime": 86400}, current={"max_runtime": 3600}, reason="r",
                auto=False, decided_by=None, decision_note="", created_at=AT, decided_at=None, can_decide=True)
    base.update(fields)
    return ApprovalPublic(**base)


def test_approval_row_and_its_texts_in_both_languages():
    row = console.approval_row(_approval())
    assert (row["target"], row["can_decide"], row["created"]) == ("train #9", "1", "2026-11-30 12:00:00")
    assert console.row_texts("en", row)["value"] == "1h → 1d"
    assert console.row_texts("zh-CN", row)["value"] == "1小时 → 1天"
    assert console.row_texts("zh-CN", row)["kind_text"] == i18n.translate("zh-CN", "approvals.kind.extend_runtime")
    quota = console.approval_row(_approval(kind="quota", job_id=None, job_name=None, can_decide=False,
                                           payload={"capability": {"nvidia.com/gpu": 8}}))
    assert (quota["target"], quota["job_id"], quota["can_decide"]) == ("proj", "", "")
    assert console.row_texts("en", quota)["value"] == "Capability: nvidia.com/gpu=8"
    assert console.row_texts("zh-CN", quota)["value"] == "上限: nvidia.com/gpu=8"


def test_decision_notes_crater_wrote_render_per_language_and_a_deciders_note_stays():
    closed = console.approval_row(_approval(status="closed", decision_code="approval.closed", decision_note="x",
                                            decision_args={"why": i18n.part("approval.why.job_ended", job_id=3,
                                                                            job_name="train", phase="Succeeded")}))
    assert console.row_texts("en", closed)["note"] == "closed: job train (#3) is Succeeded"
    assert console.row_texts("zh-CN", closed)["note"] == "已关闭：作业 train（#3）的状态为“已成功”"
    auto = console.approval_row(_approval(status="approved", auto=True, decision_code="approval.auto_approved",
                                          decision_args={"max_s": 12 * 3600, "window_s": 48 * 3600}))
    assert console.row_texts("en", auto)["note"] == (
        "approved automatically: an extension under 12h, at most once per 2d per user")
    assert console.row_texts("zh-CN", auto)["note"] == "已自动批准：延长不足 12小时，每位用户每 2天 至多一次"
    own = console.approval_row(_approval(status="rejected", decision_note="the cluster is busy this week"))
    assert console.row_texts("zh-CN", own)["note"] == "the cluster is busy this week"


def _notification(code: str, **args) -> NotificationPublic:
    """A notification as services.notifications.row writes it (the English message rendered from the code)."""
    return NotificationPublic(id=1, at=AT, kind=code, read=False, args=args,
                              message=notifications.text("en", code, args))


def test_notification_text_in_both_languages():
    target = approvals.job_target(9, "train")
    rejected = _notification("approval.rejected", id=3, kind="reclaim_lock", target=target,
                             by=i18n.part("approval.by_user", name="pat"),
                             note=i18n.part("approval.note_suffix", note="not now"))
    assert console_bell.notification_text("en", rejected) == (
        "Your request #3 (Reclaim lock) for job train (#9) was rejected by pat: not now.")
    assert console_bell.notification_text("zh-CN", rejected) == (
        "你针对作业 train（#9）的申请 #3（免回收锁定）已由 pat 驳回：not now。")
    auto = _notification("approval.approved", id=4, kind="extend_runtime", target=approvals.job_target(1, "a"),
                         by=i18n.part("approval.by_rule_suffix"), note="")
    assert console_bell.notification_text("en", auto) == (
        "Your request #4 (Longer run time) for job a (#1) was approved by the auto-approval rule.")
    asked = _notification("approval.requested", id=5, kind="quota", target=approvals.project_target("proj"),
                          by="alice", reason="a deadline")
    assert console_bell.notification_text("en", asked) == (
        "alice asks for approval: More project quota for project proj (request #5): a deadline")
    assert console_bell.notification_text("zh-CN", asked) == "alice 申请审批：项目 proj，增加项目配额（申请 #5）：a deadline"
    closed = _notification("approval.closed", id=6, kind="extend_runtime", target=approvals.job_target(2, "b"),
                           why=i18n.part("approval.why.job_gone", job_id=2))
    assert console_bell.notification_text("zh-CN", closed) == (
        "你针对作业 b（#2）的申请 #6（延长运行时间）已关闭：作业 #2 已不存在。")
    # A row of an older version, whose arguments do not fit the template: its stored English sentence.
    old = NotificationPublic(id=3, at=AT, kind="approval.closed", read=False, message="as written",
                             args={"id": 1, "kind": "quota", "target": "project p"})
    assert console_bell.notification_text("zh-CN", old) == "as written"


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_table_keys_exist(lang):
    table = i18n.messages(lang)
    keys = [*console.KIND_KEYS.values(), *console.STATUS_KEYS.values(), *console.SECTION_KEYS.values(),
            "approvals.created", "approvals.created.auto", "approvals.decided.approved", "approvals.decided.rejected",
            "approvals.error.job_id", "approvals.error.resource_entry", "approvals.error.resources_required",
            *(f"notify.approval.{kind}" for kind in ("requested", "approved", "rejected", "closed"))]
    assert [k for k in keys if k not in table] == []
