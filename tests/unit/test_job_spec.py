"""domain.jobs: validate_spec rejects every bad input with the field named, parse_duration, the phase machine."""

from __future__ import annotations

import pytest

from crater_app.domain import field_paths
from crater_app.domain.errors import InvalidInput
from crater_app.domain.jobs import (
    MAX_ARG_CHARS, MAX_COMMAND_ARGS, MAX_COMMAND_BYTES, MAX_RUNTIME_S, JobPhase, can_transition, parse_duration,
    validate_spec,
)


def good(**over) -> dict:
    raw = {"name": "train-1", "command": ["python", "train.py", "--epochs", "3"]}
    raw.update(over)
    return raw


def rejects(raw, field: str | None, *words: str) -> InvalidInput:
    with pytest.raises(InvalidInput) as info:
        validate_spec(raw)
    assert info.value.field == field, info.value.message
    for word in words:
        assert word in info.value.message, info.value.message
    assert info.value.http_status == 422
    return info.value


def test_a_full_spec_is_accepted_with_defaults():
    spec = validate_spec(good(
        project="vision", image="pytorch/pytorch:2.4.0-cuda12.1", env={"EPOCHS": "3", "_X1": ""},
        working_dir="runs/a", resources={"cpu": "500m", "memory": "4Gi", "nvidia.com/gpu": 2},
        accelerator_model="NVIDIA-A100-SXM4-80GB", max_runtime="1h30m", priority=5,
    ))
    assert spec.name == "train-1" and spec.project == "vision"
    assert spec.command == ["python", "train.py", "--epochs", "3"]
    assert spec.max_runtime == 5400 and spec.priority == 5
    assert spec.resource_list.gpus == 2 and spec.resource_list.cpu_m == 500
    minimal = validate_spec(good())
    assert minimal.image == "local/host" and minimal.env == {} and minimal.max_runtime is None and minimal.priority == 0


@pytest.mark.parametrize(
    "name",
    ["Train", "my_job", "a" * 64, "<script>alert(1)</script>", "", "-lead", "trail-", "dot.name", "spa ce", "名字"],
)
def test_invalid_names_are_rejected(name):
    rejects(good(name=name), "name")


def test_name_length_limit_is_in_the_message():
    rejects(good(name="a" * 64), "name", "64 characters", "limit is 63")
    assert validate_spec(good(name="a" * 63)).name == "a" * 63


def test_invalid_project_name():
    rejects(good(project="Team_A"), "project", "DNS-1123")


def test_empty_command():
    rejects(good(command=[]), "command", "at least one argument")


def test_blank_program():
    rejects(good(command=["  ", "x"]), "command[0]", "blank")


def test_one_megabyte_single_argument():
    rejects(good(command=["echo", "x" * (1024 * 1024)]), "command[1]", f"limit is {MAX_ARG_CHARS}")


def test_one_megabyte_in_many_arguments():
    # 200 args of 5,000 chars: each under the per-argument limit, 1 MB together.
    err = rejects(good(command=["echo"] + ["y" * 5000] * 200), "command", f"limit is {MAX_COMMAND_BYTES} bytes")
    assert "1000004 bytes" in err.message


def test_too_many_arguments():
    rejects(good(command=["echo"] * (MAX_COMMAND_ARGS + 1)), "command", f"{MAX_COMMAND_ARGS + 1} arguments",
            f"limit is {MAX_COMMAND_ARGS}")
    assert len(validate_spec(good(command=["echo"] * MAX_COMMAND_ARGS)).command) == MAX_COMMAND_ARGS


def test_nul_in_an_argument():
    rejects(good(command=["echo", "a\x00b"]), "command[1]", "NUL")


def test_html_and_shell_metacharacters_in_a_command_are_kept_verbatim():
    argv = ["echo", "<script>alert('x')</script>", "$(rm -rf /)", "; ls", "&amp;", "\"quoted\""]
    assert validate_spec(good(command=argv)).command == argv


