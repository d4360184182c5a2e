"""Reflex configuration for Crater (one process, one port: console + API + websocket).

The port comes from ``PORT`` (default 3000) via :mod:`crater_app.settings`; frontend and
backend share it (``reflex run --env prod`` is always single-port in Reflex 0.10).
``CRATER_API_URL`` only needs setting when browsers reach the app through a different
origin than ``http://<host>:<PORT>`` (e.g. a plain-http reverse proxy on another port);
it is baked into the frontend bundle at build time.

Workers: ``CRATER_WORKERS`` web workers (default 1; 0 = one per CPU core) behind the one port; this file hands the count to
Reflex as ``GRANIAN_WORKERS`` (an explicit ``GRANIAN_WORKERS`` wins). ``REFLEX_REDIS_URL`` switches console state to
Redis, shared by the workers; without it, each console tab's state lives in the memory of the worker that holds its
websocket (what a tab shows is read again from the database when it reconnects; the sign-in is a cookie, valid on
every worker). See "Workers" in README.md.

CORS (``cors_allowed_origins``, used by Reflex for its Starlette CORS middleware and the websocket server) answers
only the origins of ``CRATER_PUBLIC_URLS``; without them, none (the console and its API are one origin). Reflex's
default, ``*``, echoed any site's origin with credentials. The websocket's own ``Origin`` check, which also holds
without public URLs (same host), is in ``crater_app.services.identity``.
"""

import reflex as rx

from crater_app.auth.origins import parse_public_urls
from crater_app.settings import export_worker_count, get_settings

_settings = get_settings()
export_worker_count(_settings)

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
    # Fonts: assets/crater.css (added by crater_app.crater_app) puts the common CJK fonts into the theme's font
    # stacks, so that Chinese renders wherever one of them is installed (docs/languages.md).
    plugins=[rx.plugins.RadixThemesPlugin(theme=rx.theme(accent_color="indigo", gray_color="slate", radius="medium"))],
    disable_plugins=[rx.plugins.SitemapPlugin],
    show_built_with_reflex=False,
    cors_allowed_origins=list(parse_public_urls(_settings.public_urls)),
    **_extra,
)

# State manager: Redis when ``REFLEX_REDIS_URL`` is set (production: Reflex then runs several workers,
# which must share console state), else process memory (one worker, nothing else to run).
# ``config.redis_url`` is filled from ``REFLEX_REDIS_URL`` by Reflex itself.
config.state_manager_mode = (
    rx.constants.StateManagerMode.REDIS if config.redis_url else rx.constants.StateManagerMode.MEMORY
)
