"""The console's and the API's words for why a job waits: hold sentences from ``reason_code``/``reason_args`` in
English and Simplified Chinese (``services.admission.reason_text``, ``state.messages.job_reason_text``)."""

from __future__ import annotations

import json

from crater_app import i18n
from crater_app.services.admission import TRANSLATED_CODES, reason_text
from crater_app.state import messages

QUOTA_ARGS = {"project": "lab", "position": 2, "held": 3, "resource": "nvidia.com/gpu",
              "limit": "8 × nvidia.com/gpu", "used": "7 × nvidia.com/gpu", "request": "2 × nvidia.com/gpu",
              "jobs": 4, "users": 2}
SENTENCE = "Held by the quota of project lab: ..."


def test_english_keeps_the_stored_sentence_and_chinese_fills_the_template():
    assert reason_text("en", "quota", QUOTA_ARGS, SENTENCE) == SENTENCE
    zh = reason_text("zh-CN", "quota", QUOTA_ARGS, SENTENCE)
    assert zh == ("受项目 lab 的配额限制而挂起：其上限为 8 × nvidia.com/gpu，2 位用户的 4 个作业正在使用 7 × nvidia.com/gpu，"
                  "本作业申请 2 × nvidia.com/gpu。在该项目的等待队列中排第 2 位（共 3 个）。")


def test_queue_blocker_is_translated_and_bad_args_fall_back_to_the_sentence():
    args = {"project": "lab", "position": 2, "held": 2, "ahead": 1, "blocker": "capacity"}
    assert "（集群容量）" in reason_text("zh-CN", "queue", args, "Waiting in the queue")
    assert reason_text("zh-CN", "quota", {"project": "lab"}, SENTENCE) == SENTENCE
    assert reason_text("zh-CN", "", {}, "waiting for placement") == "waiting for placement"


def test_every_code_has_a_template_in_both_languages():
    for code in TRANSLATED_CODES:
        assert f"hold.{code}" in i18n.messages("en") and f"hold.{code}" in i18n.messages("zh-CN"), code


def test_console_rows_use_the_hold_sentence_or_the_backend_sentence():
    held = {"reason": SENTENCE, "reason_code": "quota", "reason_args": json.dumps(QUOTA_ARGS)}
    assert messages.job_reason_text("zh-CN", held).startswith("受项目 lab 的配额限制")
    assert messages.job_reason_text("en", held) == SENTENCE
    queued = {"reason": "waiting for 2 × nvidia.com/gpu; 1 free", "reason_code": "", "reason_args": "{}"}
    assert messages.job_reason_text("zh-CN", queued) == queued["reason"]  # no code: the backend's text as stored
    assert messages.job_reason_text("zh-CN", {"reason": "x", "reason_code": "quota", "reason_args": "not json"}) == "x"
