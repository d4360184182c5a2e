"""The new-job form for jobs with tasks: form values -> the spec dict for every kind, the spec valid as the service
reads it, the "Edit as YAML" text read back as the API reads a body, and the service's field paths -> the inputs."""

from __future__ import annotations

import pytest

from crater_app.api import body, yaml_loader
from crater_app.domain.errors import InvalidInput
from crater_app.domain.jobs import validate_spec
from crater_app.state.field_errors import input_for
from crater_app.state.forms import FormError, build_spec, job_fields, parse_count, parse_node_selector

GPU = "nvidia.com/gpu"
A100 = "NVIDIA-A100-SXM4-80GB"
FORM = dict(name="ddp", command="torchrun\ntrain.py", command_mode="lines", env="", cpu="4", memory="16Gi",
            gpus="2", model=A100, resource=GPU, max_runtime="", priority="")
PER_REPLICA = {"cpu": "4", "memory": "16Gi", GPU: 2}
ARGV = ["torchrun", "train.py"]


@pytest.mark.parametrize(("over", "expected"), [
    # batch of one replica: the single-task form of today
    ({}, {"name": "ddp", "command": ARGV, "resources": PER_REPLICA, "accelerator_model": A100}),
    # batch of 3: a gang of identical replicas
    ({"replicas": "3"}, {"name": "ddp", "tasks": [
        {"name": "main", "replicas": 3, "command": ARGV, "resources": PER_REPLICA}], "accelerator_model": A100}),
    # pytorch: the master and the workers run the same command with the same resources
    ({"kind": "pytorch", "replicas": "2", "env": "NCCL_DEBUG=INFO"}, {
        "name": "ddp", "kind": "pytorch", "tasks": [
            {"name": "master", "replicas": 1, "command": ARGV, "env": {"NCCL_DEBUG": "INFO"}, "resources": PER_REPLICA},
            {"name": "worker", "replicas": 2, "command": ARGV, "env": {"NCCL_DEBUG": "INFO"},
             "resources": PER_REPLICA}],
        "accelerator_model": A100}),
    # pytorch with no workers: the master alone
    ({"kind": "pytorch", "replicas": "0"}, {"name": "ddp", "kind": "pytorch", "tasks": [
        {"name": "master", "replicas": 1, "command": ARGV, "resources": PER_REPLICA}], "accelerator_model": A100}),
    # mpi: the launcher without GPUs, the workers with them and their own command
    ({"kind": "mpi", "replicas": "2", "command": "mpirun\n-np\n2\n./hello", "worker_command": "/usr/sbin/sshd\n-D"}, {
        "name": "ddp", "kind": "mpi", "tasks": [
            {"name": "launcher", "replicas": 1, "command": ["mpirun", "-np", "2", "./hello"],
             "resources": {"cpu": "4", "memory": "16Gi"}},
            {"name": "worker", "replicas": 2, "command": ["/usr/sbin/sshd", "-D"], "resources": PER_REPLICA}],
        "accelerator_model": A100}),
    # mpi with no workers: no GPU anywhere, so no model either
    ({"kind": "mpi", "replicas": "0"}, {"name": "ddp", "kind": "mpi", "tasks": [
        {"name": "launcher", "replicas": 1, "command": ARGV, "resources": {"cpu": "4", "memory": "16Gi"}}]}),
    # interactive: one replica whatever the replicas field says
    ({"kind": "interactive", "replicas": "5", "gpus": "0"}, {
        "name": "ddp", "kind": "interactive", "command": ARGV, "resources": {"cpu": "4", "memory": "16Gi"}}),
    # the advanced options, written only when given or not their default
    ({"shm_size": " 8Gi ", "min_available": "1", "restart_policy": "restart", "max_retry": "5",
      "node_selector": "# comment\nzone = a\n\ngpu.kind=a100\n"},
     {"name": "ddp", "command": ARGV, "resources": PER_REPLICA, "accelerator_model": A100, "shm_size": "8Gi",
      "min_available": 1, "restart_policy": "restart", "max_retry": 5,
      "node_selector": {"zone": "a", "gpu.kind": "a100"}}),
    # max_retry only means something with "restart"; "fail" is the default and not written
    ({"restart_policy": "fail", "max_retry": "5"}, {"name": "ddp", "command": ARGV, "resources": PER_REPLICA,
                                                    "accelerator_model": A100}),
    ({"restart_policy": "ignore"}, {"name": "ddp", "command": ARGV, "resources": PER_REPLICA,
                                    "accelerator_model": A100, "restart_policy": "ignore"}),
])
def test_form_values_make_the_spec_of_each_kind(over, expected):
    spec = build_spec(**{**FORM, **over})
    assert spec == expected
    validate_spec(spec)  # what the form writes, the service reads


