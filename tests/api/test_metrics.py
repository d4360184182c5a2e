"""/metrics: Prometheus text format with job counts per phase and accelerator allocation, no names."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from crater_app.services.reconcile import LeaderLoop
from tests.helpers import drive_until


def _samples(text: str) -> dict[tuple[str, tuple], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text) for s in family.samples
    }


def test_metrics_count_jobs_and_held_devices(api):
    running = api.submit(name="holder", command=["sleep", "30"], resources={"nvidia.com/gpu": 3}).json()
    done = api.submit(name="quick", command=["true"]).json()
    loop = LeaderLoop(api.world.ctx)
    drive_until(loop, running["id"], "Running")
    drive_until(loop, done["id"], "Succeeded")

    r = api.client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    samples = _samples(r.text)
    assert samples[("crater_jobs", (("phase", "Running"),))] == 1
    assert samples[("crater_jobs", (("phase", "Succeeded"),))] == 1
    assert samples[("crater_jobs", (("phase", "Cancelled"),))] == 0
    node = next(v for (name, labels), v in samples.items() if name == "crater_node_cpu_millicores")
    assert node >= 1000
    held = {labels: v for (name, labels), v in samples.items() if name == "crater_accelerators_allocated"}
    total = {labels: v for (name, labels), v in samples.items() if name == "crater_accelerators"}
    assert sum(held.values()) == 3 and sum(total.values()) == 4
    # Aggregates only: no job, user or project names leak to an unauthenticated scraper.
    for secret in ("holder", "quick", "alice", "default"):
        assert secret not in r.text

    api.client.delete(f"/api/v1/jobs/{running['id']}", headers=api.auth("alice"))
    drive_until(loop, running["id"], "Cancelled")
    after = _samples(api.client.get("/metrics").text)
    assert sum(v for (name, _), v in after.items() if name == "crater_accelerators_allocated") == 0
