"""A job's reason in English and Simplified Chinese from its code and arguments (``services.job_reasons``, which the
API and the console call): admission's holds, the backend's placement reasons, Crater's stop reasons; estimates
counted from the time of reading; rows without a code (or with arguments of an older shape) as stored."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from crater_app import i18n
from crater_app.services.job_events import event_text
from crater_app.services.job_reasons import HOLD_CODES, fresh, reason_text
from crater_app.state import messages

GPU = "nvidia.com/gpu"
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
IN_14 = (NOW + timedelta(minutes=14)).isoformat()
QUOTA_ARGS = {"project": "lab", "position": 2, "held": 3, "resource": GPU, "limit": {GPU: 8}, "used": {GPU: 7},
              "request": {GPU: 2}, "jobs": 4, "users": 2, "expected_at": IN_14}
QUEUE_ARGS = {"project": "lab", "position": 2, "held": 3, "ahead": 1, "blocker": "quota", "blocker_id": 26,
              "blocker_request": {GPU: 2}, "expected_at": IN_14}

CASES = [
    pytest.param("quota", QUOTA_ARGS,
                 "Held by the quota of project lab: its capability is 8 × nvidia.com/gpu, 7 × nvidia.com/gpu in use "
                 "by 4 jobs of 2 users, and this job asks for 2 × nvidia.com/gpu. Position 2 of 3 held in the "
                 "project. Expected start within 14m.",
                 "受项目 lab 的配额限制而挂起：其上限为 8 × nvidia.com/gpu，2 位用户的 4 个作业正在使用 7 × nvidia.com/gpu，"
                 "本作业申请 2 × nvidia.com/gpu。在该项目的等待队列中排第 2 位（共 3 个）。预计 14分钟内启动。", id="quota"),
    pytest.param("queue", QUEUE_ARGS,
                 "Position 2 of 3 in the queue of project lab: behind job #26 (2 × nvidia.com/gpu), held by the "
                 "project quota; a later job starts first only when it cannot delay that one. Expected start within "
                 "14m.",
                 "在项目 lab 的队列中排第 2 位（共 3 个）：在作业 #26（2 × nvidia.com/gpu，因项目配额挂起）之后；后面的作业"
                 "只有在不会推迟它时才能先启动。预计 14分钟内启动。", id="queue-position"),
    pytest.param("queue", {**QUEUE_ARGS, "expected_at": None},
                 "Position 2 of 3 in the queue of project lab: behind job #26 (2 × nvidia.com/gpu), held by the "
                 "project quota; a later job starts first only when it cannot delay that one. No estimate of its "
                 "start: the jobs it waits for set no max_runtime.",
                 "在项目 lab 的队列中排第 2 位（共 3 个）：在作业 #26（2 × nvidia.com/gpu，因项目配额挂起）之后；后面的作业"
                 "只有在不会推迟它时才能先启动。无法估计启动时间：它所等待的作业未设置 max_runtime。", id="queue-no-estimate"),
    pytest.param("placement.queued", {"position": 2, "blocker": "#26", "blocker_request": {GPU: 2},
                                      "expected_at": IN_14, "wait": 60},
                 "position 2: behind job #26 (2 × nvidia.com/gpu), expected start within 14m",
                 "排第 2 位：在作业 #26（2 × nvidia.com/gpu）之后，预计 14分钟内启动", id="placement-queued"),
    pytest.param("placement.waiting", {"request": {"cpu": 4000}, "free": {"cpu": 1500}, "expected_at": IN_14},
                 "waiting for 4 cores; 1.5 cores free; expected start within 14m",
                 "等待 4 核 CPU；当前空闲 1.5 核 CPU；预计 14分钟内启动", id="placement-waiting-cpu"),
    pytest.param("job.stopping_cancelled", {"user": "alice"}, "stopping: cancelled by alice",
                 "正在停止：已被 alice 取消", id="stopping"),
    pytest.param("requeued", {"previous": 1, "attempt": 2, "max_attempts": 5, "beneficiary_project": "vision"},
                 "Preempted on attempt 1 for project vision; back in the queue for attempt 2 of at most 5, it starts "
                 "again when room appears.",
                 "在第 1 次运行时因项目 vision 被抢占；已回到队列等待第 2 次运行（最多 5 次），有空闲资源时将再次启动。",
                 id="requeued"),
]


@pytest.mark.parametrize(("code", "args", "english", "chinese"), CASES)
def test_reasons_render_from_their_code_in_both_languages(code, args, english, chinese):
    assert reason_text("en", code, args, "stored", now=NOW) == english
    assert reason_text("zh-CN", code, args, "stored", now=NOW) == chinese


def test_the_estimate_is_counted_from_the_time_of_reading():
    later = NOW + timedelta(minutes=10)
    assert reason_text("en", "queue", QUEUE_ARGS, "", now=later).endswith("Expected start within 4m.")
    assert reason_text("en", "queue", QUEUE_ARGS, "", now=NOW + timedelta(hours=1)).endswith("within 1m."), (
        "overdue: any moment, never a negative wait")
    assert fresh({"expected_at": "not a time"}, NOW) == {"expected_at": "not a time"}


def test_what_cannot_be_rendered_stays_as_stored():
    assert reason_text("zh-CN", "", {}, "exited with code 3") == "exited with code 3"
    assert reason_text("zh-CN", "backend.own_code", {"x": 1}, "the backend's words") == "the backend's words"
    assert reason_text("zh-CN", "quota", {"project": "lab"}, "old sentence") == "old sentence"
    # Rows written before amounts were resource lists: their preformatted amounts still read.
    old = {**QUOTA_ARGS, "limit": "8 × nvidia.com/gpu", "used": "7 × nvidia.com/gpu", "request": "2 × nvidia.com/gpu"}
    assert "其上限为 8 × nvidia.com/gpu" in reason_text("zh-CN", "quota", old, "", now=NOW)


def test_every_hold_code_has_a_template_in_both_languages():
    for code in HOLD_CODES:
        assert f"hold.{code}" in i18n.messages("en") and f"hold.{code}" in i18n.messages("zh-CN"), code


def test_a_held_event_reads_as_the_reason_did_when_it_was_written():
    args = {**QUEUE_ARGS, "wait": 14 * 60}
    assert event_text("zh-CN", "hold.queue", args, "English").endswith("预计 14分钟内启动。")
    assert event_text("en", "hold.queue", {**args, "expected_at": "2000-01-01T00:00:00+00:00"}, "x").endswith(
        "within 14m."), "an event keeps the estimate it had"


def test_console_rows_use_the_same_rendering():
    held = {"reason": "stored", "reason_code": "queue", "reason_args": json.dumps(QUEUE_ARGS)}
    assert messages.job_reason_text("zh-CN", held).startswith("在项目 lab 的队列中排第 2 位")
    queued = {"reason": "waiting for 2 × nvidia.com/gpu; 1 free", "reason_code": "", "reason_args": "{}"}
    assert messages.job_reason_text("zh-CN", queued) == queued["reason"]  # no code: the backend's text as stored
    assert messages.job_reason_text("zh-CN", {"reason": "x", "reason_code": "quota", "reason_args": "not json"}) == "x"