@pytest.mark.parametrize(("over", "key", "field", "params"), [
    ({"replicas": "two"}, "form.error.whole_number", "replicas", {"min": 1}),
    ({"replicas": "0"}, "form.error.whole_number", "replicas", {"min": 1}),  # a batch job has at least one replica
    ({"kind": "pytorch", "replicas": "-1"}, "form.error.whole_number", "replicas", {"min": 0}),
    ({"min_available": "1.5"}, "form.error.whole_number", "min_available", {"min": 0}),
    ({"restart_policy": "restart", "max_retry": "x"}, "form.error.whole_number", "max_retry", {"min": 0}),
    ({"node_selector": "zone=a\nno-equals"}, "form.error.node_selector_line", "node_selector", {"line": 2}),
    ({"node_selector": "=a"}, "form.error.node_selector_line", "node_selector", {"line": 1}),
    ({"command": "  "}, "form.error.command_required", "command", {}),
    ({"kind": "mpi", "worker_command": ""}, "form.error.command_required", "worker_command", {}),
    ({"kind": "mpi", "command_mode": "shell", "command": "mpirun", "worker_command": "sshd 'x"},
     "form.error.command_quotes", "worker_command", None),
])
def test_form_errors_name_their_input(over, key, field, params):
    with pytest.raises(FormError) as err:
        build_spec(**{**FORM, **over})
    assert (err.value.key, err.value.field) == (key, field)
    if params is not None:
        assert err.value.params == params


def test_a_draft_leaves_an_empty_command_to_the_editor():
    spec = build_spec(**{**FORM, "kind": "mpi", "command": "", "worker_command": "", "draft": True})
    assert [t["command"] for t in spec["tasks"]] == [[], []]
    with pytest.raises(FormError):  # a line that cannot be read is still refused
        build_spec(**{**FORM, "env": "NOPE", "draft": True})


def test_parsers():
    assert parse_node_selector("a=b=c\n  k = v  \n") == {"a": "b=c", "k": "v"}
    assert parse_count(" ", "x", 7) == 7 and parse_count("12", "x", None) == 12
    with pytest.raises(FormError):
        parse_count("1e3", "x", None)
    with pytest.raises(FormError):
        parse_count("9" * 12, "x", None)


@pytest.mark.parametrize("over", [
    {"kind": "pytorch", "replicas": "3", "env": "MODE=yes\nPORT=0600\nT=1e3", "node_selector": "zone=on"},
    {"kind": "mpi", "worker_command": "sshd\n-D", "shm_size": "1Gi", "memory": "2Gi"},
    {"name": "中文-name", "command": "echo\n~\n'quoted'\nnull"},
])
def test_yaml_of_the_form_reads_back_as_the_api_reads_it(over):
    """The editor's text is the spec: read as a YAML body it is the same dict (strings YAML would read as booleans,
    octal or floats stay strings)."""
    spec = build_spec(**{**FORM, **over})
    text = yaml_loader.dump(spec)
    assert body.one_document(body.decode_text(text, "yaml")) == spec
    assert "&" not in text and "*" not in text  # the master's and the workers' command written out, no aliases


def test_yaml_text_errors_are_the_apis():
    with pytest.raises(InvalidInput) as err:
        body.decode_text("name: a\nname: b\n", "yaml")
    assert err.value.code == "http.body_duplicate_key" and err.value.field == "name"
    with pytest.raises(InvalidInput) as err:
        body.decode_text("name: [a\n", "yaml")
    assert err.value.code == "http.body_yaml"


@pytest.mark.parametrize(("kind", "path", "name"), [
    ("pytorch", "tasks[1].resources.nvidia.com/gpu", "gpus"),
    ("pytorch", "tasks[0].resources.cpu", "cpu"),
    ("pytorch", "tasks[1].resources.memory", "memory"),
    ("pytorch", "tasks[1].replicas", "replicas"),
    ("pytorch", "tasks[1].command[0]", "command"),
    ("pytorch", "tasks[0].env.RANK", "env"),
    ("pytorch", "tasks", "replicas"),  # the gang larger than the cluster or the project's capability
    ("mpi", "tasks[1].command", "worker_command"),
    ("mpi", "tasks[0].command[2]", "command"),
    ("mpi", "tasks[1].replicas", "replicas"),
    ("batch", "tasks[0].replicas", "replicas"),
    ("batch", "tasks[0].resources.nvidia.com/gpu", "gpus"),
    ("batch", "min_available", "min_available"),
    ("batch", "shm_size", "shm_size"),
    ("batch", "node_selector.zone", "node_selector"),
    ("batch", "restart_policy", "restart_policy"),
    ("batch", "max_retry", "max_retry"),
    ("batch", "accelerator_model", "gpus"),
    ("interactive", "tasks", "command"),
    ("batch", "volumes[0].mount_path", None),  # no volumes in the form: the form's own message
])
def test_service_paths_map_to_the_inputs_of_each_kind(kind, path, name):
    assert input_for(path, job_fields(kind)) == name
