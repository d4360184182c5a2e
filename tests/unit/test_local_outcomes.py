"""cluster.local.outcomes: a workload's end as state, reason, code + args and exit status (that every code the local
backend emits or raises is in both catalogues is checked by tests/unit/test_message_codes.py)."""

from __future__ import annotations

import json

import pytest

from crater_app import i18n
from crater_app.cluster.local.outcomes import (Limits, cancelled, enforcement_text, finished, signal_name, started,
                                               stopping)
from crater_app.cluster.local.processes import ExitStatus

MiB = 1024**2
CGROUP = Limits({"cpu": 1000, "memory": 128 * MiB, "pids": 100},
                {"cpu": "cgroup v1", "memory": "cgroup v1", "pids": "cgroup v1"})
RLIMIT = Limits({"memory": 128 * MiB}, {"memory": "RLIMIT_DATA"})


@pytest.mark.parametrize(
    ("exit", "kwargs", "state", "reason", "code", "exit_code", "exit_signal", "message"),
    [
        (ExitStatus(0), {}, "Succeeded", "Completed", "local.exited", 0, None, "exited with code 0"),
        (ExitStatus(3), {}, "Failed", "Error", "local.exited", 3, None, "exited with code 3"),
        (ExitStatus(137), {}, "Failed", "Error", "local.exited", 137, None, "exited with code 137"),
        (ExitStatus(137, 9), {}, "Failed", "Signaled", "local.killed_by_signal", 137, 9,
         "killed by SIGKILL (exit code 137)"),
        (ExitStatus(143, 15), {}, "Failed", "Signaled", "local.killed_by_signal", 143, 15,
         "killed by SIGTERM (exit code 143)"),
        (ExitStatus(137, 9), {"oom_kills": 1, "limits": CGROUP}, "Failed", "OOMKilled", "local.oom_killed", 137, 9,
         "killed: used more than its memory limit of 128 MiB (exit code 137, cgroup v1)"),
        (ExitStatus(0), {"oom_kills": 1, "limits": CGROUP}, "Succeeded", "Completed", "local.exited", 0, None,
         "exited with code 0"),
        (ExitStatus(1), {"limits": RLIMIT}, "Failed", "Error", "local.exited_memory_rlimit", 1, None,
         "exited with code 1; its memory was limited to 128 MiB by RLIMIT_DATA, so an allocation past that fails"),
        (ExitStatus(143, 15), {"stop_reason": "Cancelled", "stop_text": "cancelled by alice", "stop_sent": True,
                               "stop_code": "job.cancelled_by", "stop_args": {"user": "alice"}},
         "Cancelled", "Cancelled", "job.cancelled_by", 143, 15, "cancelled by alice"),
        (ExitStatus(143, 15), {"stop_reason": "Cancelled", "stop_sent": True, "stop_code": "job.cancelled_by",
                               "stop_args": {"user": "alice"}},
         "Cancelled", "Cancelled", "job.cancelled_by", 143, 15, "cancelled by alice"),
        (ExitStatus(143, 15), {"stop_reason": "Cancelled", "stop_text": "make room", "stop_sent": True},
         "Cancelled", "Cancelled", "local.cancelled_because", 143, 15, "cancelled: make room"),
        (ExitStatus(0), {"stop_reason": "Cancelled", "stop_sent": True}, "Cancelled", "Cancelled", "local.cancelled",
         0, None, "cancelled"),
        (None, {"stop_reason": "Cancelled", "stop_text": "x", "stop_sent": True}, "Cancelled", "Cancelled",
         "local.cancelled_because", 137, 9, "cancelled: x"),
        (None, {"stop_reason": "Cancelled", "stop_text": "x", "stop_sent": True, "runner_signal": 15}, "Cancelled",
         "Cancelled", "local.cancelled_because", 143, 15, "cancelled: x"),
        (ExitStatus(143, 15), {"stop_reason": "DeadlineExceeded", "stop_sent": True, "max_runtime_s": 90}, "Failed",
         "DeadlineExceeded", "local.deadline_exceeded", 143, 15, "max_runtime of 1m 30s exceeded"),
        (None, {}, "Failed", "ProcessLost", "local.process_lost", None, None,
         "the job's process ended without recording an exit status"),
        (None, {"adopted": True}, "Failed", "ProcessLost", "local.process_lost_adopted", None, None,
         "the job's process ended while Crater was not running and left no exit status"),
    ],
)
def test_finished(exit, kwargs, state, reason, code, exit_code, exit_signal, message):
    outcome = finished(exit, **kwargs)
    assert (outcome.state, outcome.reason, outcome.message["code"]) == (state, reason, code)
    assert (outcome.exit_code, outcome.exit_signal) == (exit_code, exit_signal)
    assert outcome.message["message"] == message


