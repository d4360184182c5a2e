"""A Reflex middleware that drops every event of a console websocket opened by another site's page.

Browsers send the page's ``Origin`` on the WebSocket handshake (RFC 6455 §4.1) but, unlike ``fetch``, apply no
CORS to it, and the handshake carries the console's session cookie: without this, a page elsewhere could open
Crater's websocket in a signed-in browser and send events as its user (cross-site WebSocket hijacking). The rule
is ``services.identity.check_origin`` (``CRATER_PUBLIC_URLS``, or the handshake's own ``Host``); handlers that call
services check it again through ``services.identity.resolve``, this catches the rest (sign-out, sign-in attempts).
"""

from __future__ import annotations

import logging

from reflex.middleware import Middleware
from reflex.state import StateUpdate

from crater_app.bootstrap import get_context
from crater_app.domain.errors import Forbidden
from crater_app.services.identity import Credentials, check_origin

log = logging.getLogger(__name__)


class OriginGuard(Middleware):
    """Processes an event only when its websocket's handshake came from an allowed origin; otherwise answers it
    with an empty update (nothing runs, nothing changes)."""

    async def preprocess(self, app, state, event) -> StateUpdate | None:  # noqa: ANN001 - Reflex's signature
        """``None`` (go on) for an allowed origin, else an empty :class:`StateUpdate` (the event is dropped)."""
        headers = state.router.headers
        try:
            check_origin(get_context(), Credentials(origin=headers.origin, host=headers.host, websocket=True))
        except Forbidden:
            log.warning("dropped console event %s from origin %r (host %r)", event.name, headers.origin[:200],
                        headers.host[:200])
            return StateUpdate()
        return None
