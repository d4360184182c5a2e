"""The job page's replica keys, rows and which replica's log it shows (state.replica_views)."""

from __future__ import annotations

import pytest

from crater_app.schemas.replicas import ReplicaPublic
from crater_app.state.replica_views import (chosen_key, localized_rows, parse_key, replica_key, replica_row,
                                            shown_key)


@pytest.mark.parametrize(("key", "parsed"), [
    ("worker/1", ("worker", 1)),
    ("master/0", ("master", 0)),
    ("", (None, 0)),
    ("worker", (None, 0)),
    ("worker/", (None, 0)),
    ("/1", (None, 0)),
    ("worker/-1", (None, 0)),
    ("worker/1234567", (None, 0)),
])
def test_parse_key(key, parsed):
    assert parse_key(key) == parsed


def test_keys_round_trip():
    assert parse_key(replica_key("worker", 3)) == ("worker", 3)


ROWS = [{"key": "master/0"}, {"key": "worker/0"}, {"key": "worker/1"}]


@pytest.mark.parametrize(("rows", "current", "chosen"), [
    (ROWS, "", "master/0"),  # the first by default
    (ROWS, "worker/1", "worker/1"),  # kept while the job has it
    (ROWS, "worker/5", "master/0"),  # gone: the first again
    ([], "worker/1", ""),  # no replicas: the job's log
])
def test_chosen_key(rows, current, chosen):
    assert chosen_key(rows, current) == chosen


@pytest.mark.parametrize(("rows", "task", "replica", "shown"), [
    (ROWS, None, 0, "master/0"),
    (ROWS, "worker", 1, "worker/1"),
    ([], None, 0, ""),
])
def test_shown_key(rows, task, replica, shown):
    assert shown_key(rows, task, replica) == shown


def test_a_row_and_its_words_in_both_languages():
    row = replica_row(ReplicaPublic(task="worker", replica=1, phase="Failed", node="n1", devices=[2, 3], exit_code=137,
                                    reason="OOMKilled", message="out of memory", restarts=2))
    assert row == {"key": "worker/1", "task": "worker", "replica": "1", "phase": "Failed", "node": "n1",
                   "devices": "2, 3", "exit_code": "137", "reason": "OOMKilled", "message": "out of memory",
                   "restarts": "2"}
    en, = localized_rows("en", [row])
    zh, = localized_rows("zh-CN", [row])
    assert en["phase_text"] == "Failed" and zh["phase_text"] == "已失败"
    odd, = localized_rows("zh-CN", [{**row, "phase": "Terminating", "reason": "SomethingNew"}])
    assert odd["phase_text"] == "Terminating" and odd["reason_text"] == "SomethingNew", "the backend's own word"
