"""domain.job_defaults: the cpu/memory of a job that names none, per resource; bad settings refused at start."""

from __future__ import annotations

import pytest

from crater_app.bootstrap import build_context
from crater_app.domain.job_defaults import default_resources, with_default_resources
from crater_app.domain.jobs import validate_spec
from crater_app.settings import Settings

DEFAULTS = {"cpu": "1", "memory": "2Gi"}


@pytest.mark.parametrize(("resources", "expected"), [
    ({}, {"cpu": "1", "memory": "2Gi"}),
    ({"nvidia.com/gpu": 2}, {"nvidia.com/gpu": "2", "cpu": "1", "memory": "2Gi"}),
    ({"cpu": "4"}, {"cpu": "4", "memory": "2Gi"}),
    ({"memory": "512Mi"}, {"memory": "512Mi", "cpu": "1"}),
    ({"cpu": "250m", "memory": "1Gi"}, {"cpu": "250m", "memory": "1Gi"}),
    ({"cpu": 0, "memory": "0"}, {"cpu": "0", "memory": "0"}),  # named, even as 0: kept
])
def test_each_missing_resource_gets_its_default(resources, expected):
    spec = validate_spec({"name": "j", "command": ["true"], "resources": resources})
    assert with_default_resources(spec, DEFAULTS).resources == expected


def test_a_spec_that_names_both_is_returned_as_it_is():
    spec = validate_spec({"name": "j", "command": ["true"], "resources": {"cpu": "2", "memory": "1Gi"}})
    assert with_default_resources(spec, DEFAULTS) is spec
    assert with_default_resources(spec, {}) is spec


def test_the_defaults_come_from_the_settings_without_empty_ones():
    assert dict(default_resources("1", "2Gi")) == DEFAULTS
    assert dict(default_resources(" 500m ", "")) == {"cpu": "500m"}
    assert dict(default_resources("1000m", "2048Mi")) == DEFAULTS, "in canonical form, as a job stores them"
    assert dict(default_resources("", "")) == {}
    assert Settings().default_job_cpu == "1" and Settings().default_job_memory == "2Gi"


@pytest.mark.parametrize(("cpu", "memory", "setting"), [
    ("lots", "2Gi", "CRATER_DEFAULT_JOB_CPU"), ("1", "2GB", "CRATER_DEFAULT_JOB_MEMORY"),
    ("-1", "2Gi", "CRATER_DEFAULT_JOB_CPU"), ("1", "1e400", "CRATER_DEFAULT_JOB_MEMORY"),
])
def test_a_bad_default_is_a_start_error_naming_the_setting(cpu, memory, setting, tmp_path):
    with pytest.raises(ValueError, match=setting):
        default_resources(cpu, memory)
    with pytest.raises(ValueError, match=setting):
        build_context(Settings(data_dir=tmp_path, default_job_cpu=cpu, default_job_memory=memory), migrate=False)
    assert not (tmp_path / "crater.db").exists()
