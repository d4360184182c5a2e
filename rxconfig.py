"""Reflex configuration for Crater (one process, one port: console + API + websocket).

The port comes from ``PORT`` (default 3000) via :mod:`crater_app.settings`; frontend and
backend share it (``reflex run --env prod`` is always single-port in Reflex 0.10).
``CRATER_API_URL`` only needs setting when browsers reach the app through a different
origin than ``http://<host>:<PORT>`` (e.g. a plain-http reverse proxy on another port);
it is baked into the frontend bundle at build time.
"""

import reflex as rx

from crater_app.settings import get_settings

_settings = get_settings()

_extra: dict[str, str] = {}
if _settings.api_url:
    _extra["api_url"] = _settings.api_url

config = rx.Config(
    app_name="crater_app",
    frontend_port=_settings.port,
    backend_port=_settings.port,
    telemetry_enabled=False,
    # We use our own SQLModel engine (crater_app.db); no rx.Model / db_url.
    db_url=None,
    # One worker, state in process memory: no Redis needed (REFLEX_REDIS_URL unset).
    state_manager_mode=rx.constants.StateManagerMode.MEMORY,
    plugins=[rx.plugins.RadixThemesPlugin()],
    disable_plugins=[rx.plugins.SitemapPlugin],
    show_built_with_reflex=False,
    **_extra,
)
