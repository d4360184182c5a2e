"""/approvals (requests: list, decide, ask) and the notification bell of the top bar (one service call per handler).

Pure helpers first (form text -> request arguments, request -> table row), then the two Reflex states.
"""

from __future__ import annotations

import asyncio
import time

import reflex as rx

from crater_app import i18n
from crater_app.schemas import ApprovalPublic, NotificationPublic
from crater_app.domain.errors import CraterError, Forbidden, Unauthenticated
from crater_app.services import approvals, notifications, projects
from crater_app.state import messages, views
from crater_app.state.base import POLL_MAX_S, AppState, call_as, client_connected, turn_page
from crater_app.state.forms import FormError

#: the kinds a user asks for in the console (``large_job`` requests come from submitting a large job)
FORM_KINDS = ("extend_runtime", "reclaim_lock", "quota")
QUOTA_SECTIONS = ("capability", "deserved", "guarantee")
STATUS_FILTERS = ("pending", "all")
#: seconds between background re-reads of the bell; how many notifications its menu lists
NOTIFY_POLL_S = 30.0
NOTIFY_LIST = 20
KIND_KEYS = {"quota": "approvals.kind.quota", "extend_runtime": "approvals.kind.extend_runtime",
             "reclaim_lock": "approvals.kind.reclaim_lock", "large_job": "approvals.kind.large_job"}
SECTION_KEYS = {"capability": "approvals.section.capability", "deserved": "approvals.section.deserved",
                "guarantee": "approvals.section.guarantee"}
STATUS_KEYS = {"pending": "approvals.status.pending", "approved": "approvals.status.approved",
               "rejected": "approvals.status.rejected", "closed": "approvals.status.closed"}
NOTIFY_KEYS = {"approval.requested": "notify.approval.requested", "approval.approved": "notify.approval.approved",
               "approval.rejected": "notify.approval.rejected", "approval.closed": "notify.approval.closed"}


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


def _value_text(a: ApprovalPublic) -> str:
    """What is asked, in a few words (numbers and names, no language)."""
    if a.kind == "extend_runtime":
        now = a.current.get("max_runtime") if a.status == "pending" else None
        asked = views.fmt_duration(a.payload.get("max_runtime"))
        return f"{views.fmt_duration(now)} → {asked}" if now else asked
    if a.kind == "quota":
        return "; ".join(f"{section}: " + ", ".join(f"{k}={v}" for k, v in entries.items())
                         for section, entries in a.payload.items())
    if a.kind == "large_job":
        gpus = a.payload.get("gpus", a.current.get("gpus"))
        return f"{gpus} × GPU" if gpus else ""
    return ""


def decision_note_text(lang: object, note: str) -> str:
    """A request's ``decision_note`` in ``lang``: the notes the service writes itself (the auto-approval rule's,
    ``closed: <why>``) translated through ``state.messages``; a decider's own note as written."""
    if note.startswith("closed: "):
        return i18n.translate(lang, "approvals.note.closed", why=messages.message_text(lang, note.removeprefix("closed: ")))
    return messages.message_text(lang, note)


def approval_row(a: ApprovalPublic, lang: object = i18n.DEFAULT_LANGUAGE) -> dict[str, str]:
    """A requests-table row (all strings; ``can_decide`` is ``"1"`` or ``""``), the decision note in ``lang``."""
    if a.kind == "quota":
        target = a.project or ""
    else:
        target = f"{a.job_name or ''} #{a.job_id}" if a.job_id else ""
    return {
        "id": str(a.id), "kind": a.kind, "status": a.status, "requester": a.requester, "project": a.project or "",
        "target": target.strip(), "job_id": str(a.job_id or ""), "value": _value_text(a), "reason": a.reason,
        "auto": "1" if a.auto else "", "decided_by": a.decided_by or "", "note": decision_note_text(lang, a.decision_note or ""),
        "created": views.fmt_time(a.created_at), "decided": views.fmt_time(a.decided_at),
        "can_decide": "1" if a.can_decide else "",
    }


def notification_text(lang: str, n: NotificationPublic) -> str:
    """The notification in ``lang``: its translated template filled from ``args``, or the English message.

    The target (``job train (#12)``, ``project lab``) and the notes the service writes itself (the auto-approval
    rule's, why a request was closed) are translated too (``state.messages``); a decider's own note is kept."""
    key = NOTIFY_KEYS.get(n.kind)
    if key is None:
        return n.message
    args = dict(n.args)
    kind_key = KIND_KEYS.get(str(args.get("kind", "")))
    args["kind"] = i18n.translate(lang, kind_key) if kind_key else args.get("kind", "")
    note = str(args.get("note") or "")
    note = messages.message_text(lang, note.removeprefix("closed: ") if n.kind == "approval.closed" else note)
    args["target"] = messages.target_text(lang, str(args.get("target") or ""))
    by = str(args.get("by") or "")
    if n.kind != "approval.requested":  # "approved by pat": the decider, when there is one
        args["by"] = i18n.translate(lang, "notify.by", by=by) if by else ""
    try:
        text = i18n.translate(lang, key, **{k: args.get(k, "") for k in ("id", "kind", "target", "by")})
    except (KeyError, IndexError, ValueError):
        return n.message
    if n.kind == "approval.closed":
        return f"{text} {note}".strip()
    return f"{text} {i18n.translate(lang, 'notify.note', note=note)}" if note else text

