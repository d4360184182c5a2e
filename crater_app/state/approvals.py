"""/approvals: requests (list, decide, ask; one service call per handler), and the pure helpers that turn the
new-request form into the service's arguments and a request into a table row. The bell of the top bar is
:mod:`crater_app.state.notifications`."""

from __future__ import annotations

import json

import reflex as rx

from crater_app import i18n
from crater_app.domain.errors import CraterError, Unauthenticated
from crater_app.schemas import ApprovalPublic
from crater_app.services import approvals, projects
from crater_app.state import views
from crater_app.state.base import AppState, turn_page
from crater_app.state.field_errors import FieldErrors, FieldMap
from crater_app.state.forms import FormError
from crater_app.state.notifications import NotificationsState

#: the kinds a user asks for in the console (``large_job`` requests come from submitting a large job)
FORM_KINDS = ("extend_runtime", "reclaim_lock", "quota")
QUOTA_SECTIONS = ("capability", "deserved", "guarantee")
STATUS_FILTERS = ("pending", "all")
KIND_KEYS = {"quota": "approvals.kind.quota", "extend_runtime": "approvals.kind.extend_runtime",
             "reclaim_lock": "approvals.kind.reclaim_lock", "large_job": "approvals.kind.large_job"}
SECTION_KEYS = {"capability": "approvals.section.capability", "deserved": "approvals.section.deserved",
                "guarantee": "approvals.section.guarantee"}
STATUS_KEYS = {"pending": "approvals.status.pending", "approved": "approvals.status.approved",
               "rejected": "approvals.status.rejected", "closed": "approvals.status.closed"}
#: the new-request and decision forms' inputs and the service's field paths each shows the errors of
#: (``payload.max_runtime`` before the rest of the payload, a quota request's resource list)
APPROVAL_FIELDS: FieldMap = (
    ("kind", ("kind",)), ("project", ("project",)), ("job_id", ("job_id",)), ("max_runtime", ("payload.max_runtime",)),
    ("resources", ("payload", "resources")), ("reason", ("reason",)), ("note", ("note",)),
)


def parse_resource_text(text: str) -> dict[str, str]:
    """``name=quantity`` (or ``name: quantity``) entries, separated by commas or new lines, into a resource list
    (``"nvidia.com/gpu=8, cpu=64"`` -> ``{"nvidia.com/gpu": "8", "cpu": "64"}``); the service checks the names
    and quantities.

    Raises:
        FormError: an entry without ``=``/``:`` after the name, or no entry at all (field ``resources``).
    """
    out: dict[str, str] = {}
    entries = [e.strip() for line in text.replace("\r", "").split("\n") for e in line.split(",")]
    for number, entry in enumerate((e for e in entries if e), start=1):
        if "=" in entry:
            name, _, value = entry.partition("=")
        else:  # "nvidia.com/gpu:A100: 4" -> the last colon separates the quantity
            name, sep, value = entry.rpartition(":")
            if not sep:
                raise FormError("approvals.error.resource_entry", "resources", entry=number)
        if not name.strip() or not value.strip():
            raise FormError("approvals.error.resource_entry", "resources", entry=number)
        out[name.strip()] = value.strip()
    if not out:
        raise FormError("approvals.error.resources_required", "resources")
    return out


def request_arguments(kind: str, form: dict, project: str, section: str) -> dict:
    """The keyword arguments of ``services.approvals.create_request`` from the new-request form's fields
    (``reason``, ``job_id``, ``max_runtime``, ``resources``) and the chosen ``project`` and quota ``section``.

    Raises:
        FormError: the job id is not a number, or the resource list cannot be read.
    """
    args: dict = {"kind": kind, "reason": str(form.get("reason", ""))}
    if kind == "quota":
        args["project"] = project or None
        args["payload"] = {section: parse_resource_text(str(form.get("resources", "")))}
        return args
    job = str(form.get("job_id", "")).strip().lstrip("#")
    if not job.isdigit() or len(job) > 18:
        raise FormError("approvals.error.job_id", "job_id")
    args["job_id"] = int(job)
    if kind == "extend_runtime":
        args["payload"] = {"max_runtime": str(form.get("max_runtime", "")).strip()}
    return args


def value_text(lang: object, row: dict[str, str]) -> str:
    """What is asked, in a few words in ``lang``, from an :func:`approval_row` (``24h → 36h``, ``capability:
    nvidia.com/gpu=8``, ``16 × GPU``)."""
    kind, payload, current = row.get("kind"), views.json_dict(row.get("payload")), views.json_dict(row.get("current"))
    if kind == "extend_runtime":
        now = current.get("max_runtime") if row.get("status") == "pending" else None
        asked = views.fmt_duration(lang, payload.get("max_runtime"))
        return f"{views.fmt_duration(lang, now)} → {asked}" if now else asked
    if kind == "quota":
        return "; ".join(f"{i18n.translate(lang, 'quota.col.' + section)}: " + ", ".join(
            f"{k}={v}" for k, v in entries.items()) for section, entries in payload.items() if isinstance(entries, dict))
    if kind == "large_job":
        gpus = payload.get("gpus", current.get("gpus"))
        return f"{gpus} × GPU" if gpus else ""
    return ""


