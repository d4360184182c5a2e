"""Console pages; :func:`register` adds them all to the app."""

from __future__ import annotations

import reflex as rx

from crater_app.ui.pages.index import index


def register(app: rx.App) -> None:
    """Add every console page to ``app``."""
    app.add_page(index, route="/", title="Crater")
