"""/admin/users: create accounts, list them, change role, status and limits, reset a password (platform admins;
the services enforce it)."""

from __future__ import annotations

import reflex as rx

from crater_app.state import AdminUsersState, AppState
from crater_app.state.admin import ROLES, STATUSES
from crater_app.ui.components import (
    MONO, error_callout, loading, or_empty, page_header, role_badge, section_title, shell, t,
)
from crater_app.ui.forms import clears, field, field_error, invalid
from crater_app.ui.governance import admins_only

S = AdminUsersState


def _edits(name: str) -> dict:
    """The props that clear input ``name``'s error when it changes and mark it invalid while it has one."""
    return {"on_change": clears(S, name), "aria_invalid": invalid(S, name)}


def _create_form() -> rx.Component:
    return rx.card(
        rx.form(
            rx.vstack(
                section_title(t("admin.create.title"), "user_plus"),
                rx.grid(
                    field(t("admin.username"), rx.input(name="username", id="new-username", required=True,
                                                        max_length=64, font_family=MONO, **_edits("username")),
                          t("identity.username.hint"), required=True, error=field_error(S, "username")),
                    field(t("admin.password"), rx.input(name="password", id="new-password", type="password",
                                                        required=True, auto_complete="new-password",
                                                        **_edits("password")),
                          t("admin.password.hint"), required=True, error=field_error(S, "password")),
                    field(t("admin.role"), rx.select.root(
                        rx.select.trigger(width="100%", id="new-role"),
                        rx.select.content(*[rx.select.item(t(f"role.{r}"), value=r) for r in ROLES]),
                        value=AdminUsersState.role_choice,
                        on_change=AdminUsersState.set_role_choice,
                    ), error=field_error(S, "role")),
                    field(t("admin.display_name"), rx.input(name="display_name", id="new-display-name",
                                                            max_length=128, **_edits("display_name")),
                          error=field_error(S, "display_name")),
                    field(t("admin.email"), rx.input(name="email", id="new-email", type="email", max_length=254,
                                                     **_edits("email")),
                          error=field_error(S, "email")),
                    columns=rx.breakpoints(initial="1", sm="2", md="3"),
                    spacing="4",
                    width="100%",
                ),
                error_callout(AdminUsersState.form_error, id="create-user-error"),
                rx.hstack(
                    rx.button(rx.icon("user_plus", size=16), t("admin.create.submit"), type="submit",
                              id="create-user"),
                    justify="end",
                    width="100%",
                ),
                spacing="4",
                width="100%",
            ),
            on_submit=AdminUsersState.create,
            reset_on_submit=False,
            key=AdminUsersState.form_key,
        ),
        size="3",
        width="100%",
    )


def _user_row(user: rx.Var) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(user["username"], weight="medium", font_family=MONO)),
        rx.table.cell(or_empty(user["display_name"])),
        rx.table.cell(or_empty(user["email"])),
        rx.table.cell(role_badge(user["role"])),
        rx.table.cell(rx.badge(t_status(user["status"]), color_scheme=rx.cond(user["status"] == "active", "green",
                                                                                "gray"), variant="soft")),
        rx.table.cell(or_empty(user["project"])),
        rx.table.cell(rx.text(user["created"], size="1", font_family=MONO)),
        rx.table.cell(_actions(user)),
        align="center",
        class_name="user-row",
    )


def _actions(user: rx.Var) -> rx.Component:
    """Activate a pending sign-up / disable an active account, and open the edit dialog."""
    return rx.hstack(
        rx.cond(
            user["status"] == "active",
            rx.button(t("admin.disable"), size="1", variant="soft", color_scheme="red",
                      on_click=AdminUsersState.set_status(user["username"], "disabled"), class_name="user-disable"),
            rx.button(t("admin.activate"), size="1", variant="soft", color_scheme="green",
                      on_click=AdminUsersState.set_status(user["username"], "active"), class_name="user-activate"),
        ),
        rx.button(rx.icon("pencil", size=14), t("admin.edit"), size="1", variant="soft",
                  on_click=AdminUsersState.open_edit(user["username"]), class_name="user-edit"),
        spacing="2",
    )


def _limit_input(name: str, label: rx.Var) -> rx.Component:
    return field(label, rx.input(
        name=name, id=f"edit-{name}", default_value=AdminUsersState.edit_limits[name],
        placeholder=AppState.tr["admin.limit.default"], font_family=MONO, **_edits(f"edit.{name}"),
    ), error=field_error(S, f"edit.{name}", f"edit-{name.replace('_', '-')}-error"))


