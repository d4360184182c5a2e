"""Placeholder index page; the UI engineer replaces it."""

import reflex as rx


def index() -> rx.Component:
    """The console landing page."""
    return rx.text("Crater")