def approval_row(a: ApprovalPublic) -> dict[str, str]:
    """A requests-table row (all strings; ``can_decide`` is ``"1"`` or ``""``). What is asked and the decision
    note are kept as the service gave them (``payload``, ``current``, ``decision`` as JSON) and written in the
    console's language by :func:`row_texts`."""
    if a.kind == "quota":
        target = a.project or ""
    else:
        target = f"{a.job_name or ''} #{a.job_id}" if a.job_id else ""
    decision = {"code": a.decision_code, "args": a.decision_args, "note": a.decision_note}
    request = {"code": a.reason_code, "args": a.reason_args}
    return {
        "id": str(a.id), "kind": a.kind, "status": a.status, "requester": a.requester, "project": a.project or "",
        "target": target.strip(), "job_id": str(a.job_id or ""), "reason": a.reason,
        "auto": "1" if a.auto else "", "decided_by": a.decided_by or "",
        "payload": json.dumps(a.payload, sort_keys=True), "current": json.dumps(a.current, sort_keys=True),
        "decision": json.dumps(decision, sort_keys=True), "request": json.dumps(request, sort_keys=True),
        "created": views.fmt_time(a.created_at), "decided": views.fmt_time(a.decided_at),
        "can_decide": "1" if a.can_decide else "",
    }


def note_text(lang: object, row: dict[str, str]) -> str:
    """The decision note of an :func:`approval_row` in ``lang``: a note Crater wrote itself (closed, approved by the
    rule) from its code, a decider's own note as written (``services.approvals.note_text``)."""
    decision = views.json_dict(row.get("decision"))
    code, args, note = decision.get("code") or "", decision.get("args") or {}, str(decision.get("note") or "")
    if not code or not isinstance(args, dict):
        return note
    return i18n.render(lang, "decision." + str(code), args, fallback=note)


def reason_text(lang: object, row: dict[str, str]) -> str:
    """The reason of an :func:`approval_row` in ``lang``: a reason Crater wrote itself (a large job) from its code,
    a requester's own words as written (``services.approvals.notices.reason_text``)."""
    request = views.json_dict(row.get("request"))
    code, args = request.get("code") or "", request.get("args") or {}
    if not code or not isinstance(args, dict):
        return row.get("reason", "")
    return i18n.render(lang, "request." + str(code), args, fallback=row.get("reason", ""))


def row_texts(lang: object, row: dict[str, str]) -> dict[str, str]:
    """``row`` with ``kind_text``, ``status_text``, ``value``, ``note`` and ``reason`` in ``lang``."""
    return {**row, "kind_text": i18n.translate(lang, KIND_KEYS.get(row["kind"], row["kind"])),
            "status_text": i18n.translate(lang, STATUS_KEYS.get(row["status"], row["status"])),
            "value": value_text(lang, row), "note": note_text(lang, row), "reason": reason_text(lang, row)}