@pytest.mark.parametrize("field", ["nmae", "commands", "gpus", "__class__"])
def test_unknown_fields(field):
    rejects(good(**{field: 1}), field, "unknown field")


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"priority": "high"}, "priority"),
        ({"priority": 1.5}, "priority"),
        ({"priority": True}, "priority"),
        ({"command": "python train.py"}, "command"),
        ({"command": ["python", 3]}, "command[1]"),
        ({"command": None}, "command"),
        ({"env": ["A=1"]}, "env"),
        ({"env": "A=1"}, "env"),
        ({"env": {"A": 1}}, "env.A"),
        ({"name": 7}, "name"),
        ({"image": ["x"]}, "image"),
        ({"resources": ["cpu"]}, "resources"),
        ({"resources": {"nvidia.com/gpu": True}}, "resources.nvidia.com/gpu"),
        ({"resources": {"cpu": None}}, "resources.cpu"),
        ({"max_runtime": [1]}, "max_runtime"),
        ({"max_runtime": True}, "max_runtime"),
    ],
)
def test_wrong_types(over, field):
    err = rejects(good(**over), None if field is None else field)
    assert err.message


def test_missing_required_fields():
    rejects({"command": ["x"]}, "name", "required")
    rejects({"name": "x"}, "command", "required")


def test_not_an_object():
    for raw in (None, [], "name: x", 3):
        rejects(raw, None, "object")


@pytest.mark.parametrize("name", ["CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CRATER_JOB_UID"])
def test_reserved_env_names(name):
    rejects(good(env={name: "0"}), f"env.{name}", "set by Crater")


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A B", "", "X" * 129])
def test_invalid_env_names(name):
    err = rejects(good(env={name: "v"}), field_paths.key("env", name))
    assert "[A-Za-z_]" in err.message


def test_env_values_limited_and_no_nul():
    rejects(good(env={"A": "x" * 8193}), "env.A", "8192")
    rejects(good(env={"A": "a\x00"}), "env.A", "NUL")
    rejects(good(env={f"V{i}": "" for i in range(129)}), "env", "limit is 128")


@pytest.mark.parametrize("path", ["/etc", "../up", "a/../../b", "a\\..\\b", "x" * 256, "a\x00b"])
def test_working_dir_must_stay_inside_the_job_directory(path):
    rejects(good(working_dir=path), "working_dir")


@pytest.mark.parametrize(
    ("over", "field"),
    [({"command": ["echo", "\ud800"]}, "command[1]"), ({"env": {"A": "x\udfff"}}, "env.A"),
     ({"working_dir": "out\ud800"}, "working_dir"), ({"working_dir": "\u76ee" * 86}, "working_dir")],
)
def test_text_no_process_or_folder_can_take_is_refused(over, field):
    """The console hands its form to validate_spec too: a lone surrogate (no UTF-8 form) or a folder name over
    255 bytes made the job impossible to start, and its start failed every placement round."""
    rejects(good(**over), field)


@pytest.mark.parametrize(
    ("over", "field"),
    [({"name": "train\n"}, "name"), ({"project": "team\n"}, "project"), ({"image": "ubuntu\n"}, "image"),
     ({"env": {"A\n": "v"}}, 'env["A\\n"]'),
     ({"accelerator_model": "NVIDIA-A100\n", "resources": {"nvidia.com/gpu": 1}}, "accelerator_model"),
     ({"resources": {"nvidia.com/gpu\n": 1}}, 'resources["nvidia.com/gpu\\n"]'), ({"max_runtime": "2h\n3"}, "max_runtime"),
     ({"command": ("echo", "x")}, "command"), ({"command": {"echo"}}, "command")],
)
def test_a_trailing_newline_or_an_unordered_command_is_refused(over, field):
    rejects(good(**over), field)


@pytest.mark.parametrize("raw", ["\u0663", "\u0663h", "\u00b2", "1" * 33])
def test_durations_take_ascii_digits_only(raw):
    with pytest.raises(InvalidInput):
        parse_duration(raw)


