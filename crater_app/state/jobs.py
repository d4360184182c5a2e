"""Jobs pages: the live list, the new-job form and the job detail (one service call per handler)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from urllib.parse import urlencode

import reflex as rx

from crater_app.domain.errors import CraterError, NotFound, Unauthenticated
from crater_app.domain.policy import can_submit_as
from crater_app.services import console, jobs, nodes, projects, users
from crater_app.state import messages, views
from crater_app.state.base import POLL_INTERVAL_S, POLL_MAX_S, AppState, call_as, client_connected, turn_page
from crater_app.state.forms import COMMAND_MODES, JOB_KINDS, FormError, build_spec

# A child of Reflex's logger, so that `reflex run --loglevel debug` shows the live-refresh lifecycle.
log = logging.getLogger("reflex.crater.console")
PHASES = ("Held", "Queued", "Running", "Succeeded", "Failed", "Cancelled")
ALL = "all"
#: the most pages a ``?page=`` query may ask for (larger numbers show the last page)
MAX_PAGE = 1_000_000


def parse_list_query(params: dict[str, str]) -> tuple[str, str, int]:
    """``(phase, query, page)`` from the /jobs URL query (``?phase=Failed&q=train&page=2``), normalised:
    an unknown phase is :data:`ALL`, the search text is stripped and cut to 63 characters, and the page is
    a whole number from 1 (anything else is 1)."""
    phase = params.get("phase", "")
    phase = phase if phase in PHASES else ALL
    query = str(params.get("q", "")).strip()[:63]
    raw_page = str(params.get("page", "")).strip()
    page = int(raw_page) if raw_page.isdigit() and len(raw_page) < 8 else 1
    return phase, query, min(max(page, 1), MAX_PAGE)


def list_url(phase: str, query: str, page: int) -> str:
    """The /jobs URL that shows these filters (defaults left out: plain ``/jobs`` for everything)."""
    params = {}
    if phase != ALL:
        params["phase"] = phase
    if query:
        params["q"] = query
    if page > 1:
        params["page"] = str(page)
    return "/jobs" + ("?" + urlencode(params) if params else "")


class JobsState(AppState):
    """/jobs: filter by phase, search by name, newest first, paginated, refreshed every 2 s."""

    rows: list[dict[str, str]] = []
    total: int = 0
    page: int = 1
    page_size: int = 20
    phase: str = ALL
    query: str = ""
    #: changes when the filters come from the URL, so that the search box shows the new text
    search_key: int = 0
    loaded: bool = False
    error: str = ""
    _poll_gen: int = 0

    @rx.var
    def view_rows(self) -> list[dict[str, str]]:
        """The rows with each job's status sentence in the console's language."""
        lang = self.lang
        return [{**row, "reason": messages.job_reason_text(lang, row)} for row in self.rows]

    @rx.var
    def page_count(self) -> int:
        """Number of pages (at least 1)."""
        return max(1, -(-self.total // self.page_size))

    @rx.var
    def range_start(self) -> int:
        """1-based index of the first row shown (0 when empty)."""
        return 0 if not self.total else (self.page - 1) * self.page_size + 1

    @rx.var
    def range_end(self) -> int:
        """1-based index of the last row shown."""
        return min(self.total, self.page * self.page_size)

    def _filters(self) -> dict:
        return {"phase": None if self.phase == ALL else self.phase, "q": self.query or None,
                "page": self.page, "page_size": self.page_size}

    def _apply(self, page) -> None:  # noqa: ANN001 - JobPage
        rows = [views.job_row(j) for j in page.items]
        if rows != self.rows:
            self.rows = rows
        if page.total != self.total:
            self.total = page.total
        self.loaded = True
        self.error = ""

    def _url_update(self):
        """Show the current filters in the address bar (no navigation, no new history entry)."""
        url = list_url(self.phase, self.query, self.page)
        shown = self.router.url.path.rstrip("/") or "/"
        if self.router.url.query:
            shown += "?" + self.router.url.query
        if url == shown:
            return None
        return rx.call_script(f"window.history.replaceState(window.history.state, '', {json.dumps(url)})")

    async def _load_page(self) -> tuple[bool, object]:
        """Read the current page: ``(True, URL update or None)``, or ``(False, redirect to /login or None)``."""
        page, stop = await self.guarded(jobs.list_jobs, **self._filters())
        if page is None:
            return False, stop
        if not page.items and page.total and self.page > 1:  # the page emptied: show the last one
            self.page = max(1, -(-page.total // self.page_size))
            page, stop = await self.guarded(jobs.list_jobs, **self._filters())
            if page is None:
                return False, stop
        self._apply(page)
        return True, self._url_update()

    async def _fetch(self):
        return (await self._load_page())[1]

    @rx.event
    async def load(self):
        """on_load: the filters from the URL (``?phase=&q=&page=``), their page; then start the live refresh."""
        self.error = ""
        phase, query, page = parse_list_query(dict(self.router.url.query_parameters))
        if query != self.query:
            self.search_key += 1
        self.phase, self.query, self.page = phase, query, page
        ok, event = await self._load_page()
        if not ok and event is not None:
            return event  # signed out: to /login
        return [e for e in (event, JobsState.poll) if e is not None]

    @rx.event
    async def reload(self):
        """Fetch the current page again."""
        return await self._fetch()

    @rx.event
    async def set_phase_filter(self, phase: str | list[str]):
        """Show only jobs in ``phase`` (``all`` for every phase)."""
        self.phase = phase if isinstance(phase, str) and phase in PHASES else ALL
        self.page = 1
        return await self._fetch()

    @rx.event
    async def search(self, form: dict):
        """Filter by a job-name substring."""
        self.query = str(form.get("q", "")).strip()[:63]
        self.page = 1
        return await self._fetch()

    @rx.event
    async def clear_filters(self):
        """Back to every job, first page."""
        if self.query:
            self.search_key += 1
        self.query, self.phase, self.page = "", ALL, 1
        return await self._fetch()

    @rx.event
    async def next_page(self):
        """Older jobs."""
        return await turn_page(self, 1, self._fetch)

    @rx.event
    async def prev_page(self):
        """Newer jobs."""
        return await turn_page(self, -1, self._fetch)

    @rx.event(background=True)
    async def poll(self):
        """Refresh the list every 2 s while this tab shows /jobs; stops when it leaves or disconnects."""
        async with self:
            self._poll_gen += 1
            gen = self._poll_gen
            client = self.router.session.client_token
        log.debug("jobs list refresh %s/%s started", client, gen)
        reason = "time limit"
        try:
            deadline = time.monotonic() + POLL_MAX_S
            while time.monotonic() < deadline:
                await asyncio.sleep(POLL_INTERVAL_S)
                if not await client_connected(client):
                    reason = "client disconnected"
                    break
                async with self:
                    if gen != self._poll_gen or self.router.url.path.rstrip("/") != "/jobs":
                        reason = "page left"
                        break
                    token, filters = self._credentials(), self._filters()
                try:
                    _, page = await asyncio.to_thread(call_as, token, jobs.list_jobs, **filters)
                except Unauthenticated:
                    reason = "signed out"
                    break
                except CraterError:
                    continue
                async with self:
                    if gen != self._poll_gen or self._filters() != filters:
                        continue
                    self._apply(page)
        except asyncio.CancelledError:
            reason = "cancelled by Reflex (navigation or disconnect)"
            raise
        finally:
            log.debug("jobs list refresh %s/%s stopped: %s", client, gen, reason)


class NewJobState(AppState):
    """/jobs/new: the submit form. GPU models and counts come from the nodes' real devices."""

    accelerators: list[dict[str, str]] = []
    model: str = ""
    gpus: str = "0"
    command_mode: str = "lines"
    error: str = ""
    error_field: str = ""
    submitting: bool = False
    loaded: bool = False
    #: changes when the form goes back to its defaults, so that its text fields are cleared too
    form_key: int = 0
    #: ``batch`` or ``interactive`` (a session), and whether the job may be preempted for other projects' fair share
    kind: str = "batch"
    preemptible: bool = False
    #: the projects the caller may submit to (role admin/member; every project for platform admins) and the choice
    project_options: list[str] = []
    project: str = ""
    _default_project: str = ""

    @rx.var
    def gpu_options(self) -> list[str]:
        """``0 .. n`` where n is the most devices of the chosen model one node has."""
        return [str(n) for n in range(int(self._chosen("max")) + 1)]

    def _chosen(self, key: str, default: str = "0") -> str:
        """``key`` (``free``/``max``/``resource``) of the chosen model's accelerator choice, ``default`` when none."""
        return next((c[key] for c in self.accelerators if c["model"] == self.model), default)

    @rx.var
    def model_free(self) -> str:
        """Free devices of the chosen model right now."""
        return self._chosen("free")

    @rx.var
    def model_max(self) -> str:
        """Devices of the chosen model on the largest node."""
        return self._chosen("max")

    @rx.var
    def has_accelerators(self) -> bool:
        """Whether any node has an accelerator."""
        return bool(self.accelerators)

    @rx.event
    async def load(self):
        """on_load: read the nodes' accelerator models and counts."""
        self.error = self.error_field = ""
        self.submitting = False
        found, stop = await self.guarded(nodes.list_nodes)
        if found is None:
            return stop
        self.accelerators = views.accelerator_choices(found)
        mine, stop = await self.guarded(projects.list_projects)
        me, stop_me = await self.guarded(users.me)
        if mine is None or me is None:
            return stop or stop_me
        # Where submitting is allowed (the service's rule, domain.policy); expired projects take no new jobs. The
        # service checks again on submit.
        self.project_options = [p.name for p in mine if not p.expired and can_submit_as(self.role, p.role)]
        self._default_project = me.default_project or ""
        self._reset_form()
        self.loaded = True
        return None

    def _reset_form(self) -> None:
        """The form's defaults: the first accelerator model, one device of it (or none), one argument per line."""
        models = [c["model"] for c in self.accelerators]
        self.model = models[0] if models else ""
        self.gpus = "1" if "1" in self.gpu_options else "0"
        self.command_mode = "lines"
        self.kind, self.preemptible = "batch", False
        options = self.project_options
        self.project = self._default_project if self._default_project in options else (options[0] if options else "")
        self.form_key += 1

    @rx.event
    def set_model(self, model: str) -> None:
        """Choose the accelerator model (the count is capped to what it offers)."""
        self.model = model
        if self.gpus not in self.gpu_options:
            self.gpus = self.gpu_options[-1]

    @rx.event
    def set_gpus(self, count: str) -> None:
        """Choose how many devices (all on one node)."""
        if count in self.gpu_options:
            self.gpus = count

    @rx.event
    def set_command_mode(self, mode: str) -> None:
        """``lines`` (one argument per line) or ``shell`` (split like a shell line, never run by one)."""
        if mode in COMMAND_MODES:
            self.command_mode = mode

    @rx.event
    def set_kind(self, kind: str) -> None:
        """``batch`` or ``interactive``."""
        if kind in JOB_KINDS:
            self.kind = kind

    @rx.event
    def set_preemptible(self, value: bool) -> None:
        """Whether the job may be stopped so that other projects get their deserved share."""
        self.preemptible = bool(value)

    @rx.event
    def set_project(self, name: str) -> None:
        """The project to submit to (one of :attr:`project_options`)."""
        if name in self.project_options:
            self.project = name

    @rx.event
    async def submit(self, form: dict):
        """Build the spec from the form, submit it, and open the new job."""
        self.error = self.error_field = ""
        resource = self._chosen("resource", "nvidia.com/gpu")
        try:
            spec = build_spec(
                name=str(form.get("name", "")), command=str(form.get("command", "")), command_mode=self.command_mode,
                env=str(form.get("env", "")), cpu=str(form.get("cpu", "")), memory=str(form.get("memory", "")),
                gpus=self.gpus, model=self.model, resource=resource, max_runtime=str(form.get("max_runtime", "")),
                priority=str(form.get("priority", "")), kind=self.kind, preemptible=self.preemptible,
                project=self.project,
            )
        except FormError as exc:
            self.error, self.error_field = self.msg(exc.key, **exc.params), exc.field
            return
        self.submitting = True
        yield
        try:
            job = await self.call(jobs.submit_job, spec)
        except Unauthenticated:
            self.submitting = False
            yield self.signed_out()
            return
        except CraterError as exc:
            self.submitting = False
            self.error, self.error_field = exc.message_in(self.lang), exc.field or ""
            return
        self.submitting = False
        self._reset_form()
        yield rx.redirect(f"/jobs/{job.id}")


