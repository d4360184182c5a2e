"""Pure console helpers: the new-job form -> job spec, and service schemas -> state values."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from crater_app.schemas import DevicePublic, JobPublic, NodePublic
from crater_app.state import views
from crater_app.state.forms import FormError, build_spec, parse_command, parse_env

FORM = dict(name=" hello ", command="python3\n-c\nprint('a b')\n", command_mode="lines", env="", cpu="1",
            memory="2Gi", gpus="2", model="NVIDIA-A100-SXM4-80GB", resource="nvidia.com/gpu", max_runtime="",
            priority="0")


def test_lines_mode_keeps_each_line_verbatim():
    assert parse_command("python3\n-c\nprint('a b'); x = \"$HOME\"\n\n", "lines") == [
        "python3", "-c", "print('a b'); x = \"$HOME\""]


def test_shell_mode_splits_like_a_shell_but_expands_nothing():
    assert parse_command("python3 -c \"print('hi')\" $HOME; rm -rf /", "shell") == [
        "python3", "-c", "print('hi')", "$HOME;", "rm", "-rf", "/"]
    with pytest.raises(FormError) as err:
        parse_command("echo 'unbalanced", "shell")
    assert err.value.key == "form.error.command_quotes" and err.value.field == "command"
    with pytest.raises(FormError):
        parse_command(" \n ", "lines")


def test_env_lines():
    assert parse_env("A=1\n# comment\n\nB = x=y\nC=\n") == {"A": "1", "B": " x=y", "C": ""}
    with pytest.raises(FormError) as err:
        parse_env("A=1\nnot a pair")
    assert err.value.params == {"line": 2}


def test_build_spec():
    spec = build_spec(**FORM)
    assert spec == {"name": "hello", "command": ["python3", "-c", "print('a b')"],
                    "resources": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 2},
                    "accelerator_model": "NVIDIA-A100-SXM4-80GB", "priority": 0}
    cpu_only = build_spec(**{**FORM, "gpus": "0", "max_runtime": "2h", "env": "X=1"})
    assert cpu_only["resources"] == {"cpu": "1", "memory": "2Gi"} and "accelerator_model" not in cpu_only
    assert cpu_only["max_runtime"] == "2h" and cpu_only["env"] == {"X": "1"}
    with pytest.raises(FormError):
        build_spec(**{**FORM, "priority": "high"})


def _job(**over) -> JobPublic:
    now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    data = dict(id=7, uid="u", name="j", project="default", user="alice", image="local/host", command=["a"], env={},
                working_dir=None, phase="Succeeded", reason="exited with code 0", exit_code=0,
                resources={"cpu": "1", "nvidia.com/gpu": 2}, accelerator_model=None, gpus=2, devices=[0, 1],
                max_runtime=7200, priority=0, created_at=now, started_at=now,
                finished_at=now + timedelta(seconds=3725))
    data.update(over)
    return JobPublic(**data)


def test_views_format_jobs_and_nodes():
    row = views.job_row(_job())
    assert row["gpus"] == "2 × GPU" and row["runtime_s"] == "3725" and row["created"] == "2025-01-02 03:04:05"
    assert views.durations("en", row)["runtime"] == "1h 2m" and views.durations("zh-CN", row)["runtime"] == "1小时2分钟"
    assert views.durations("en", views.job_row(_job(started_at=None)), "—")["runtime"] == "—"
    detail = views.job_detail(_job(exit_code=None, resubmitted_from=3))
    assert detail["exit_code"] == "" and detail["devices"] == "0, 1" and detail["max_runtime_s"] == "7200"
    assert views.durations("en", detail)["max_runtime"] == "2h" and views.durations("zh-CN", detail)["max_runtime"] == (
        "2小时")
    assert detail["resubmitted_from"] == "3"
    devices = [DevicePublic(index=i, resource="nvidia.com/gpu", model="A100", memory_bytes=80 << 30, uuid=f"v{i}",
                            virtual=True, busy=i == 0, job_id=7 if i == 0 else None, job_name="j" if i == 0 else None,
                            user="alice" if i == 0 else None) for i in range(4)]
    node = NodePublic(name="n", backend="local", device_source="nvml", cpu_m=8000, memory_bytes=64 << 30,
                      cpu_m_allocated=2000, memory_bytes_allocated=16 << 30, devices=devices, models=["A100"])
    view = views.node_view(node)
    assert (view.cpu, view.cpu_percent, view.memory, view.gpus_busy) == ("8", 25, "64 GiB", 1)
    assert view.devices[0].job_id == "7" and view.devices[0].memory == "80 GiB" and not view.devices[1].held
    assert views.accelerator_choices([node]) == [{"model": "A100", "max": "4", "free": "3", "resource": "nvidia.com/gpu"}]


def test_jobs_list_query_from_and_to_the_url():
    from crater_app.state.jobs import ALL, list_url, parse_list_query

    assert parse_list_query({}) == (ALL, "", 1)
    assert parse_list_query({"phase": "Failed", "q": "  train ", "page": "3"}) == ("Failed", "train", 3)
    assert parse_list_query({"phase": "failed", "page": "0"}) == (ALL, "", 1)  # phases are case-sensitive
    assert parse_list_query({"phase": "all", "page": "-2", "q": "x" * 100}) == (ALL, "x" * 63, 1)
    assert parse_list_query({"page": "1e9"}) == (ALL, "", 1)
    assert parse_list_query({"page": "99999999999"}) == (ALL, "", 1)
    assert list_url(ALL, "", 1) == "/jobs"
    assert list_url("Failed", "", 1) == "/jobs?phase=Failed"
    assert list_url("Running", "a b&c=<d>", 2) == "/jobs?phase=Running&q=a+b%26c%3D%3Cd%3E&page=2"
    assert parse_list_query({"phase": "Running", "q": "a b&c=<d>", "page": "2"}) == ("Running", "a b&c=<d>", 2)


def test_turn_page_stays_within_the_pages_and_reloads_once():
    from types import SimpleNamespace

    from crater_app.state.base import turn_page
    from tests.helpers import run_handler

    loads: list[int] = []
    state = SimpleNamespace(page=1, page_count=2)

    async def fetch():
        loads.append(state.page)
        return "reloaded"

    assert run_handler(turn_page, state, -1, fetch) is None and state.page == 1  # no page 0
    assert run_handler(turn_page, state, 1, fetch) == "reloaded" and state.page == 2
    assert run_handler(turn_page, state, 1, fetch) is None and state.page == 2  # no page 3
    assert run_handler(turn_page, state, -1, fetch) == "reloaded" and state.page == 1
    assert loads == [2, 1]


def test_new_job_project_choices_follow_the_submit_rule():
    from crater_app.domain.policy import can_submit_as

    assert can_submit_as("admin", None) and can_submit_as("user", "member") and can_submit_as("user", "admin")
    assert not can_submit_as("user", "viewer") and not can_submit_as("user", None)
    assert not can_submit_as("guest", "member"), "a guest is read-only even as a project member"
