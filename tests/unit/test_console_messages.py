"""The console's rendering of service events (crater_app/state/messages.py): reason words and messages from their
codes in the viewer's language; a message without a code (a row written before codes existed, a backend's own
text) is shown exactly as stored."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from crater_app import i18n
from crater_app.schemas import JobEventPublic
from crater_app.services.approvals import notices
from crater_app.services.job_events import event_row, event_text
from crater_app.state import messages, views
from crater_app.state.messages import reason_text

ZH = "zh-CN"
AT = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


def _timeline(*rows: dict) -> list[dict[str, str]]:
    """Event rows as the console holds them: from the rows ``event_row`` builds, through the API's shape."""
    return [views.event_row(JobEventPublic(id=i, **{k: v for k, v in row.items() if k != "job_id"}))
            for i, row in enumerate(rows, start=1)]


def test_an_event_with_a_code_reads_in_the_viewers_language():
    row = event_row(7, "Running", "RuntimeExtended", "approval.runtime_extended",
                    {"before": 3600, "after": 5400, "by": "pat", "via": notices.via(12, "go ahead")}, at=AT)
    assert row["message"] == "max_runtime extended from 1h to 1h 30m by pat (approval #12: go ahead)"
    shown_en, = messages.event_rows("en", _timeline(row))
    shown_zh, = messages.event_rows(ZH, _timeline(row))
    assert shown_en["message_text"] == row["message"]
    assert shown_zh["message_text"] == "最长运行时间由 pat 从 1小时 延长到 1小时30分钟（审批 #12：go ahead）"
    assert (shown_zh["reason"], shown_zh["reason_text"]) == ("RuntimeExtended", "运行时间已延长")


def test_nested_messages_and_durations_follow_the_language():
    row = event_row(7, "Running", "RuntimeExtended", "approval.runtime_extended",
                    {"before": None, "after": 90, "by": notices.by_whom(None), "via": notices.via(3, "")}, at=AT)
    assert row["message"] == "max_runtime extended from none to 1m 30s by the auto-approval rule (approval #3)"
    assert event_text(ZH, row["code"], row["args"]) == "最长运行时间由 自动批准规则 从 无 延长到 1分钟30秒（审批 #3）"


@pytest.mark.parametrize("message", [
    "exited with code 3",                                       # a row written before codes existed
    "backend reports state 'Weird' (X): y",                     # a backend's own text, kept verbatim
    "the job could not be started: ValueError: {x} <script>",   # braces and markup stay as written
    "",
])
def test_an_event_without_a_code_shows_its_stored_text(message):
    row = event_row(7, "Failed", "Error", message=message, at=AT)
    assert row["code"] == "" and row["message"] == message
    for lang in ("en", ZH):
        shown, = messages.event_rows(lang, _timeline(row))
        assert shown["message_text"] == message


def test_arguments_are_not_formatted_again():
    """User data inside arguments (a decider's note with braces) is written as given, in both languages."""
    row = event_row(7, "Held", "Approved", "approval.large_job_approved",
                    {"gpus": 16, "by": "{admin}", "via": notices.via(4, "use {x} and {{y}}")}, at=AT)
    assert row["message"] == "approved to run with 16 accelerators by {admin} (approval #4: use {x} and {{y}})"
    assert "use {x} and {{y}}" in event_text(ZH, row["code"], row["args"])


def test_arguments_that_do_not_fit_fall_back_to_the_stored_text():
    assert event_text(ZH, "approval.runtime_extended", {"before": 1}, "as stored") == "as stored"
    assert event_text(ZH, "no.such.code", {}, "as stored") == "as stored"


def test_reason_words():
    assert reason_text(ZH, "Completed") == "已完成"
    assert reason_text(ZH, "CancelRequested") == "已请求取消"
    assert reason_text("en", "CancelRequested") == "Cancel requested"
    assert reason_text("en", "Completed") == "Completed"
    assert reason_text(ZH, "SomethingNew") == "SomethingNew"
    assert reason_text(ZH, "") == ""
    assert reason_text(ZH, "reason.Completed") == "reason.Completed"


def test_every_reason_the_services_write_has_a_word_in_both_languages():
    """Every literal event reason in the services and the cluster backend has a ``reason.<Word>`` key."""
    root = Path(messages.__file__).resolve().parents[1]
    written = set()
    for folder in ("services", "cluster"):
        for path in (root / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            written |= set(re.findall(r"""\breason="([A-Z][A-Za-z]+)\"""", text))
            # event_row(job_id, phase, "Reason", ...) and ("Submitted", f"submitted by ...") pairs of an event list
            written |= set(re.findall(r"""event_row\([^,()]+,\s*[^,()]+,\s*"([A-Z][A-Za-z]+)\"""", text))
            if "kube" not in path.parts:  # the Kubernetes modules' tuples are API words (PodEvicted, Always)
                written |= set(re.findall(r"""\(\s*"([A-Z][a-z]+[A-Z]?[A-Za-z]*)",\s*f?["'(]""", text))
    assert {"RuntimeExtended", "Approved", "Rejected", "Started"} <= written, "the scan found too few reasons"
    for lang in i18n.LANGUAGES:
        table = i18n.messages(lang)
        assert sorted(r for r in written if f"reason.{r}" not in table) == [], lang
