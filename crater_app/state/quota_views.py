"""Pure conversions for the project page's Quota card, its "Edit quota" dialog and the member "Share" dialog (no
Reflex, no I/O).

A quota (``services.quotas``) is three resource lists, ``guarantee <= deserved <= capability`` (Volcano Queue
spec), whose keys are ``cpu``, ``memory``, an accelerator name (``nvidia.com/gpu``) or an accelerator name with a
model (``nvidia.com/gpu:NVIDIA-A100-SXM4-80GB``). The card shows one row per key with the admitted usage and a bar
against the capability; the dialogs edit rows of quantity text and turn them back into the service's body.
Validation of quantities and of the ``guarantee <= deserved <= capability`` order is the service's
(:func:`crater_app.domain.quota.parse_quota`); these helpers only shape rows and place the service's errors on
the row and column they name. All values are strings (console state is pickled and sent to browsers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crater_app import i18n
from crater_app.domain import quota as q
from crater_app.domain.errors import InvalidInput
from crater_app.domain.resources import CPU, MEMORY
from crater_app.i18n import format as fmt
from crater_app.schemas import ProjectQuotaPublic
from crater_app.state.forms import FormError

#: the columns of an "Edit quota" dialog row (besides ``resource``), in the order shown
QUOTA_COLUMNS = q.SECTIONS
#: binary suffixes tried (largest first) when memory bytes are shown as quantity text
_BINARY = (("Ti", 1024 ** 4), ("Gi", 1024 ** 3), ("Mi", 1024 ** 2), ("Ki", 1024))
#: rows a dialog may hold (the service's own limit on keys per list)
MAX_ROWS = q.MAX_QUOTA_KEYS


def _sort_key(key: str) -> tuple[int, str]:
    """cpu, memory, then accelerator keys alphabetically (a name comes right before its models)."""
    return ({CPU: 0, MEMORY: 1}.get(key, 2), key)


def _usage(raw: Mapping[str, str], section: str) -> q.Usage:
    """A stored resource list as a usage; a list the service stored is always valid, anything else is skipped."""
    try:
        return q.parse_quota_list(dict(raw), section)
    except InvalidInput:
        return {}


def amount_text(lang: object, key: str, amount: int) -> str:
    """An amount of ``key`` in ``lang`` for a table cell whose row already names the resource: cpu ``4 cores`` /
    ``4 核``, ``0.5 cores``; memory ``16 GiB`` (binary units); accelerators the bare device count (``"2"``)."""
    if key == CPU:
        return fmt.cpu(i18n.normalize(lang), amount)
    if key == MEMORY:
        return fmt.size(i18n.normalize(lang), amount)
    return str(amount)


def quantity_text(key: str, amount: int) -> str:
    """An amount as quantity text for an input (what the service parses back to ``amount``): cpu ``"4"`` or
    ``"500m"``; memory with the largest binary suffix that divides it exactly (``"64Gi"``, else bytes);
    accelerators the device count."""
    if key == CPU:
        return q.render_quota_list({CPU: amount})[CPU]
    if key == MEMORY:
        for suffix, size in _BINARY:
            if amount and amount % size == 0:
                return f"{amount // size}{suffix}"
    return str(amount)


def percent(used: int, limit: int | None) -> int:
    """``used`` as a whole percentage of ``limit`` (0..100, rounded down, capped); ``0`` when there is no limit
    (``None``); ``100`` for any use of a limit of ``0``."""
    if limit is None:
        return 0
    if limit <= 0:
        return 100 if used > 0 else 0
    return min(100, used * 100 // limit)


def quota_rows(quota: ProjectQuotaPublic, lang: object = i18n.DEFAULT_LANGUAGE) -> list[dict[str, str]]:
    """The Quota card's rows in ``lang``, one per key present in any of guarantee, deserved, capability or used.

    Each row: ``key`` (as stored), ``resource`` (name without model), ``model`` (``""`` when none),
    ``guarantee``/``deserved``/``used`` (:func:`amount_text`; ``""`` where the section omits the key, shown as
    zero/none by the page), ``capability`` (``""``: no ceiling), ``percent`` (used of capability, ``"0"`` without
    a ceiling, see :func:`percent`), ``level`` (``none`` without a ceiling, ``ok`` below 80 %, ``high`` from 80 %,
    ``full`` when no more fits: at or over the capability, or a capability of 0).
    """
    sections = {name: _usage(getattr(quota, name), name) for name in (*q.SECTIONS, "used")}
    keys = sorted(set().union(*sections.values()), key=_sort_key)
    rows = []
    for key in keys:
        resource, model = q.split_key(key)
        cap = sections["capability"].get(key)
        used = sections["used"].get(key, 0)
        pct = percent(used, cap)
        if cap is None:
            level = "none"
        elif used >= cap:
            level = "full"
        else:
            level = "high" if pct >= 80 else "ok"
        row = {"key": key, "resource": resource, "model": model or "", "percent": str(pct), "level": level,
               "used": amount_text(lang, key, used)}
        for name in q.SECTIONS:
            amount = sections[name].get(key)
            row[name] = "" if amount is None else amount_text(lang, key, amount)
        rows.append(row)
    return rows


def blank_quota_row(resource: str = "") -> dict[str, str]:
    """An empty "Edit quota" dialog row: ``resource``, ``guarantee``, ``deserved``, ``capability`` (quantity
    text), ``error`` and ``error_col`` (the column an error is shown under, ``""`` for none)."""
    return {"resource": resource, **{name: "" for name in QUOTA_COLUMNS}, "error": "", "error_col": ""}


def quota_editor_rows(quota: ProjectQuotaPublic | None) -> list[dict[str, str]]:
    """The "Edit quota" dialog's rows for the stored quota (one per key of guarantee/deserved/capability, cells as
    :func:`quantity_text`, ``""`` where a section omits the key); one ``nvidia.com/gpu`` row when there is none."""
    if quota is None:
        return [blank_quota_row("nvidia.com/gpu")]
    sections = {name: _usage(getattr(quota, name), name) for name in q.SECTIONS}
    keys = sorted(set().union(*sections.values()), key=_sort_key)
    rows = []
    for key in keys:
        row = blank_quota_row(key)
        for name in q.SECTIONS:
            if key in sections[name]:
                row[name] = quantity_text(key, sections[name][key])
        rows.append(row)
    return rows or [blank_quota_row("nvidia.com/gpu")]


def _check_keys(rows: Sequence[Mapping[str, str]], columns: Sequence[str]) -> list[str]:
    """The stripped resource name of every row; FormError (field ``<row>.resource``) for a row with amounts but
    no name, or a name given twice."""
    if len(rows) > MAX_ROWS:
        raise FormError("quota.error.rows", "", limit=MAX_ROWS)
    names: list[str] = []
    for index, row in enumerate(rows):
        name = str(row.get("resource", "")).strip()
        filled = any(str(row.get(col, "")).strip() for col in columns)
        if not name and filled:
            raise FormError("quota.error.resource_required", f"{index}.resource")
        if name and name in names:
            raise FormError("quota.error.duplicate", f"{index}.resource", resource=name)
        names.append(name)
    return names


def quota_body(rows: Sequence[Mapping[str, str]]) -> dict[str, dict[str, str]]:
    """The body of ``services.quotas.set_quota`` from the dialog's rows: ``{"guarantee": {key: text}, "deserved":
    {...}, "capability": {...}}``. Blank cells are left out (zero guarantee/deserved, no ceiling); rows with no
    resource name and no amounts are ignored. Quantities are passed as typed; the service checks them.

    Raises:
        FormError: ``quota.error.resource_required`` (amounts without a resource name) or ``quota.error.duplicate``
        (a name given twice), field ``<row index>.resource``; ``quota.error.rows`` (more than :data:`MAX_ROWS`).
    """
    names = _check_keys(rows, QUOTA_COLUMNS)
    body: dict[str, dict[str, str]] = {name: {} for name in QUOTA_COLUMNS}
    for name, row in zip(names, rows):
        for col in QUOTA_COLUMNS:
            text = str(row.get(col, "")).strip()
            if name and text:
                body[col][name] = text
    return body


def blank_share_row(resource: str = "") -> dict[str, str]:
    """An empty "Share" dialog row: ``resource``, ``amount`` (quantity text), ``error``, ``error_col``."""
    return {"resource": resource, "amount": "", "error": "", "error_col": ""}


def share_editor_rows(share: Mapping[str, str]) -> list[dict[str, str]]:
    """The "Share" dialog's rows for a member's stored share (one ``nvidia.com/gpu`` row when it is empty)."""
    usage = _usage(share, "share")
    rows = [{**blank_share_row(key), "amount": quantity_text(key, usage[key])} for key in sorted(usage, key=_sort_key)]
    return rows or [blank_share_row("nvidia.com/gpu")]


def share_body(rows: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """The ``share`` of ``services.projects.set_member`` from the dialog's rows (``{}``: no per-member limit).

    Raises:
        FormError: as :func:`quota_body`.
    """
    names = _check_keys(rows, ("amount",))
    return {name: str(row.get("amount", "")).strip() for name, row in zip(names, rows)
            if name and str(row.get("amount", "")).strip()}


def share_text(lang: object, share: Mapping[str, str]) -> str:
    """A member's share for the members table in ``lang``: ``"2 × nvidia.com/gpu, 4 cores"`` /
    ``"2 × nvidia.com/gpu、4 核 CPU"``, ``""`` when the member has none."""
    usage = _usage(share, "share")
    return fmt.resources(i18n.normalize(lang), usage) if usage else ""


def edited(row: Mapping[str, str], column: str, value: str) -> dict[str, str]:
    """``row`` with ``column`` set to ``value`` (cut to 256 characters); an error shown under that cell goes (the user
    changed what it was about), one under another cell of the row stays."""
    out = {**row, column: str(value)[:256]}
    if out.get("error_col") == column:
        out["error"], out["error_col"] = "", ""
    return out


def place_error(rows: Sequence[Mapping[str, str]], field: str, message: str,
                columns: Sequence[str]) -> tuple[list[dict[str, str]], bool]:
    """Put an error on the dialog row and column it names; clear every other row's error.

    ``field`` is a form error's (``"<index>.resource"``) or the service's (``"<section>.<key>"`` such as
    ``capability.nvidia.com/gpu``, ``share.cpu``; the key as the row wrote it). For ``share.<key>`` the column is
    ``amount``. Returns the new rows and whether the error was placed (else the page shows it above the rows).
    """
    out = [{**row, "error": "", "error_col": ""} for row in rows]
    index, col = -1, ""
    head, _, rest = field.partition(".")
    if head.isdigit() and rest:
        index, col = int(head), rest
    elif head in columns or head == "share":
        col = "amount" if head == "share" else head
        index = next((i for i, row in enumerate(rows) if str(row.get("resource", "")).strip() == rest), -1)
    if 0 <= index < len(out):
        out[index]["error"], out[index]["error_col"] = message, col
        return out, True
    return out, False
