"""/admin/operation-logs: the operation log for platform admins (filter, page, export CSV; read-only).

The filters live in the URL (``?actor=&action=&target=&from=&to=&page=``), so a filtered view can be
bookmarked and shared. The export goes through the same service as the list and reaches the browser as a
download of the CSV text (``rx.download(data=...)``): no API token is ever handed to the browser.
"""

from __future__ import annotations

import json

import reflex as rx

from crater_app.domain.errors import CraterError, Forbidden, Unauthenticated
from crater_app.services import console, oplog
from crater_app.state import governance_views as gv
from crater_app.state.base import AppState, turn_page
from crater_app.state.field_errors import FieldErrors
from crater_app.state.forms import FormError
from crater_app.state.governance_forms import (
    OPLOG_FILTERS, csv_filename, oplog_arguments, oplog_filters, oplog_query, oplog_url,
)

#: the action filter's value for "every action" (a Radix select item cannot have an empty value)
ANY_ACTION = "*"
PAGE_SIZE = 50


class OperationLogState(FieldErrors, AppState):
    """The filter form (its errors beside its fields: :class:`FieldErrors`), one page of rows (newest first, the
    details in the console's language) and the CSV export."""

    FIELDS = tuple((name, (name,)) for name in OPLOG_FILTERS)
    rows: list[dict[str, str]] = []
    total: int = 0
    page: int = 1
    page_size: int = PAGE_SIZE
    filters: dict[str, str] = {key: "" for key in OPLOG_FILTERS}
    action_choice: str = ANY_ACTION
    actions: list[str] = []
    #: changes when the filters come from the URL or are cleared, so that the inputs show them
    filter_key: int = 0
    loaded: bool = False
    forbidden: bool = False
    exporting: bool = False

    @rx.var
    def view_rows(self) -> list[dict[str, str]]:
        """The rows with their details in the console's language."""
        lang = self.lang
        return [gv.oplog_texts(lang, r) for r in self.rows]

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

    @rx.var
    def filtered(self) -> bool:
        """Whether any filter is set."""
        return any(self.filters.values())

    @rx.var
    def action_options(self) -> list[str]:
        """The actions to offer: those in the log, plus the one filtered on when the log has none of it."""
        chosen = self.filters.get("action", "")
        return self.actions if not chosen or chosen in self.actions else sorted([*self.actions, chosen])

    def _url_update(self):
        """Show the filters in the address bar (no navigation, no new history entry)."""
        url = oplog_url(self.filters, self.page)
        shown = self.router.url.path.rstrip("/") or "/"
        if self.router.url.query:
            shown += "?" + self.router.url.query
        if url == shown:
            return None
        return rx.call_script(f"window.history.replaceState(window.history.state, '', {json.dumps(url)})")

    async def _fetch(self):
        """Read the current page with the current filters; returns the URL update, a redirect or ``None``."""
        self._clear_errors()
        try:
            arguments = oplog_arguments(self.filters)
        except FormError as exc:
            self._form_failed(exc)
            self.loaded = True
            return None
        who = arguments.pop("actor")  # the service's ``actor`` parameter is the caller
        try:
            view = await self.call(console.operation_log_view, who, page=self.page, page_size=self.page_size,
                                   **arguments)
            if not view.page.items and view.page.total and self.page > 1:  # past the end: show the last page
                self.page = max(1, -(-view.page.total // self.page_size))
                view = await self.call(console.operation_log_view, who, page=self.page, page_size=self.page_size,
                                       **arguments)
        except Unauthenticated:
            return self.signed_out()
        except Forbidden:
            self.rows, self.total, self.forbidden, self.loaded = [], 0, True, True
            return None
        except CraterError as exc:
            self._show_error(exc.message_in(self.lang), exc.field)
            self.loaded = True
            return None
        self.rows = [gv.oplog_row(r) for r in view.page.items]
        self.total = view.page.total
        self.actions = view.actions
        self.forbidden = False
        self.loaded = True
        return self._url_update()

    @rx.event
    async def load(self):
        """on_load: the filters and page from the URL, then that page."""
        filters, page = oplog_query(dict(self.router.url.query_parameters))
        if filters != self.filters:
            self.filter_key += 1
        self.filters, self.page = filters, page
        self.action_choice = filters["action"] or ANY_ACTION
        return await self._fetch()

    @rx.event
    def set_action_choice(self, action: str) -> None:
        """The action to filter on (:data:`ANY_ACTION` for all); applied with the other filters."""
        self._forget_field_error("action")
        self.action_choice = action if isinstance(action, str) else ANY_ACTION

    @rx.event
    async def apply(self, form: dict):
        """Filter by the form's fields (and the chosen action), from the first page."""
        action = "" if self.action_choice == ANY_ACTION else self.action_choice
        self.filters = oplog_filters({**form, "action": action})
        self.page = 1
        return await self._fetch()

    @rx.event
    async def clear_filters(self):
        """Every row, first page."""
        self.filters, self.page = oplog_filters({}), 1
        self.action_choice = ANY_ACTION
        self.filter_key += 1
        return await self._fetch()

    @rx.event
    async def next_page(self):
        """Older rows."""
        return await turn_page(self, 1, self._fetch)

    @rx.event
    async def prev_page(self):
        """Newer rows."""
        return await turn_page(self, -1, self._fetch)

    @rx.event
    async def export_csv(self):
        """Download every row matching the current filters as CSV (at most 100,000, newest first)."""
        self._clear_errors()
        try:
            arguments = oplog_arguments(self.filters)
        except FormError as exc:
            self._form_failed(exc)
            return
        self.exporting = True
        yield
        result, stop = await self.submitted(oplog.export_csv, **arguments)
        self.exporting = False
        if result is None:
            if stop is not None:
                yield stop
            return
        text, truncated = result
        yield rx.download(data=text.encode("utf-8"), filename=csv_filename(), mime_type="text/csv;charset=utf-8")
        if truncated:
            yield rx.toast.warning(self.msg("oplog.export.truncated", limit=f"{oplog.MAX_CSV_ROWS:,}"))
