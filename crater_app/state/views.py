"""Pure conversions from service schemas to the plain values console state holds (no Reflex).

State is pickled (to Redis in production) and sent to browsers, so it holds strings, numbers,
lists, dicts and small dataclasses only: never ORM rows, sessions or clients.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone

from crater_app import i18n
from crater_app.domain.times import utcnow
from crater_app.i18n.format import duration
from crater_app.schemas import JobEventPublic, JobPublic, NodePublic, UserPublic
from crater_app.state.task_views import memory_text

TERMINAL_PHASES = ("Succeeded", "Failed", "Cancelled")
#: what an empty cell shows
EMPTY = "—"


def fmt_time(value: datetime | None) -> str:
    """``YYYY-MM-DD HH:MM:SS`` in UTC, or ``""``."""
    if value is None:
        return ""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def fmt_duration(lang: object, seconds: float | int | None) -> str:
    """A duration in ``lang``, the two largest units (``1d 2h`` / ``1天2小时``, ``5m 6s``), or ``""`` for none."""
    if seconds is None or seconds == "":
        return ""
    return duration(i18n.normalize(lang), max(0, int(float(seconds))))


def fmt_bytes(value: int | None) -> str:
    """Binary units: ``80 GiB``, ``512 MiB``, ``1.5 TiB``."""
    if value is None:
        return ""
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if size == int(size) or size >= 100 else f"{size:.1f} {unit}"
        size /= 1024
    return f"{value} B"  # pragma: no cover


def fmt_cpu(millicores: int) -> str:
    """``4`` or ``1.5`` CPUs from millicores."""
    return f"{millicores / 1000:g}"


def runtime_seconds(job: JobPublic, now: datetime | None = None) -> float | None:
    """Seconds the job has run (to now when still running), or ``None`` before it started."""
    if job.started_at is None:
        return None
    end = job.finished_at or now or utcnow()
    start = job.started_at if job.started_at.tzinfo else job.started_at.replace(tzinfo=timezone.utc)
    end = end if end.tzinfo else end.replace(tzinfo=timezone.utc)
    return (end - start).total_seconds()


def gpu_summary(job: JobPublic) -> str:
    """``2 × NVIDIA-A100-SXM4-80GB``, ``2 × GPU`` (any model), or ``""`` for CPU-only jobs."""
    if not job.gpus:
        return ""
    return f"{job.gpus} × {job.accelerator_model or 'GPU'}"


def _seconds(value: float | int | None) -> str:
    return "" if value is None else str(int(value))


def job_row(job: JobPublic) -> dict[str, str]:
    """A jobs-table row (all strings; ``runtime_s`` seconds, ``""`` before it started: the page writes it in its
    language, as the ``reason`` from ``reason_code``/``reason_args``)."""
    return {
        "id": str(job.id), "name": job.name, "user": job.user, "project": job.project, "phase": job.phase,
        "reason": job.reason, "gpus": gpu_summary(job) or EMPTY, "created": fmt_time(job.created_at),
        "runtime_s": _seconds(runtime_seconds(job)), "reason_code": job.reason_code,
        "reason_args": json.dumps(job.reason_args, sort_keys=True),
    }


def job_detail(job: JobPublic) -> dict[str, str]:
    """The detail page's fields (all strings; ``""`` for unknown)."""
    res = job.resources
    return {
        "id": str(job.id), "uid": job.uid, "name": job.name, "user": job.user, "project": job.project,
        "phase": job.phase, "reason": job.reason,
        "exit_code": "" if job.exit_code is None else str(job.exit_code),
        "image": job.image, "working_dir": job.working_dir or "",
        "gpus": str(job.gpus), "model": job.accelerator_model or "",
        "devices": ", ".join(str(d) for d in job.devices),
        "cpu": str(res.get("cpu", "")), "memory": memory_text(res.get("memory")),
        "max_runtime_s": _seconds(job.max_runtime) if job.max_runtime else "",
        "priority": str(job.priority), "created": fmt_time(job.created_at), "started": fmt_time(job.started_at),
        "finished": fmt_time(job.finished_at), "runtime_s": _seconds(runtime_seconds(job)),
        "resubmitted_from": "" if job.resubmitted_from is None else str(job.resubmitted_from),
        "reason_code": job.reason_code, "reason_args": json.dumps(job.reason_args, sort_keys=True),
        "kind": job.kind, "preemptible": "yes" if job.preemptible else "", "admitted": fmt_time(job.admitted_at),
    }


