"""The job page's replicas table and its log selector (pure: no Reflex, no I/O).

A replica is picked by its key ``<task>/<index>`` (``worker/1``): task names are DNS-1123 labels, so a ``/`` never
appears in one. Phases and reasons are shown in the console's language (``replica.phase.<Word>``,
``reason.<Word>``), the backend's own word when the catalogue has none.
"""

from __future__ import annotations

from crater_app import i18n
from crater_app.schemas.replicas import ReplicaPublic
from crater_app.state.messages import reason_text

#: catalogue keys of replica phases are ``replica.phase.<Word>``
PHASE_PREFIX = "replica.phase."


def replica_key(task: str, replica: int | str) -> str:
    """The selector key of a replica: ``<task>/<index>``."""
    return f"{task}/{replica}"


def parse_key(key: str) -> tuple[str | None, int]:
    """``(task, index)`` of a selector key; ``(None, 0)`` (the first task's first replica) for ``""`` or a key that
    is not one."""
    task, _, index = key.rpartition("/")
    if not task or not index.isdigit() or len(index) > 6:
        return None, 0
    return task, int(index)


def replica_row(r: ReplicaPublic) -> dict[str, str]:
    """One table row of a replica, every value a string: ``key``, ``task``, ``replica``, ``phase`` (the word),
    ``node``, ``devices`` (``0, 1``), ``exit_code`` (``""`` while it runs), ``reason`` (the word), ``message``,
    ``restarts``."""
    return {
        "key": replica_key(r.task, r.replica), "task": r.task, "replica": str(r.replica), "phase": r.phase,
        "node": r.node, "devices": ", ".join(str(d) for d in r.devices),
        "exit_code": "" if r.exit_code is None else str(r.exit_code), "reason": r.reason, "message": r.message,
        "restarts": str(r.restarts),
    }


def localized_rows(lang: object, rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """``rows`` (:func:`replica_row`) with ``phase_text`` and ``reason_text`` in ``lang`` (the word itself when the
    catalogue has none)."""
    return [{**row, "phase_text": i18n.lookup(lang, PHASE_PREFIX + row["phase"]) or row["phase"],
             "reason_text": reason_text(lang, row["reason"])} for row in rows]


def shown_key(rows: list[dict[str, str]], task: str | None, replica: int) -> str:
    """The key of the replica a log read for ``task``/``replica`` belongs to (``task`` ``None``: the first task's
    first replica, the first row)."""
    if task is not None:
        return replica_key(task, replica)
    return rows[0]["key"] if rows else ""


def chosen_key(rows: list[dict[str, str]], current: str) -> str:
    """The replica whose log the page shows: ``current`` while the job has it, else the first replica (``""`` when
    there are none: the job's log as before tasks)."""
    keys = [row["key"] for row in rows]
    if current in keys:
        return current
    return keys[0] if keys else ""
