"""Reflex entry point: one ASGI app serving the console, the websocket and the REST API on one port."""

from __future__ import annotations

import reflex as rx

from crater_app.api.app import build_api, console_mount
from crater_app.state.origin_guard import OriginGuard
from crater_app.tasks import leader_loop
from crater_app.ui import pages

# The theme is set on RadixThemesPlugin in rxconfig.py; assets/crater.css adds CJK fonts to its font stacks.
app = rx.App(api_transformer=console_mount(build_api()), stylesheets=["/crater.css"])
app.add_middleware(OriginGuard())  # console events only from this site's pages
pages.register(app)
app.register_lifespan_task(leader_loop)
