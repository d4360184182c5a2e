"""Live pages: one refresh loop for every console page that re-reads a service while the tab shows it (the jobs
list, a job's detail page).

A page's background event hands :func:`refresh` what to read and how to show it. The loop reads every
``POLL_INTERVAL_S`` seconds, off the event loop, as the signed-in user, and stops when the tab disconnects or shows
another page, when a newer loop of the same page starts (a reload), when the caller is signed out or what it reads
is gone, when ``show`` says the page is final (a finished job), or after ``POLL_MAX_S``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from crater_app.domain.errors import CraterError, Unauthenticated
from crater_app.state.base import POLL_INTERVAL_S, POLL_MAX_S, call_as, client_connected

# A child of Reflex's logger, so that `reflex run --loglevel debug` shows the live-refresh lifecycle.
log = logging.getLogger("reflex.crater.console")


@dataclass(frozen=True)
class Read:
    """One service read: ``fn(ctx, actor, *args, **kwargs)``."""

    fn: Callable[..., Any]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


async def refresh(state: Any, label: str, read: Callable[[], Read | None], show: Callable[[Read, Any], bool],
                  gone: tuple[type[Exception], ...] = (Unauthenticated,)) -> None:
    """Re-read and show until the page is left or final (call it from a page's ``@rx.event(background=True)``).

    Args:
        state: the page's state; it keeps its loop's generation in ``_poll_gen`` (an ``int`` backend var).
        label: names the loop in the debug log (``jobs list``, ``job 12``).
        read: called under the state's lock before each read: what to read now, or ``None`` to stop.
        show: called under the lock with the read and its result: shows it; returns ``True`` when the page is
            final (the loop stops). A result the page no longer wants (its filters changed meanwhile) is for
            ``show`` to drop.
        gone: errors that end the loop (signed out; the object is gone); any other service error skips a round.
    """
    async with state:
        state._poll_gen += 1
        gen = state._poll_gen
        client = state.router.session.client_token
        path = state.router.url.path.rstrip("/")
    log.debug("%s refresh %s/%s started", label, client, gen)
    reason = "time limit"
    try:
        deadline = time.monotonic() + POLL_MAX_S
        while time.monotonic() < deadline:
            await asyncio.sleep(POLL_INTERVAL_S)
            if not await client_connected(client):
                reason = "client disconnected"
                break
            async with state:
                if gen != state._poll_gen or state.router.url.path.rstrip("/") != path:
                    reason = "page left"
                    break
                token, request = state._credentials(), read()
            if request is None:
                reason = "nothing to read"
                break
            try:
                _, result = await asyncio.to_thread(call_as, token, request.fn, *request.args, **request.kwargs)
            except gone:
                reason = "signed out or gone"
                break
            except CraterError:
                continue
            async with state:
                if gen != state._poll_gen:
                    reason = "page reloaded"
                    break
                if show(request, result):
                    reason = "final"
                    break
    except asyncio.CancelledError:
        reason = "cancelled by Reflex (navigation or disconnect)"
        raise
    finally:
        log.debug("%s refresh %s/%s stopped: %s", label, client, gen, reason)
