"""/login: sign in with a local account."""

from __future__ import annotations

import reflex as rx

from crater_app.state import LoginState
from crater_app.ui.components import error_callout, language_switch, logo, t


def login() -> rx.Component:
    """The sign-in card."""
    return rx.box(
        rx.hstack(rx.spacer(), rx.icon("languages", size=16, color=rx.color("gray", 10)), language_switch(),
                  align="center", padding="var(--space-4)", spacing="3"),
        rx.center(
            rx.card(
                rx.form(
                    rx.vstack(
                        logo("6"),
                        rx.heading(t("login.title"), size="5", margin_top="var(--space-2)"),
                        rx.text(t("login.subtitle"), size="2", color_scheme="gray"),
                        error_callout(LoginState.error, id="login-error"),
                        rx.vstack(
                            rx.text(t("login.username"), size="2", weight="medium", as_="label", html_for="username"),
                            rx.input(rx.input.slot(rx.icon("user", size=16)), id="username", name="username",
                                     auto_complete="username", auto_focus=True, size="3", width="100%", required=True),
                            spacing="1", width="100%",
                        ),
                        rx.vstack(
                            rx.text(t("login.password"), size="2", weight="medium", as_="label", html_for="password"),
                            rx.input(rx.input.slot(rx.icon("lock", size=16)), id="password", name="password",
                                     type="password", auto_complete="current-password", size="3", width="100%",
                                     required=True),
                            spacing="1", width="100%",
                        ),
                        rx.button(
                            rx.cond(LoginState.busy, rx.spinner(size="2"), rx.icon("log_in", size=16)),
                            t("login.submit"),
                            type="submit", size="3", width="100%", disabled=LoginState.busy, id="login-submit",
                        ),
                        spacing="4",
                        width="100%",
                    ),
                    on_submit=LoginState.submit,
                    reset_on_submit=False,
                ),
                size="4",
                width="100%",
                max_width="420px",
            ),
            rx.text(t("login.footer"), size="1", color_scheme="gray", margin_top="var(--space-5)"),
            direction="column",
            padding_x="var(--space-4)",
            padding_top="10vh",
        ),
        min_height="100vh",
        background=f"radial-gradient(circle at 50% 0%, {rx.color('accent', 3)} 0%, {rx.color('gray', 2)} 60%)",
    )
