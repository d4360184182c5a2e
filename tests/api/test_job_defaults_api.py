"""A job without ``cpu``/``memory`` gets the deployment's defaults through the API as through the console's form
(``default_job_cpu`` = 1, ``default_job_memory`` = 2Gi), each resource on its own; the OpenAPI shows them."""

from __future__ import annotations

from crater_app.db.models import Job
from crater_app.services import jobs
from tests.helpers import job_row

GIB = 1024**3


CASES = [  # (resources sent or None, stored resources, cpu_m, memory_bytes)
    (None, {"cpu": "1", "memory": "2Gi"}, 1000, 2 * GIB),
    ({"nvidia.com/gpu": 1}, {"nvidia.com/gpu": "1", "cpu": "1", "memory": "2Gi"}, 1000, 2 * GIB),
    ({"cpu": "1500m"}, {"cpu": "1500m", "memory": "2Gi"}, 1500, 2 * GIB),
    ({"memory": "1Gi"}, {"memory": "1Gi", "cpu": "1"}, 1000, GIB),
    ({"cpu": "0"}, {"cpu": "0", "memory": "2Gi"}, 0, 2 * GIB),
]


def test_defaults_through_the_api(api):
    for resources, expected, cpu_m, memory in CASES:
        r = api.submit(**({} if resources is None else {"resources": resources}))
        assert r.status_code == 201, r.text
        assert r.json()["resources"] == expected
        row: Job = job_row(api.world.ctx, r.json()["id"])
        assert (row.cpu_m, row.memory_bytes, row.resources) == (cpu_m, memory, expected)


def test_the_api_and_the_service_give_the_same_job(api):
    """The console's form submits through ``services.jobs.submit_job``; the API through the same call."""
    over_http = api.submit(name="over-http", resources={"nvidia.com/gpu": 1}).json()
    direct = jobs.submit_job(api.world.ctx, api.world.alice,
                             {"name": "direct", "command": ["sh", "-c", "echo hi"], "resources": {"nvidia.com/gpu": 1}})
    assert direct.resources == over_http["resources"] == {"nvidia.com/gpu": "1", "cpu": "1", "memory": "2Gi"}
    resubmitted = api.client.post(f"/api/v1/jobs/{direct.id}/resubmit", headers=api.auth("alice")).json()
    assert resubmitted["resources"] == direct.resources


def test_the_deployment_sets_the_defaults(api):
    ctx = api.world.ctx
    ctx.settings = ctx.settings.model_copy(update={"default_job_cpu": "500m", "default_job_memory": ""})
    r = api.submit()
    assert r.status_code == 201 and r.json()["resources"] == {"cpu": "500m"}
    assert job_row(ctx, r.json()["id"]).memory_bytes == 0


def test_the_openapi_shows_the_defaults(api):
    ctx = api.world.ctx
    ctx.settings = ctx.settings.model_copy(update={"default_job_cpu": "2", "default_job_memory": "4Gi"})
    doc = api.client.get("/api/v1/openapi.json").json()
    for content_type in ("application/json", "application/yaml"):
        resources = doc["paths"]["/api/v1/jobs"]["post"]["requestBody"]["content"][content_type]["schema"][
            "properties"]["resources"]
        assert resources["default"] == {"cpu": "2", "memory": "4Gi"}
        assert resources["properties"]["cpu"]["default"] == "2" and resources["properties"]["memory"]["default"] == "4Gi"
        assert "cpu 2, memory 4Gi" in resources["description"] and resources["additionalProperties"] is True
    # the body's schema elsewhere (another app, the module's constant) is not changed by this deployment's values
    from crater_app.api import docs
    assert "default" not in docs.JOB_SPEC_BODY["requestBody"]["content"]["application/json"]["schema"]["properties"][
        "resources"]
