"""/login: sign in with a local account or single sign-on (OIDC); self sign-up when the deployment allows it."""

from __future__ import annotations

import reflex as rx

from crater_app.state import LoginState
from crater_app.ui.components import error_callout, language_switch, logo, t


def _sso() -> rx.Component:
    """"Sign in with <provider>": a plain link (a full page load: the API answers with a redirect)."""
    return rx.vstack(
        rx.hstack(rx.separator(size="4"), rx.text(t("login.or"), size="1", color_scheme="gray", white_space="nowrap"),
                  rx.separator(size="4"), align="center", width="100%"),
        rx.el.a(
            rx.button(rx.icon("key_round", size=16), t("login.sso"), " ", LoginState.sso_name, variant="outline",
                      size="3", width="100%", type="button"),
            href=LoginState.sso_href, id="login-sso", style={"width": "100%"},
        ),
        spacing="3", width="100%", margin_top="var(--space-4)",
    )


def _signup_input(name: str, label: rx.Var, kind: str = "text", auto: str = "off",
                  required: bool = False) -> rx.Component:
    return rx.vstack(
        rx.text(label, size="2", weight="medium", as_="label", html_for=f"signup-{name}"),
        rx.input(id=f"signup-{name}", name=name, type=kind, auto_complete=auto, required=required, width="100%",
                 color_scheme=rx.cond(LoginState.signup_error_field == name, "red", "gray")),
        spacing="1", width="100%",
    )


def _signup() -> rx.Component:
    """The self sign-up form (folded away until asked for)."""
    return rx.vstack(
        rx.separator(size="4"),
        rx.cond(
            LoginState.signup_open,
            rx.form(
                rx.vstack(
                    rx.heading(t("signup.title"), size="3"),
                    rx.text(t("signup.subtitle"), size="1", color_scheme="gray"),
                    error_callout(LoginState.signup_error, id="signup-error"),
                    _signup_input("username", t("signup.username"), auto="username", required=True),
                    _signup_input("password", t("signup.password"), "password", "new-password", True),
                    _signup_input("password_again", t("signup.password_again"), "password", "new-password", True),
                    _signup_input("email", t("signup.email"), "email", "email"),
                    _signup_input("display_name", t("signup.display_name"), auto="name"),
                    rx.hstack(
                        rx.button(t("signup.cancel"), type="button", variant="soft", color_scheme="gray",
                                  on_click=LoginState.toggle_signup),
                        rx.button(rx.icon("user_plus", size=16), t("signup.submit"), type="submit", id="signup-submit"),
                        justify="end", width="100%",
                    ),
                    spacing="3", width="100%",
                ),
                on_submit=LoginState.sign_up, reset_on_submit=False, width="100%",
            ),
            rx.button(t("signup.open"), variant="ghost", size="2", on_click=LoginState.toggle_signup,
                      id="signup-open", type="button"),
        ),
        spacing="3", width="100%", margin_top="var(--space-4)", align="center",
    )


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
                        rx.cond(LoginState.notice != "", rx.callout.root(
                            rx.callout.icon(rx.icon("circle_check")), rx.callout.text(LoginState.notice),
                            color_scheme="green", size="1", width="100%", id="login-notice")),
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
                rx.cond(LoginState.sso_enabled, _sso()),
                rx.cond(LoginState.signup_enabled, _signup()),
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
