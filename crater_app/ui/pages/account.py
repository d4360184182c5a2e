"""/account: profile, password change, signed-in browsers and "sign out everywhere"."""

from __future__ import annotations

import reflex as rx

from crater_app.state.account import AccountState
from crater_app.ui.components import (
    EMPTY, MONO, error_callout, loading, or_empty, page_header, role_badge, section_title, shell, t,
)
from crater_app.ui.forms import field


def _fact(label: rx.Var, value: rx.Component) -> rx.Component:
    return rx.vstack(rx.text(label, size="1", color_scheme="gray"), value, spacing="1", min_width="160px")


def _profile() -> rx.Component:
    p = AccountState.profile
    return rx.card(
        rx.vstack(
            section_title(t("identity.account.profile"), "circle_user_round"),
            rx.flex(
                _fact(t("admin.col.username"), rx.text(p["username"], weight="medium", id="account-username")),
                _fact(t("admin.col.display_name"), or_empty(p["display_name"])),
                _fact(t("admin.col.email"), or_empty(p["email"])),
                _fact(t("admin.col.role"), role_badge(p["role"])),
                _fact(t("admin.col.project"), or_empty(p["project"])),
                wrap="wrap", gap="5",
            ),
            spacing="3", width="100%",
        ),
        size="3", width="100%",
    )


def _password_input(name: str, label: rx.Var, auto: str) -> rx.Component:
    return field(label, rx.input(
        name=name, id=f"account-{name.replace('_', '-')}", type="password", auto_complete=auto, required=True,
        max_length=1024, color_scheme=rx.cond(AccountState.password_error_field == name, "red", "gray"),
    ))


def _password() -> rx.Component:
    return rx.card(
        rx.vstack(
            section_title(t("identity.password.title"), "lock"),
            rx.cond(
                AccountState.has_password,
                rx.form(
                    rx.vstack(
                        rx.text(t("identity.password.subtitle"), size="2", color_scheme="gray"),
                        rx.grid(
                            _password_input("current_password", t("identity.password.current"),
                                            "current-password"),
                            _password_input("new_password", t("identity.password.new"), "new-password"),
                            _password_input("new_password_again", t("identity.password.again"), "new-password"),
                            columns=rx.breakpoints(initial="1", md="3"), spacing="4", width="100%",
                        ),
                        error_callout(AccountState.password_error, id="password-error"),
                        rx.hstack(rx.button(rx.icon("key_round", size=16), t("identity.password.submit"),
                                            type="submit", id="password-submit"), justify="end", width="100%"),
                        spacing="3", width="100%",
                    ),
                    on_submit=AccountState.change_password,
                    reset_on_submit=False,
                    key=AccountState.password_key,
                ),
                rx.text(t("identity.password.sso"), size="2", color_scheme="gray", id="password-sso"),
            ),
            spacing="3", width="100%",
        ),
        size="3", width="100%",
    )


def _session_row(row: rx.Var) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(rx.cond(row["browser"] != "", row["browser"], EMPTY), title=row["user_agent"])),
        rx.table.cell(rx.text(row["ip"], font_family=MONO, size="1")),
        rx.table.cell(rx.text(row["created"], font_family=MONO, size="1")),
        rx.table.cell(rx.text(row["last_seen"], font_family=MONO, size="1")),
        rx.table.cell(rx.text(row["ends"], font_family=MONO, size="1")),
        rx.table.cell(rx.cond(
            row["current"] == "1",
            rx.badge(t("identity.sessions.current"), color_scheme="green", variant="soft"),
            rx.button(t("identity.sessions.end"), size="1", variant="soft", color_scheme="red",
                      on_click=AccountState.end_session(row["id"]), class_name="session-end"),
        )),
        align="center", class_name="session-row", custom_attrs={"data-current": row["current"]},
    )


def _everywhere_dialog() -> rx.Component:
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title(t("identity.sessions.everywhere")),
            rx.alert_dialog.description(t("identity.sessions.everywhere.confirm"), size="2"),
            rx.hstack(
                rx.alert_dialog.cancel(rx.button(t("admin.edit.cancel"), variant="soft", color_scheme="gray")),
                rx.alert_dialog.action(rx.button(t("identity.sessions.everywhere"), color_scheme="red",
                                                 on_click=AccountState.sign_out_everywhere,
                                                 id="sign-out-everywhere-confirm")),
                justify="end", spacing="3", margin_top="var(--space-4)",
            ),
        ),
        open=AccountState.confirm_everywhere,
        on_open_change=AccountState.set_confirm_everywhere,
    )


def _sessions() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(
                section_title(t("identity.sessions.title"), "monitor_smartphone"),
                rx.spacer(),
                rx.button(rx.icon("log_out", size=14), t("identity.sessions.everywhere"), size="2", variant="soft",
                          color_scheme="red", on_click=AccountState.set_confirm_everywhere(True),
                          id="sign-out-everywhere"),
                align="center", width="100%",
            ),
            rx.text(t("identity.sessions.subtitle"), size="2", color_scheme="gray"),
            error_callout(AccountState.error, id="sessions-error"),
            rx.box(
                rx.table.root(
                    rx.table.header(rx.table.row(
                        rx.table.column_header_cell(t("identity.sessions.browser")),
                        rx.table.column_header_cell(t("identity.sessions.ip")),
                        rx.table.column_header_cell(t("identity.sessions.created")),
                        rx.table.column_header_cell(t("identity.sessions.last_seen")),
                        rx.table.column_header_cell(t("identity.sessions.ends")),
                        rx.table.column_header_cell(""),
                    )),
                    rx.table.body(rx.foreach(AccountState.sessions, _session_row)),
                    variant="ghost", size="2", width="100%", id="sessions-table",
                ),
                overflow_x="auto", width="100%",
            ),
            _everywhere_dialog(),
            spacing="3", width="100%",
        ),
        size="3", width="100%",
    )


def account_page() -> rx.Component:
    """The signed-in user's account."""
    return shell(
        page_header(t("identity.account.title"), t("identity.account.subtitle")),
        rx.cond(
            AccountState.loaded,
            rx.vstack(_profile(), _password(), _sessions(), spacing="5", width="100%"),
            rx.vstack(error_callout(AccountState.error), loading(), width="100%"),
        ),
        active="account",
    )