def _route_job_id(path: str) -> int | None:
    """The job id in ``/jobs/<id>``, or ``None``."""
    parts = path.rstrip("/").split("/")
    if len(parts) == 3 and parts[1] == "jobs" and parts[2].isdigit() and len(parts[2]) < 12:
        return int(parts[2])
    return None


class JobDetailState(AppState):
    """/jobs/[id]: status, events and a live log tail while the job is not finished."""

    job: dict[str, str] = {}
    argv: list[str] = []
    events: list[dict[str, str]] = []
    logs: str = ""
    error: str = ""
    not_found: bool = False
    loaded: bool = False
    acting: bool = False
    _poll_gen: int = 0

    @rx.var
    def finished(self) -> bool:
        """The job reached Succeeded, Failed or Cancelled."""
        return self.job.get("phase", "") in views.TERMINAL_PHASES

    @rx.var
    def reason_text(self) -> str:
        """The job's status sentence in the console's language (a hold sentence from its reason code)."""
        return messages.job_reason_text(self.lang, self.job)

    @rx.var
    def waiting(self) -> bool:
        """The job waits: ``Held`` by Crater (quota, share, sessions, capacity, fair share, approval) or ``Queued``
        (admitted, waiting for the machine to place it)."""
        return self.job.get("phase", "") in ("Held", "Queued")

    @rx.var
    def wait_lead(self) -> str:
        """The first line of the "Why is this job waiting?" box: held by Crater, or admitted and being placed."""
        key = "job.waiting.held" if self.job.get("phase", "") == "Held" else "job.waiting.admitted"
        return self.msg(key)

    @rx.var
    def event_rows(self) -> list[dict[str, str]]:
        """The timeline with reason words and messages in the console's language (``reason`` stays the API word)."""
        lang = self.lang
        return [
            {**e, "reason_text": messages.reason_text(lang, e.get("reason", "")),
             "message_text": messages.message_text(lang, e.get("message", ""))}
            for e in self.events
        ]

    @rx.var
    def device_list(self) -> list[str]:
        """Assigned device indices."""
        devices = self.job.get("devices", "")
        return [d.strip() for d in devices.split(",") if d.strip()]

    def _apply(self, view) -> None:  # noqa: ANN001 - console.JobView
        detail = views.job_detail(view.job)
        if detail != self.job:
            self.job = detail
        if list(view.job.command) != self.argv:
            self.argv = list(view.job.command)
        events = [views.event_row(e) for e in view.events]
        if events != self.events:
            self.events = events
        if view.logs != self.logs:
            self.logs = view.logs
        self.loaded = True
        self.not_found = False

    @rx.event
    async def load(self):
        """on_load: read the job; keep refreshing while it is not finished."""
        self.error = ""
        self.acting = False
        job_id = _route_job_id(self.router.url.path)
        if job_id is None:
            self.not_found, self.loaded = True, True
            return None
        if self.job.get("id") != str(job_id):
            self.job, self.argv, self.events, self.logs, self.loaded = {}, [], [], "", False
        try:
            view = await self.call(console.job_view, job_id)
        except Unauthenticated:
            return self.signed_out()
        except NotFound:
            self.job, self.argv, self.events, self.logs = {}, [], [], ""
            self.not_found, self.loaded = True, True
            return None
        except CraterError as exc:
            self.error = exc.message_in(self.lang)
            return None
        self._apply(view)
        return None if self.finished else JobDetailState.poll

    @rx.event(background=True)
    async def poll(self):
        """Refresh status, events and log tail every 2 s until the job finishes or the tab leaves."""
        async with self:
            self._poll_gen += 1
            gen = self._poll_gen
            client = self.router.session.client_token
            path = self.router.url.path.rstrip("/")
        job_id = _route_job_id(path)
        if job_id is None:
            return
        log.debug("job %s refresh %s/%s started", job_id, client, gen)
        reason = "time limit"
        try:
            deadline = time.monotonic() + POLL_MAX_S
            while time.monotonic() < deadline:
                await asyncio.sleep(POLL_INTERVAL_S)
                if not await client_connected(client):
                    reason = "client disconnected"
                    break
                async with self:
                    if gen != self._poll_gen or self.router.url.path.rstrip("/") != path:
                        reason = "page left"
                        break
                    token = self._credentials()
                try:
                    _, view = await asyncio.to_thread(call_as, token, console.job_view, job_id)
                except (Unauthenticated, NotFound):
                    reason = "signed out or job gone"
                    break
                except CraterError:
                    continue
                async with self:
                    if gen != self._poll_gen:
                        reason = "page reloaded"
                        break
                    self._apply(view)
                    if self.finished:
                        reason = "job finished"
                        break
        except asyncio.CancelledError:
            reason = "cancelled by Reflex (navigation or disconnect)"
            raise
        finally:
            log.debug("job %s refresh %s/%s stopped: %s", job_id, client, gen, reason)

    @rx.event
    async def cancel(self):
        """Cancel the job (SIGTERM, then SIGKILL after the grace period)."""
        job_id = _route_job_id(self.router.url.path)
        if job_id is None:
            return None
        self.error = ""
        job, stop = await self.guarded(jobs.cancel_job, job_id)
        if job is None:
            return stop
        self.job = views.job_detail(job)
        return rx.toast.info(self.msg("job.cancel.requested"))

    @rx.event
    async def resubmit(self):
        """Submit the same spec as a new job and open it."""
        job_id = _route_job_id(self.router.url.path)
        if job_id is None:
            return None
        self.error = ""
        job, stop = await self.guarded(jobs.resubmit_job, job_id)
        if job is None:
            return stop
        return rx.redirect(f"/jobs/{job.id}")
