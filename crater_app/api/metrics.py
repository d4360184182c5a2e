"""``/metrics`` in the Prometheus text exposition format (rendered by ``prometheus_client``).

Only aggregates are exposed (jobs per phase, node and accelerator capacity/allocation), never names of
jobs, users or projects, so that a Prometheus server can scrape it without a Crater token.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, generate_latest

from crater_app.services.metrics import PlatformFigures


def render(figures: PlatformFigures) -> tuple[bytes, str]:
    """``(body, content type)`` for ``figures``. Metric names follow Prometheus' naming guide (base units:
    bytes, cores as millicores are exported as ``*_millicores``)."""
    registry = CollectorRegistry()
    jobs = Gauge("crater_jobs", "Jobs by phase.", ["phase"], registry=registry)
    for phase, count in figures.jobs_by_phase.items():
        jobs.labels(phase).set(count)
    cpu = Gauge("crater_node_cpu_millicores", "CPU capacity of a node.", ["node"], registry=registry)
    cpu_used = Gauge("crater_node_cpu_allocated_millicores", "CPU requested by running jobs.", ["node"], registry=registry)
    mem = Gauge("crater_node_memory_bytes", "Memory capacity of a node.", ["node"], registry=registry)
    mem_used = Gauge("crater_node_memory_allocated_bytes", "Memory requested by running jobs.", ["node"], registry=registry)
    acc = Gauge("crater_accelerators", "Accelerator devices.", ["node", "resource", "model"], registry=registry)
    acc_used = Gauge("crater_accelerators_allocated", "Accelerator devices held by running jobs.",
                     ["node", "resource", "model"], registry=registry)
    for node in figures.nodes:
        cpu.labels(node.name).set(node.cpu_m)
        cpu_used.labels(node.name).set(node.cpu_m_allocated)
        mem.labels(node.name).set(node.memory_bytes)
        mem_used.labels(node.name).set(node.memory_bytes_allocated)
        for (resource, model), (total, used) in node.accelerators.items():
            acc.labels(node.name, resource, model).set(total)
            acc_used.labels(node.name, resource, model).set(used)
    return generate_latest(registry), CONTENT_TYPE_LATEST
