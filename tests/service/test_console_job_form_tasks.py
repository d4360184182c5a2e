"""The new-job form for jobs with tasks, run in-process on real Reflex state objects against the test database and
the local backend (4 virtual A100s on one node; no browser): a PyTorch job of a master and workers, the service's
errors beside the inputs of the chosen kind, and the "Edit as YAML" mode submitted as it is."""

from __future__ import annotations

import re

import pytest

from crater_app.services import jobs
from crater_app.state.job_new import NewJobState
from tests.service.test_console_field_errors import console, page, run  # noqa: F401 - the fixture and helpers

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FORM = {"name": "ddp", "command": "sleep\n1", "cpu": "1", "memory": "1Gi", "env": "", "max_runtime": "",
        "priority": "0"}


def _job_id(answer) -> int:
    return int(re.search(r"/jobs/(\d+)", str(answer)).group(1))


def test_pytorch_master_and_workers_from_the_form(console):  # noqa: F811
    form = page(NewJobState, "alice", console, "http://localhost/jobs/new")
    run(form, "load")
    run(form, "set_kind", "pytorch")
    run(form, "set_replicas", "1")
    assert form.gpus == "1" and form.gpu_options == ["0", "1", "2", "3", "4"]  # per replica: the node's 4
    assert (form.replica_total, form.gpu_replicas, form.gpu_total) == ("2", "2", "2")  # 2 replicas × 1 GPU
    run(form, "set_gpus", "2")
    assert form.gpu_total == "4"
    run(form, "set_replicas", "3")
    assert (form.replica_total, form.gpu_total) == ("4", "8")
    run(form, "set_replicas", "1")
    answer = run(form, "submit", {**FORM, "shm_size": "512Mi"})
    assert form.field_errors == {} and form.form_error == "", (form.field_errors, form.form_error)
    job = jobs.get_job(console.ctx, console.alice, _job_id(answer))
    assert job.kind == "pytorch" and job.gpus == 4 and job.accelerator_model == "NVIDIA-A100-SXM4-80GB"
    assert [(t["name"], t["replicas"], t["resources"]) for t in job.tasks] == [
        ("master", 1, {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"}),
        ("worker", 1, {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"})]
    assert form.kind == "batch" and form.replicas == "1"  # the form starts again


def test_mpi_workers_an_error_of_each_kind_goes_beside_its_input(console):  # noqa: F811
    form = page(NewJobState, "alice", console, "http://localhost/jobs/new", "zh-CN")
    run(form, "load")
    run(form, "set_kind", "mpi")
    run(form, "set_replicas", "2")
    assert (form.gpu_replicas, form.gpu_total) == ("2", "2")  # the launcher gets no GPUs
    # the gang (3 replicas) is refused beside the gang size when it asks for more than there are replicas
    run(form, "submit", {**FORM, "worker_command": "sleep\n1", "min_available": "4"})
    assert list(form.field_errors) == ["min_available"] and form.show_advanced, form.field_errors
    # the workers' command is the service's tasks[1].command
    run(form, "submit", {**FORM, "worker_command": "sleep\n" + "x" * 9000})
    assert list(form.field_errors) == ["worker_command"], form.field_errors
    # a node label the service refuses (node_selector.<key>) goes beside the node selector
    run(form, "submit", {**FORM, "worker_command": "sleep\n1", "node_selector": "bad key=a"})
    assert list(form.field_errors) == ["node_selector"], form.field_errors
    # shm_size above a replica's memory
    run(form, "submit", {**FORM, "worker_command": "sleep\n1", "shm_size": "2Gi"})
    assert list(form.field_errors) == ["shm_size"], form.field_errors
    # more GPUs per replica than the largest node has (the select offers no such count; a stale page might send it)
    form.gpus = "8"
    run(form, "submit", {**FORM, "worker_command": "sleep\n1"})
    assert list(form.field_errors) == ["gpus"] and "4" in form.field_errors["gpus"], form.field_errors
    run(form, "set_gpus", "1")
    assert form.field_errors == {}
    # a gang larger than the cluster: 5 workers of 1 GPU on a node of 4 (the error names the tasks: the replicas)
    run(form, "set_replicas", "5")
    run(form, "submit", {**FORM, "worker_command": "sleep\n1"})
    assert list(form.field_errors) == ["replicas"], form.field_errors
    run(form, "set_replicas", "2")
    assert form.field_errors == {}
    answer = run(form, "submit", {**FORM, "worker_command": "sleep\n1"})
    job = jobs.get_job(console.ctx, console.alice, _job_id(answer))
    assert [(t["name"], t["replicas"], t["resources"].get("nvidia.com/gpu")) for t in job.tasks] == [
        ("launcher", 1, None), ("worker", 2, "1")]


def test_edit_as_yaml_renders_the_form_and_submits_the_text_as_it_is(console):  # noqa: F811
    form = page(NewJobState, "alice", console, "http://localhost/jobs/new")
    run(form, "load")
    run(form, "set_kind", "pytorch")
    for name, value in (("name", "from-yaml"), ("command", "python3\ntrain.py"), ("env", "MODE=yes")):
        run(form, "keep_value", name, value)
    run(form, "open_yaml")
    assert form.yaml_mode and form.yaml_error == ""
    text = form.yaml_text
    assert "kind: pytorch" in text and "name: master" in text and "name: worker" in text and "MODE: 'yes'" in text
    # an error in the text: its path and message above the editor, nothing written
    before = jobs.list_jobs(console.ctx, console.alice).total
    run(form, "submit_yaml", {"spec_yaml": text.replace("replicas: 1", "replicas: 2", 1)})  # two masters
    assert form.yaml_error_path == "tasks[0].replicas" and "master" in form.yaml_error, form.yaml_error
    run(form, "submit_yaml", {"spec_yaml": "name: a\nname: b\n"})
    assert form.yaml_error_path == "name" and form.yaml_error
    run(form, "submit_yaml", {"spec_yaml": "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: x}\n"})
    assert "Volcano Job" in form.yaml_error and form.yaml_error_path == "apiVersion"
    assert jobs.list_jobs(console.ctx, console.alice).total == before
    # back to the form and again: the form's values render again
    run(form, "close_yaml")
    assert not form.yaml_mode
    run(form, "open_yaml")
    # an edit the form cannot express (a port on the master), submitted as it is
    edited = form.yaml_text.replace("- name: worker", "  ports:\n  - name: tb\n    port: 6006\n- name: worker", 1)
    answer = run(form, "submit_yaml", {"spec_yaml": edited})
    assert form.yaml_error == "", (form.yaml_error_path, form.yaml_error)
    job = jobs.get_job(console.ctx, console.alice, _job_id(answer))
    assert job.name == "from-yaml" and job.env == {"MODE": "yes"}
    assert {"name": "tb", "port": 6006, "protocol": "TCP"} in job.tasks[0]["ports"]
    assert not form.yaml_mode and form.yaml_text == ""  # the form starts again
