"""A job spec's unknown field or restart_policy value gets "did you mean" the field or value meant: Volcano's and
Kubernetes' spellings explicitly, anything else by similarity to the names at that level; in both languages."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import InvalidInput
from crater_app.domain.jobs import JobSpec, validate_spec
from crater_app.domain.spec_hints import known_fields, suggest_field, suggest_restart_policy

TASK_FIELDS = ("name", "replicas", "image", "command", "args", "env", "working_dir", "resources", "ports")


def job(**over) -> dict:
    return {"name": "train", "command": ["python", "train.py"], **over}


def gang(*extra_task_fields: dict, **over) -> dict:
    tasks = [{"name": "master", "command": ["python"]},
             {"name": "worker", "command": ["python"], **(extra_task_fields[0] if extra_task_fields else {})}]
    return {"name": "ddp", "kind": "pytorch", "tasks": tasks, **over}


def refused(raw: dict) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        validate_spec(raw)
    return caught.value


@pytest.mark.parametrize("loc, expected", [
    (("resouces",), tuple(JobSpec.model_fields)),
    (("tasks", 1, "replica"), TASK_FIELDS),
    (("tasks", 0, "ports", 0, "prot"), ("name", "port", "protocol")),
    (("volumes", 0, "mountPath"), ("source", "mount_path", "claim", "sub_path", "read_only")),
    (("env", "X"), ()),  # a dict's keys are the user's own
    (("nope", "x"), ()),
])
def test_the_known_fields_are_those_of_the_level(loc, expected):
    assert set(known_fields(JobSpec, loc)) == set(expected)


@pytest.mark.parametrize("name, known, expected", [
    # Volcano / Kubernetes spellings, mapped explicitly
    ("restartPolicy", JobSpec.model_fields, "restart_policy"),
    ("minAvailable", JobSpec.model_fields, "min_available"),
    ("maxRetry", JobSpec.model_fields, "max_retry"),
    ("nodeSelector", JobSpec.model_fields, "node_selector"),
    ("ttlSecondsAfterFinished", JobSpec.model_fields, "ttl_after_finished"),
    ("workingDir", JobSpec.model_fields, "working_dir"),
    ("workingDir", TASK_FIELDS, "working_dir"),
    # an alias whose field is not at this level is not suggested there
    ("minAvailable", TASK_FIELDS, None),
    # misspellings: the closest name
    ("resouces", JobSpec.model_fields, "resources"),
    ("replica", TASK_FIELDS, "replicas"),
    ("Image", TASK_FIELDS, "image"),
    ("commands", JobSpec.model_fields, "command"),
    # nothing close
    ("zzzz", JobSpec.model_fields, None),
    (7, JobSpec.model_fields, None),
    ("replica", (), None),
])
def test_suggest_field(name, known, expected):
    assert suggest_field(name, known) == expected


@pytest.mark.parametrize("value, expected", [
    ("RestartJob", "restart"), ("AbortJob", "fail"), ("TerminateJob", "fail"), ("OnFailure", "restart"),
    ("Never", "fail"), ("Restart", "restart"), ("failed", "fail"), ("always", None), ("CompleteJob", None),
])
def test_suggest_restart_policy(value, expected):
    assert suggest_restart_policy(value, ("restart", "fail", "ignore")) == expected


@pytest.mark.parametrize("raw, field, code, args", [
    (job(restartPolicy="OnFailure"), "restartPolicy", "job.unknown_field_suggestion",
     {"name": "restartPolicy", "suggestion": "restart_policy"}),
    (job(resouces={"cpu": 1}), "resouces", "job.unknown_field_suggestion",
     {"name": "resouces", "suggestion": "resources"}),
    (gang({"replica": 2}), "tasks[1].replica", "job.unknown_field_suggestion",
     {"name": "tasks[1].replica", "suggestion": "replicas"}),
    (job(zzzz=1), "zzzz", "job.unknown_field", {"name": "zzzz"}),
    # several unknown fields: the first is named, the others counted and listed
    (job(resouces={}, workingDir="x"), "resouces", "job.unknown_field_suggestion_more",
     {"name": "resouces", "suggestion": "resources", "more": 1, "others": ["workingDir"]}),
    (job(zzzz=1, resouces={}, yyyy=2), "zzzz", "job.unknown_field_more",
     {"name": "zzzz", "more": 2, "others": ["resouces", "yyyy"]}),
    (gang({"replica": 2, "resouces": {}}), "tasks[1].replica", "job.unknown_field_suggestion_more",
     {"name": "tasks[1].replica", "suggestion": "replicas", "more": 1, "others": ["tasks[1].resouces"]}),
    # restart_policy values of Volcano and Kubernetes
    (job(restart_policy="RestartJob"), "restart_policy", "job.restart_policy_suggestion",
     {"policies": "restart, fail, ignore", "value": "RestartJob", "suggestion": "restart"}),
    (job(restart_policy="AbortJob"), "restart_policy", "job.restart_policy_suggestion",
     {"policies": "restart, fail, ignore", "value": "AbortJob", "suggestion": "fail"}),
    (job(restart_policy="Never"), "restart_policy", "job.restart_policy_suggestion",
     {"policies": "restart, fail, ignore", "value": "Never", "suggestion": "fail"}),
    (job(restart_policy="always"), "restart_policy", "job.restart_policy",
     {"policies": "restart, fail, ignore", "value": "always"}),
])
def test_the_error_names_the_field_and_carries_the_suggestion(raw, field, code, args):
    exc = refused(raw)
    assert (exc.field, exc.code, exc.params) == (field, code, args)


def test_many_other_unknown_fields_are_counted_and_the_first_five_listed():
    exc = refused(job(**{f"zz{i}": 1 for i in range(8)}))
    assert exc.code == "job.unknown_field_more" and exc.field == "zz0"
    assert exc.params["more"] == 7 and exc.params["others"] == [f"zz{i}" for i in range(1, 6)]


@pytest.mark.parametrize("raw, en, zh", [
    (gang({"replica": 2}), "unknown field 'tasks[1].replica'; did you mean 'replicas'?",
     "未知字段“tasks[1].replica”；您是否想用“replicas”？"),
    (job(resouces={}, workingDir="x"),
     "unknown field 'resouces'; did you mean 'resources'? And 1 more unknown field: workingDir",
     "未知字段“resouces”；您是否想用“resources”？另有 1 个未知字段：workingDir"),
    (job(zzzz=1, resouces={}, yyyy=2), "unknown field 'zzzz', and 2 more unknown fields: resouces and yyyy",
     "未知字段“zzzz”，另有 2 个未知字段：resouces 和 yyyy"),
    (job(restart_policy="RestartJob"),
     "restart_policy must be one of restart, fail, ignore (got 'RestartJob'); did you mean 'restart'?",
     "restart_policy 必须是 restart, fail, ignore 之一（收到“RestartJob”）；您是否想用“restart”？"),
])
def test_the_messages_in_both_languages(raw, en, zh):
    exc = refused(raw)
    assert (exc.message, exc.message_in("zh-CN")) == (en, zh)