class ApprovalsState(AppState):
    """/approvals: the requests the caller may read (pending or all), decisions with a note, new requests."""

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
    form_error: str = ""
    form_error_field: str = ""
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
        return [{**r, "kind_text": i18n.translate(lang, KIND_KEYS.get(r["kind"], r["kind"])),
                 "status_text": i18n.translate(lang, STATUS_KEYS.get(r["status"], r["status"]))} for r in self.rows]

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
        self.rows = [approval_row(a, self.lang) for a in page.items]
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
            self.form_error = self.form_error_field = ""
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
        self.form_error = self.form_error_field = ""
        if not self.new_open:
            return None
        found, stop = await self.guarded(projects.list_projects)
        if found is None:
            self.form_error, self.error = self.error, ""
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
            self.form_error = self.form_error_field = ""

    @rx.event
    def set_new_project(self, project: str) -> None:
        """The project a quota request is for."""
        if project in self.project_options:
            self.new_project = project

    @rx.event
    def set_new_section(self, section: str) -> None:
        """Which quota section the resource list sets."""
        if section in QUOTA_SECTIONS:
            self.new_section = section

    @rx.event
    async def create(self, form: dict):
        """Make the request; an automatic approval is said so in the toast."""
        self.form_error = self.form_error_field = ""
        try:
            args = request_arguments(self.new_kind, form, self.new_project, self.new_section)
        except FormError as exc:
            self.form_error, self.form_error_field = self.msg(exc.key, **exc.params), exc.field
            return None
        try:
            created = await self.call(approvals.create_request, **args)
        except Unauthenticated:
            return self.signed_out()
        except CraterError as exc:
            self.form_error, self.form_error_field = exc.message_in(self.lang), exc.field or ""
            return None
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
            self.decide_open = True

    @rx.event
    def set_decide_open(self, open_: bool) -> None:
        """Close (or keep open) the decision dialog."""
        self.decide_open = bool(open_)

    @rx.event
    async def decide(self, form: dict):
        """Approve or reject with the note from the dialog, then reload the list."""
        self.decide_error = ""
        if not self.decide_id.isdigit():
            return None
        fn = approvals.approve if self.decide_action == "approve" else approvals.reject
        try:
            done = await self.call(fn, int(self.decide_id), str(form.get("note", "")))
        except Unauthenticated:
            return self.signed_out()
        except Forbidden as exc:
            self.decide_error = exc.message_in(self.lang)
            return None
        except CraterError as exc:
            self.decide_error = exc.message_in(self.lang)
            await self._list()  # e.g. it was closed meanwhile: show its new status
            return None
        self.decide_open = False
        await self._list()
        key = "approvals.decided.approved" if done.status == "approved" else "approvals.decided.rejected"
        return rx.toast.success(self.msg(key, id=done.id))


class NotificationsState(AppState):
    """The bell in the top bar: the unread count, the latest notifications, mark read. The count is read when a
    page mounts the bar and then every ``NOTIFY_POLL_S`` seconds while the tab stays connected."""

    unread: int = 0
    items: list[dict[str, str]] = []
    _watch_gen: int = 0

    def _show(self, found) -> None:  # noqa: ANN001 - NotificationList
        lang = self.lang
        items = [{"id": str(n.id), "kind": n.kind, "text": notification_text(lang, n), "at": views.fmt_time(n.at),
                  "read": "1" if n.read else ""} for n in found.items]
        if items != self.items:
            self.items = items
        if found.unread != self.unread:
            self.unread = found.unread

    @rx.event
    async def refresh(self):
        """The unread count and latest notifications (silently nothing when signed out: the page redirects);
        then keep them fresh in the background."""
        if self._session_secret() is None:
            return None
        try:
            found = await self.call(notifications.list_notifications, NOTIFY_LIST)
        except CraterError:
            return None
        self._show(found)
        return NotificationsState.watch

    @rx.event(background=True)
    async def watch(self):
        """Re-read the notifications every ``NOTIFY_POLL_S`` seconds; one watcher per tab (a newer one ends an
        older one), ends on disconnect, sign-out or after ``POLL_MAX_S``."""
        async with self:
            self._watch_gen += 1
            gen = self._watch_gen
            client = self.router.session.client_token
        deadline = time.monotonic() + POLL_MAX_S
        while time.monotonic() < deadline:
            await asyncio.sleep(NOTIFY_POLL_S)
            if not await client_connected(client):
                return
            async with self:
                if gen != self._watch_gen:
                    return
                token = self._credentials() if self._session_secret() is not None else None
            if not token:
                return
            try:
                _, found = await asyncio.to_thread(call_as, token, notifications.list_notifications, NOTIFY_LIST)
            except Unauthenticated:
                return
            except CraterError:
                continue
            async with self:
                if gen != self._watch_gen:
                    return
                self._show(found)

    @rx.event
    async def on_open(self, open_: bool):
        """Opening the bell's menu reads the latest notifications."""
        if open_:
            return await self.refresh()
        return None

    @rx.event
    async def mark_read(self, notification_id: str):
        """Mark one notification read."""
        if notification_id.isdigit():
            await self._mark([int(notification_id)])

    @rx.event
    async def mark_all_read(self):
        """Mark every notification read."""
        await self._mark(None)

    async def _mark(self, ids: list[int] | None) -> None:
        try:
            await self.call(notifications.mark_read, ids)
            found = await self.call(notifications.list_notifications, NOTIFY_LIST)
        except CraterError:
            return
        self._show(found)
