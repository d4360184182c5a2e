"""/jobs: the live list of jobs (phase filter, name search, pages; one service call per handler). The new-job form
is :mod:`crater_app.state.job_new`, a job's page :mod:`crater_app.state.job_detail`."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import reflex as rx

from crater_app.domain.jobs import JobPhase
from crater_app.services import jobs
from crater_app.state import live, messages, views
from crater_app.state.base import AppState, turn_page

#: the phase filter's choices: every phase, in the order a job goes through them
PHASES = tuple(p.value for p in JobPhase)
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
        """The rows with each job's status sentence and run time in the console's language."""
        lang = self.lang
        return [{**views.durations(lang, row, views.EMPTY), "reason": messages.job_reason_text(lang, row)}
                for row in self.rows]

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

        def read() -> live.Read:
            return live.Read(jobs.list_jobs, kwargs=self._filters())

        def show(request: live.Read, page) -> bool:  # noqa: ANN001 - JobPage
            if self._filters() == request.kwargs:  # else the filters changed meanwhile: the next round reads them
                self._apply(page)
            return False

        await live.refresh(self, "jobs list", read, show)
