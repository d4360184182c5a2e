"""The bell in the top bar: the caller's unread count and latest notifications, each written in the console's
language from its code (``services.notifications.text``), marked read one by one or all at once."""

from __future__ import annotations

import asyncio
import time

import reflex as rx

from crater_app.domain.errors import CraterError, Unauthenticated
from crater_app.schemas import NotificationPublic
from crater_app.services import notifications
from crater_app.state import views
from crater_app.state.base import POLL_MAX_S, AppState, call_as, client_connected

#: seconds between background re-reads of the bell; how many notifications its menu lists
NOTIFY_POLL_S = 30.0
NOTIFY_LIST = 20


def notification_text(lang: object, n: NotificationPublic) -> str:
    """The notification in ``lang`` (``notify.<kind>`` filled from its arguments; the stored English message when
    they do not fit: rows of older versions)."""
    return notifications.text(lang, n.kind, n.args, n.message)


class NotificationsState(AppState):
    """The bell in the top bar: the unread count, the latest notifications, mark read. The count is read when a
    page mounts the bar and then every ``NOTIFY_POLL_S`` seconds while the tab stays connected."""

    unread: int = 0
    _watch_gen: int = 0
    #: the notifications as read (written in the console's language by :attr:`items`)
    _found: list[dict] = []

    @rx.var
    def items(self) -> list[dict[str, str]]:
        """The latest notifications, each in the console's language."""
        lang = self.lang
        return [{"id": str(n["id"]), "kind": n["kind"], "at": n["at"], "read": "1" if n["read"] else "",
                 "text": notifications.text(lang, n["kind"], n["args"], n["message"])} for n in self._found]

    def _show(self, found) -> None:  # noqa: ANN001 - NotificationList
        shown = [{"id": n.id, "kind": n.kind, "args": n.args, "message": n.message, "at": views.fmt_time(n.at),
                  "read": n.read} for n in found.items]
        if shown != self._found:
            self._found = shown
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