class ApprovalsState(FieldErrors, AppState):
    """/approvals: the requests the caller may read (pending or all), decisions with a note, new requests (the
    forms' errors beside their fields: :class:`FieldErrors`)."""

    FIELDS = APPROVAL_FIELDS
    rows: list[dict[str, str]] = []
    total: int = 0
    page: int = 1
    page_size: int = 20
    status_filter: str = "pending"
    mine_only: bool = False
    loaded: bool = False
    error: str = ""
    # The new-request dialog.
    new_open: bool = False
    new_kind: str = "extend_runtime"
    new_project: str = ""
    new_section: str = "capability"
    new_job_id: str = ""
    project_options: list[str] = []
    form_key: int = 0
    # The decision dialog.
    decide_open: bool = False
    decide_id: str = ""
    decide_action: str = "approve"
    decide_error: str = ""

    @rx.var
    def view_rows(self) -> list[dict[str, str]]:
        """The rows with kind and status words in the console's language."""
        lang = self.lang
        return [row_texts(lang, r) for r in self.rows]

    @rx.var
    def page_count(self) -> int:
        """Number of pages (at least 1)."""
        return max(1, -(-self.total // self.page_size))

    async def _list(self):
        page, stop = await self.guarded(
            approvals.list_approvals, status=None if self.status_filter == "all" else self.status_filter,
            mine=self.mine_only, page=self.page, page_size=self.page_size)
        if page is None:
            return stop
        self.rows = [approval_row(a) for a in page.items]
        self.total = page.total
        self.loaded = True
        return None

    @rx.event
    async def load(self):
        """on_load: ``?status=all`` shows every request; ``?new=extend_runtime&job=<id>`` opens the request form
        for that job (the job page's "Request more time")."""
        self.error = ""
        params = dict(self.router.url.query_parameters)
        self.status_filter = params.get("status") if params.get("status") in STATUS_FILTERS else "pending"
        self.page = 1
        if params.get("new") in FORM_KINDS:
            self.new_kind = params["new"]
            job = str(params.get("job", ""))
            self.new_job_id = job if job.isdigit() and len(job) < 19 else ""
            self._clear_errors()
            self.form_key += 1
            self.new_open = True
        return await self._list()

    @rx.event
    async def reload(self):
        """Read the current page again."""
        self.error = ""
        return await self._list()

    @rx.event
    async def set_status_filter(self, value: str | list[str]):
        """Pending only, or every request."""
        value = value[0] if isinstance(value, list) else value
        if value in STATUS_FILTERS:
            self.status_filter, self.page = value, 1
            return await self._list()
        return None

    @rx.event
    async def set_mine_only(self, value: bool):
        """Only the caller's own requests."""
        self.mine_only, self.page = bool(value), 1
        return await self._list()

    @rx.event
    async def next_page(self):
        """The next page of requests."""
        return await turn_page(self, 1, self._list)

    @rx.event
    async def prev_page(self):
        """The previous page of requests."""
        return await turn_page(self, -1, self._list)

    # ---- new request ----------------------------------------------------------------------------------------
    @rx.event
    async def set_new_open(self, open_: bool):
        """Open (listing the caller's projects for quota requests) or close the new-request dialog."""
        self.new_open = bool(open_)
        self._clear_errors()
        if not self.new_open:
            return None
        found, stop = await self.submitted(projects.list_projects)
        if found is None:
            return stop
        self.project_options = [p.name for p in found if not p.expired]
        if self.new_project not in self.project_options:
            self.new_project = self.project_options[0] if self.project_options else ""
        return None

    @rx.event
    def set_new_kind(self, kind: str) -> None:
        """The kind of the request to make."""
        if kind in FORM_KINDS:
            self.new_kind = kind
            self._clear_errors()

    @rx.event
    def set_new_project(self, project: str) -> None:
        """The project a quota request is for."""
        self._forget_field_error("project")
        if project in self.project_options:
            self.new_project = project

    @rx.event
    def set_new_section(self, section: str) -> None:
        """Which quota section the resource list sets."""
        self._forget_field_error("resources")
        if section in QUOTA_SECTIONS:
            self.new_section = section

    @rx.event
    async def create(self, form: dict):
        """Make the request; an automatic approval is said so in the toast."""
        self._clear_errors()
        try:
            args = request_arguments(self.new_kind, form, self.new_project, self.new_section)
        except FormError as exc:
            self._form_failed(exc)
            return None
        created, stop = await self.submitted(approvals.create_request, **args)
        if created is None:
            return stop
        self.new_open = False
        self.new_job_id = ""
        self.form_key += 1
        key = "approvals.created.auto" if created.auto else "approvals.created"
        await self._list()
        return [rx.toast.success(self.msg(key, id=created.id)), NotificationsState.refresh]

    # ---- decisions -------------------------------------------------------------------------------------------
    @rx.event
    def open_decision(self, approval_id: str, action: str) -> None:
        """Open the approve/reject dialog for request ``approval_id``."""
        if action in ("approve", "reject") and approval_id.isdigit():
            self.decide_id, self.decide_action = approval_id, action
            self.decide_error = ""
            self._forget_field_error("note")
            self.decide_open = True

    @rx.event
    def set_decide_open(self, open_: bool) -> None:
        """Close (or keep open) the decision dialog."""
        self.decide_open = bool(open_)

    @rx.event
    async def decide(self, form: dict):
        """Approve or reject with the note from the dialog, then reload the list."""
        self.decide_error = ""
        self._forget_field_error("note")
        if not self.decide_id.isdigit():
            return None
        fn = approvals.approve if self.decide_action == "approve" else approvals.reject
        try:
            done = await self.call(fn, int(self.decide_id), str(form.get("note", "")))
        except Unauthenticated:
            return self.signed_out()
        except CraterError as exc:
            if exc.field == "note":
                self.field_errors = {"note": exc.message_in(self.lang)}
                return None
            self.decide_error = exc.message_in(self.lang)
            await self._list()  # e.g. it was closed meanwhile: show its new status
            return None
        self.decide_open = False
        await self._list()
        key = "approvals.decided.approved" if done.status == "approved" else "approvals.decided.rejected"
        return rx.toast.success(self.msg(key, id=done.id))