def json_dict(text: str | None) -> dict:
    """A JSON object held as text in a row (``reason_args``, an event's ``args``): the dict, ``{}`` when empty or
    not an object."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def reason_args(row: dict[str, str]) -> dict:
    """The ``reason_args`` a :func:`job_row`/:func:`job_detail` dict carries as JSON text (``{}`` when none)."""
    return json_dict(row.get("reason_args"))


def durations(lang: object, row: dict[str, str], empty: str = "") -> dict[str, str]:
    """``row`` (:func:`job_row`/:func:`job_detail`) with ``runtime`` and ``max_runtime`` written in ``lang`` from
    its ``runtime_s``/``max_runtime_s`` (``empty`` where there is none)."""
    out = dict(row)
    for name in ("runtime", "max_runtime"):
        if f"{name}_s" in row:
            out[name] = fmt_duration(lang, row[f"{name}_s"] or None) or empty
    return out


def event_row(event: JobEventPublic) -> dict[str, str]:
    """A timeline entry (all strings; the message also as ``code`` and JSON ``args``, written in the viewer's
    language by ``state.messages.event_rows``)."""
    return {"id": str(event.id), "at": fmt_time(event.at), "phase": event.phase, "reason": event.reason,
            "message": event.message, "code": event.code, "args": json.dumps(event.args, sort_keys=True)}


def event_args(row: dict[str, str]) -> dict:
    """The ``args`` an :func:`event_row` dict carries as JSON text (``{}`` when none)."""
    return json_dict(row.get("args"))


@dataclasses.dataclass
class DeviceView:
    """One accelerator row on the nodes page."""

    index: str
    model: str
    memory: str
    uuid: str
    busy: bool
    held: bool
    job_id: str
    job_name: str
    user: str
    virtual: bool


@dataclasses.dataclass
class NodeView:
    """One node card on the nodes page."""

    name: str
    backend: str
    device_source: str
    cpu: str
    cpu_allocated: str
    cpu_percent: int
    memory: str
    memory_allocated: str
    memory_percent: int
    gpus_total: int
    gpus_busy: int
    models: str
    devices: list[DeviceView]


def _percent(part: int, whole: int) -> int:
    return 0 if whole <= 0 else max(0, min(100, round(100 * part / whole)))


def node_view(node: NodePublic) -> NodeView:
    """A node card with its devices."""
    return NodeView(
        name=node.name, backend=node.backend, device_source=node.device_source, cpu=fmt_cpu(node.cpu_m),
        cpu_allocated=fmt_cpu(node.cpu_m_allocated), cpu_percent=_percent(node.cpu_m_allocated, node.cpu_m),
        memory=fmt_bytes(node.memory_bytes), memory_allocated=fmt_bytes(node.memory_bytes_allocated),
        memory_percent=_percent(node.memory_bytes_allocated, node.memory_bytes),
        gpus_total=len(node.devices), gpus_busy=sum(1 for d in node.devices if d.busy),
        models=", ".join(node.models),
        devices=[
            DeviceView(
                index=str(d.index), model=d.model, memory=fmt_bytes(d.memory_bytes) if d.memory_bytes else "—",
                uuid=d.uuid, busy=d.busy, held=d.job_id is not None,
                job_id="" if d.job_id is None else str(d.job_id), job_name=d.job_name or "", user=d.user or "",
                virtual=d.virtual,
            )
            for d in node.devices
        ],
    )


def accelerator_choices(nodes: list[NodePublic]) -> list[dict[str, str]]:
    """Per accelerator model: the largest count one node offers (gang: a job's devices share a node),
    how many of them are free now, and the resource name — for the new-job form."""
    best: dict[str, dict[str, str]] = {}
    for node in nodes:
        by_model: dict[str, list] = {}
        for d in node.devices:
            by_model.setdefault(d.model, []).append(d)
        for model, devices in by_model.items():
            total, free = len(devices), sum(1 for d in devices if not d.busy)
            current = best.get(model)
            if current is None or total > int(current["max"]):
                best[model] = {"model": model, "max": str(total), "free": str(free), "resource": devices[0].resource}
    return [best[m] for m in sorted(best)]


def user_row(user: UserPublic) -> dict[str, str]:
    """An admin users-table row."""
    return {
        "id": str(user.id), "username": user.username, "display_name": user.display_name, "email": user.email,
        "role": user.role, "status": user.status, "project": user.default_project or "",
        "created": fmt_time(user.created_at),
    }
