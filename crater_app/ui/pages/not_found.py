"""The page for unknown routes (Reflex's ``404`` route): styled like the sign-in page, translated."""

from __future__ import annotations

import reflex as rx

from crater_app.state import AppState
from crater_app.ui.components import language_switch, logo, t


def not_found_page() -> rx.Component:
    """``404``: what went wrong and the way back to the jobs list."""
    return rx.box(
        rx.hstack(
            rx.link(logo("4"), href="/jobs", underline="none", color=rx.color("gray", 12), aria_label=t("app.name")),
            rx.spacer(),
            rx.icon("languages", size=16, color=rx.color("gray", 10)),
            language_switch(),
            align="center",
            padding="var(--space-4)",
            spacing="3",
        ),
        rx.center(
            rx.card(
                rx.vstack(
                    rx.center(
                        rx.icon("map_pin_off", size=28, color=rx.color("accent", 11)),
                        background_color=rx.color("accent", 3),
                        border_radius="50%",
                        width="64px",
                        height="64px",
                    ),
                    rx.text(t("notfound.code"), size="8", weight="bold", color=rx.color("accent", 11),
                            font_family="var(--code-font-family, ui-monospace, monospace)", id="not-found-code"),
                    rx.heading(t("notfound.title"), size="6", id="page-title"),
                    rx.text(t("notfound.text"), size="2", color_scheme="gray", text_align="center"),
                    rx.link(
                        rx.button(rx.icon("arrow_left", size=16), t("notfound.back"), size="3", id="not-found-back"),
                        href="/jobs",
                        margin_top="var(--space-2)",
                    ),
                    align="center",
                    spacing="3",
                    width="100%",
                ),
                size="4",
                width="100%",
                max_width="440px",
                id="not-found",
            ),
            direction="column",
            padding_x="var(--space-4)",
            padding_top="10vh",
        ),
        min_height="100vh",
        background=f"radial-gradient(circle at 50% 0%, {rx.color('accent', 3)} 0%, {rx.color('gray', 2)} 60%)",
        lang=AppState.lang_code,
    )