def test_relative_working_dir_is_fine():
    assert validate_spec(good(working_dir="out/run-1")).working_dir == "out/run-1"


@pytest.mark.parametrize("image", ["UPPER/case", "Team/img", "a b", "x" * 256, "", "bad//path", "repo:tag:tag"])
def test_bad_images(image):
    rejects(good(image=image), "image")


@pytest.mark.parametrize("image", ["ubuntu", "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime", "registry.example.com:5000/team/img:v1",
                                   "nvcr.io/nvidia/pytorch:24.08-py3", "img@sha256:" + "a" * 64,
                                   "localhost/img", "localhost:5000/img:1", "myhost:5000/team/img"])
def test_good_images(image):
    assert validate_spec(good(image=image)).image == image


def test_priority_range():
    rejects(good(priority=1001), "priority", "between -1000 and 1000")
    rejects(good(priority=-1001), "priority")
    assert validate_spec(good(priority=-1000)).priority == -1000


def test_quantities_in_a_spec():
    rejects(good(resources={"nvidia.com/gpu": "0.5"}), "resources.nvidia.com/gpu", "fractional")
    rejects(good(resources={"memory": "-1Gi"}), "resources.memory", "negative")
    rejects(good(resources={"cpu": "two"}), "resources.cpu", "not a Kubernetes quantity")
    rejects(good(resources={"tpu": "1"}), "resources.tpu", "unknown resource")


def test_accelerator_model_rules():
    rejects(good(accelerator_model="NVIDIA-A100", resources={"cpu": "1"}), "accelerator_model", "no accelerator")
    rejects(good(accelerator_model="<b>", resources={"nvidia.com/gpu": 1}), "accelerator_model")
    rejects(good(accelerator_model="", resources={"nvidia.com/gpu": 1}), "accelerator_model")


# -- parse_duration --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("2h", 7200), ("1h30m", 5400), (90, 90), ("90", 90), ("45s", 45), ("1d", 86400), ("1d2h3m4s", 93784),
     ("30d", MAX_RUNTIME_S), (" 10m ", 600), (None, None)],
)
def test_parse_duration(raw, seconds):
    assert parse_duration(raw) == seconds


@pytest.mark.parametrize(
    ("raw", "words"),
    [("0", "at least 1 second"), (0, "at least 1 second"), (-5, "at least 1 second"), ("31d", "limit is 2592000"),
     (31 * 86400, "30 days"), ("2 hours", "not seconds"), ("h", "not seconds"), ("", "not seconds"),
     ("1.5h", "not seconds"), ("-1h", "not seconds"), (True, "seconds"), (1.5, "seconds"), ("1" * 40 + "h", "not seconds")],
)
def test_bad_durations(raw, words):
    with pytest.raises(InvalidInput) as info:
        parse_duration(raw)
    assert info.value.field == "max_runtime"
    assert words in info.value.message


def test_max_runtime_in_a_spec_names_the_field():
    rejects(good(max_runtime="0"), "max_runtime", "at least 1 second")
    rejects(good(max_runtime=31 * 86400), "max_runtime", "30 days")
    assert validate_spec(good(max_runtime="2h")).max_runtime == 7200


# -- phases --------------------------------------------------------------------------------------
def test_phase_machine():
    assert can_transition(JobPhase.QUEUED, JobPhase.RUNNING)
    assert can_transition(JobPhase.QUEUED, JobPhase.CANCELLED)
    assert can_transition(JobPhase.RUNNING, JobPhase.SUCCEEDED)
    assert can_transition(JobPhase.RUNNING, JobPhase.FAILED)
    assert not can_transition(JobPhase.RUNNING, JobPhase.QUEUED)
    assert not can_transition(JobPhase.QUEUED, JobPhase.SUCCEEDED)
    for final in (JobPhase.SUCCEEDED, JobPhase.FAILED, JobPhase.CANCELLED):
        assert final.terminal
        assert not any(can_transition(final, p) for p in JobPhase)
    assert not JobPhase.QUEUED.terminal and not JobPhase.RUNNING.terminal