def _edit_dialog() -> rx.Component:
    """Role, status and limits of one account (one all-or-nothing change)."""
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(AdminUsersState.edit_title),
            rx.dialog.description(t("admin.edit.subtitle"), size="2", color_scheme="gray"),
            rx.form(
                rx.vstack(
                    rx.grid(
                        field(t("admin.role"), rx.select.root(
                            rx.select.trigger(width="100%", id="edit-role"),
                            rx.select.content(*[rx.select.item(t(f"role.{r}"), value=r) for r in ROLES]),
                            value=AdminUsersState.edit_role, on_change=AdminUsersState.set_edit_role,
                        ), error=field_error(S, "edit.role", "edit-role-error")),
                        field(t("admin.status"), rx.select.root(
                            rx.select.trigger(width="100%", id="edit-status"),
                            rx.select.content(*[rx.select.item(t(f"status.{x}"), value=x) for x in STATUSES]),
                            value=AdminUsersState.edit_status, on_change=AdminUsersState.set_edit_status,
                        ), error=field_error(S, "edit.status", "edit-status-error")),
                        _limit_input("max_sessions", t("admin.max_sessions")),
                        _limit_input("max_accelerators_per_job", t("admin.max_accelerators_per_job")),
                        _limit_input("max_runtime", t("admin.max_runtime")),
                        columns=rx.breakpoints(initial="1", sm="2"),
                        spacing="4",
                        width="100%",
                    ),
                    error_callout(AdminUsersState.edit_error, id="edit-user-error"),
                    rx.hstack(
                        rx.cond(AdminUsersState.edit_sign_in.contains("password"),
                                rx.button(rx.icon("key_round", size=14), t("identity.reset.open"), type="button",
                                          variant="soft", color_scheme="orange", id="reset-password-open",
                                          on_click=AdminUsersState.open_reset(AdminUsersState.edit_username))),
                        rx.spacer(),
                        rx.dialog.close(rx.button(t("admin.edit.cancel"), variant="soft", color_scheme="gray",
                                                  type="button")),
                        rx.button(t("admin.edit.save"), type="submit", id="edit-user-save"),
                        justify="end", width="100%",
                    ),
                    spacing="4", width="100%", margin_top="var(--space-3)",
                ),
                on_submit=AdminUsersState.save_edit,
                reset_on_submit=False,
                key=AdminUsersState.edit_username,
            ),
            max_width="640px",
        ),
        open=AdminUsersState.edit_open,
        on_open_change=AdminUsersState.set_edit_open,
    )


def _password_input(name: str, label: rx.Var) -> rx.Component:
    return field(label, rx.input(
        name=name, id=f"reset-{name.replace('_', '-')}", type="password", auto_complete="new-password",
        required=True, min_length=8, max_length=1024,
        color_scheme=rx.cond(AdminUsersState.reset_error_field == name, "red", "gray"),
    ))


def _reset_dialog() -> rx.Component:
    """A new password for one account, typed twice; its sessions and login tokens end."""
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(t("identity.reset.title"), " ", rx.text(AdminUsersState.reset_username, as_="span",
                                                                       font_family=MONO)),
            rx.dialog.description(t("identity.reset.subtitle"), size="2", color_scheme="gray"),
            rx.form(
                rx.vstack(
                    _password_input("new_password", t("identity.password.new")),
                    _password_input("new_password_again", t("identity.password.again")),
                    error_callout(AdminUsersState.reset_error, id="reset-password-error"),
                    rx.hstack(
                        rx.dialog.close(rx.button(t("admin.edit.cancel"), variant="soft", color_scheme="gray",
                                                  type="button")),
                        rx.button(t("identity.reset.submit"), type="submit", color_scheme="orange",
                                  id="reset-password-save"),
                        justify="end", width="100%",
                    ),
                    spacing="4", width="100%", margin_top="var(--space-3)",
                ),
                on_submit=AdminUsersState.reset_password,
                reset_on_submit=True,
                key=AdminUsersState.reset_key,
            ),
            max_width="480px",
        ),
        open=AdminUsersState.reset_open,
        on_open_change=AdminUsersState.set_reset_open,
    )


def t_status(status: rx.Var) -> rx.Var:
    """Translated account status."""
    return AppState.tr[rx.Var.create("status.") + status]


def _users_table() -> rx.Component:
    return rx.card(
        rx.vstack(
            section_title(t("admin.list.title"), "users"),
            rx.table.root(
                rx.table.header(rx.table.row(
                    rx.table.column_header_cell(t("admin.col.username")),
                    rx.table.column_header_cell(t("admin.col.display_name")),
                    rx.table.column_header_cell(t("admin.col.email")),
                    rx.table.column_header_cell(t("admin.col.role")),
                    rx.table.column_header_cell(t("admin.col.status")),
                    rx.table.column_header_cell(t("admin.col.project")),
                    rx.table.column_header_cell(t("admin.col.created")),
                    rx.table.column_header_cell(t("admin.col.actions")),
                )),
                rx.table.body(rx.foreach(AdminUsersState.users, _user_row)),
                variant="ghost",
                size="2",
                width="100%",
                id="users-table",
            ),
            spacing="3",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def admin_users_page() -> rx.Component:
    """User administration."""
    return shell(
        page_header(t("admin.title"), t("admin.subtitle")),
        rx.cond(
            AdminUsersState.loaded,
            rx.cond(
                AdminUsersState.forbidden,
                admins_only(t("admin.forbidden"), "admin-forbidden"),
                rx.vstack(rx.cond(AdminUsersState.pending_notice != "", rx.callout.root(
                              rx.callout.icon(rx.icon("user_check")), rx.callout.text(AdminUsersState.pending_notice),
                              color_scheme="amber", size="1", id="users-pending")),
                          error_callout(AdminUsersState.action_error, id="users-error"), _create_form(), _users_table(),
                          _edit_dialog(), _reset_dialog(), spacing="5", width="100%"),
            ),
            rx.vstack(error_callout(AdminUsersState.error), loading(), width="100%"),
        ),
        active="admin",
    )