def test_oom_message_in_chinese():
    outcome = finished(ExitStatus(137, 9), oom_kills=1, limits=CGROUP)
    args = json.loads(outcome.message["args"])
    assert args == {"limit": 128 * MiB, "exit_code": 137, "mechanism": "cgroup v1"}
    assert i18n.render("zh-CN", "event.local.oom_killed", args) == (
        "已终止：内存用量超过其限制 128 MiB（退出码 137，cgroup v1）")


@pytest.mark.parametrize(("number", "name"), [(9, "SIGKILL"), (15, "SIGTERM"), (11, "SIGSEGV"), (6, "SIGABRT"),
                                              (2, "SIGINT"), (200, "signal 200")])
def test_signal_name(number, name):
    assert signal_name(number) == name


def test_started_states_the_trust_model_and_the_limits():
    isolated = started("node1", (0, 1), "os-account", "crater-alice", 60514, CGROUP, isolated=True)
    assert isolated["code"] == "local.started_isolated_devices"
    assert isolated["message"] == (
        "started on node1 with devices 0,1 as OS user crater-alice (uid 60514), isolated from Crater's data and "
        "other users' jobs (trust model os-account); limits: 100 × pids, 1 core, 128 MiB memory "
        "(cgroup v1 (cpu, memory, pids))")
    shared = started("node1", (), "not-root", "crater", 1000, RLIMIT, isolated=False)
    assert shared["code"] == "local.started_shared"
    assert "not isolated" in shared["message"] and "trust model not-root" in shared["message"]
    assert shared["message"].endswith("limits: 128 MiB memory (RLIMIT_DATA (memory))")
    zh = i18n.render("zh-CN", "event.local.started_shared", json.loads(shared["args"]))
    assert "未隔离" in zh and "128 MiB 内存" in zh


def test_enforcement_text():
    assert enforcement_text({}) == "-"
    assert enforcement_text({"cpu": "cgroup v2", "memory": "RLIMIT_DATA", "pids": "cgroup v2"}) == (
        "cgroup v2 (cpu, pids), RLIMIT_DATA (memory)")


def test_stopping_messages():
    assert stopping("Cancelled", "cancelled by bob")["message"] == "stopping: cancelled by bob"
    assert stopping("DeadlineExceeded", max_runtime_s=3600)["message"] == "stopping: max_runtime of 1h exceeded"


def test_a_cancel_with_a_code_reads_in_chinese_while_stopping_and_once_cancelled():
    """A cancel reason given as a code keeps it: the Stopping status nests it, the Cancelled one is it."""
    columns = stopping("Cancelled", "cancelled by bob", code="job.cancelled_by", args={"user": "bob"})
    assert columns["message"] == "stopping: cancelled by bob"
    args = json.loads(columns["args"])
    assert i18n.render("zh-CN", f"event.{columns['code']}", args) == "正在停止：已被 bob 取消"
    final = finished(ExitStatus(143, 15), stop_reason="Cancelled", stop_text="cancelled by bob",
                     stop_code="job.cancelled_by", stop_args={"user": "bob"}, stop_sent=True)
    assert (final.message["code"], json.loads(final.message["args"])) == ("job.cancelled_by", {"user": "bob"})
    assert i18n.render("zh-CN", "event.job.cancelled_by", {"user": "bob"}) == "已被 bob 取消"


def test_a_cancel_without_a_code_still_has_one():
    assert cancelled("make room")["code"] == "local.cancelled_because"
    assert i18n.render("zh-CN", "event.local.cancelled_because", {"reason": "x"}) == "已取消：x"
    assert cancelled("")["code"] == "local.cancelled"


def test_limits_round_trip():
    limits = Limits({"memory": 5}, {"memory": "cgroup v2"}, {"version": 2, "folders": ["/x"], "memory": "/x"})
    assert Limits.from_json(limits.to_json()) == limits
    assert Limits.from_json("not json") == Limits() == Limits.from_json(None)
