"""The job page's tasks: one block per task of a job with several (name, replicas, per-replica resources, the
argument list it runs), its memory written as a size, and the restarts of the replica whose log is shown (pure:
no Reflex, no I/O)."""

from __future__ import annotations

import json

from crater_app.domain.errors import InvalidInput
from crater_app.domain.resources import parse_amount, parse_resources
from crater_app import i18n
from crater_app.i18n import format as fmt
from crater_app.schemas import JobPublic


def memory_text(quantity: object) -> str:
    """A memory quantity as the job gives it (``"1610612736"``, ``"4Gi"``, ``512``) as a size in binary units
    (``1.5 GiB``, ``4 GiB``, ``512 B``; the same in both languages); ``""`` for none; a value that is not a
    quantity as written."""
    if quantity is None or quantity == "":
        return ""
    try:
        return fmt.size("en", parse_amount("memory", quantity, "resources.memory"))
    except InvalidInput:
        return str(quantity)


def task_rows(job: JobPublic) -> tuple[list[dict[str, str]], list[list[str]]]:
    """The blocks of a job with more than one task, in the job's order, and each task's argument list (``command``
    then ``args``, index for index with the blocks); ``([], [])`` for a single-task job (the page shows its
    ``command`` as before). A block: ``name``, ``replicas`` (a count), ``resources`` (the per-replica resource
    list as submitted, JSON text; written in the reader's language by :func:`localized_tasks`)."""
    if len(job.tasks) < 2:
        return [], []
    rows, argvs = [], []
    for task in job.tasks:
        rows.append({"name": str(task.get("name", "")), "replicas": str(task.get("replicas", 1)),
                     "resources": json.dumps(task.get("resources") or {}, sort_keys=True)})
        argvs.append([str(a) for a in [*(task.get("command") or []), *(task.get("args") or [])]])
    return rows, argvs


def _amounts(resources: dict) -> dict:
    """A resource list as submitted in Crater's units (``cpu`` millicores, ``memory`` bytes, devices), or as
    given when it does not parse (an old row)."""
    try:
        parsed = parse_resources(resources)
    except InvalidInput:
        return resources
    amounts: dict = dict(parsed.accelerators)
    if parsed.cpu_m:
        amounts["cpu"] = parsed.cpu_m
    if parsed.memory_bytes:
        amounts["memory"] = parsed.memory_bytes
    return amounts


def localized_tasks(lang: object, rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """``rows`` (:func:`task_rows`) with ``resources_text``: the per-replica resources in ``lang``
    (``1 × nvidia.com/gpu, 0.5 cores, 512 MiB memory``; ``nothing``/``无`` when none)."""
    out = []
    for row in rows:
        try:
            resources = json.loads(row.get("resources") or "{}")
        except ValueError:
            resources = {}
        amounts = _amounts(resources if isinstance(resources, dict) else {})
        out.append({**row, "resources_text": fmt.resources(i18n.normalize(lang), amounts)})
    return out


def log_restarts(rows: list[dict[str, str]], key: str) -> str:
    """The restarts of the replica whose log is shown (``key``; ``""``: the first row), ``""`` when it has not
    restarted or is not in ``rows`` (:func:`crater_app.state.replica_views.replica_row`)."""
    for row in rows:
        if key in ("", row["key"]):
            return "" if row.get("restarts", "0") in ("", "0") else row["restarts"]
    return ""
