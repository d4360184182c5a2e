"""/projects/[name]: a project's details and quota (edited by platform admins); its members for platform admins and
the project's admins, who also add members, change their roles and shares and remove them (the services enforce
each of these)."""

from __future__ import annotations

import reflex as rx

from crater_app.domain.policy import PROJECT_ROLES
from crater_app.state import ProjectDetailState
from crater_app.ui.components import (
    MONO, empty_mark, error_callout, loading, or_empty, page_header, section_title, shell, t, t_format, wide_only,
)
from crater_app.ui.forms import clears, field, field_error, invalid
from crater_app.ui.governance import confirm_dialog, expiry_badge, project_role_badge
from crater_app.ui.quota import quota_card, quota_dialog, share_cell, share_dialog

P = ProjectDetailState.project
WIDE_CELL = {"display": wide_only("table-cell")}


def _crumbs() -> rx.Component:
    return rx.hstack(
        rx.link(t("nav.projects"), href="/projects", size="2", color_scheme="gray", id="crumb-projects"),
        rx.icon("chevron_right", size=14, color=rx.color("gray", 9)),
        rx.text(P["name"], size="2", color_scheme="gray", font_family=MONO),
        align="center",
        spacing="1",
    )


def _title() -> rx.Component:
    return rx.hstack(
        rx.heading(rx.cond(P["display_name"] != "", P["display_name"], P["name"]), size="7", weight="bold",
                   id="page-title", word_break="break-word"),
        expiry_badge(P, id="project-expiry-badge"),
        align="center",
        spacing="3",
        wrap="wrap",
    )


def _item(label: rx.Var, value, id: str | None = None) -> rx.Component:
    return rx.data_list.item(
        rx.data_list.label(label, min_width="140px"),
        rx.data_list.value(value, **({"id": id} if id else {})),
    )


def _details() -> rx.Component:
    return rx.card(
        rx.vstack(
            section_title(t("project.section.details"), "info"),
            rx.data_list.root(
                _item(t("projects.name"), rx.text(P["name"], font_family=MONO), "project-name"),
                _item(t("projects.display_name"), or_empty(P["display_name"])),
                _item(t("projects.description"),
                      rx.text(or_empty(P["description"]), white_space="pre-wrap", word_break="break-word"),
                      "project-description"),
                _item(t("projects.expires"),
                      rx.hstack(
                          rx.cond(P["expires"] != "", rx.text(P["expires"], font_family=MONO, size="2"),
                                  rx.text(t("expiry.never_long"), size="2")),
                          expiry_badge(P),
                          align="center", spacing="2", wrap="wrap",
                      ),
                      "project-expiry"),
                _item(t("projects.col.role"),
                      rx.cond(P["role"] != "", project_role_badge(P["role"]),
                              rx.text(t("project.not_member"), size="2", color_scheme="gray")),
                      "project-my-role"),
                _item(t("projects.col.members"), P["members"], "project-member-count"),
                _item(t("projects.col.created"), rx.text(P["created"], font_family=MONO, size="2")),
                orientation=rx.breakpoints(initial="vertical", sm="horizontal"),
                size="2",
            ),
            rx.cond(
                P["expiry"] == "expired",
                rx.callout.root(
                    rx.callout.icon(rx.icon("calendar_x")),
                    rx.callout.text(t("project.expired.notice")),
                    color_scheme="red",
                    size="1",
                    id="project-expired-notice",
                ),
            ),
            spacing="4",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def _role_items() -> list[rx.Component]:
    return [rx.select.item(t(f"project.role.{r}"), value=r) for r in PROJECT_ROLES]


def _add_member_form() -> rx.Component:
    return rx.form(
        rx.flex(
            rx.box(
                field(t("members.username"),
                      rx.vstack(
                          rx.input(rx.input.slot(rx.icon("at_sign", size=14)), name="username", id="member-username",
                                   required=True, max_length=64, font_family=MONO, placeholder="alice",
                                   width="100%", on_change=clears(ProjectDetailState, "username"),
                                   aria_invalid=invalid(ProjectDetailState, "username")),
                          field_error(ProjectDetailState, "username", "member-username-error"),
                          spacing="1", width="100%",
                      )),
                flex="1",
                min_width="200px",
            ),
            rx.box(
                field(t("members.role"), rx.select.root(
                    rx.select.trigger(width="100%", id="member-role"),
                    rx.select.content(*_role_items()),
                    value=ProjectDetailState.new_member_role,
                    on_change=ProjectDetailState.set_new_member_role,
                ), error=field_error(ProjectDetailState, "role", "member-role-error")),
                width=rx.breakpoints(initial="100%", sm="180px"),
            ),
            rx.button(rx.icon("user_plus", size=16), t("members.add"), type="submit", id="add-member",
                      disabled=ProjectDetailState.busy, margin_top=rx.breakpoints(initial="0", sm="1.6em")),
            spacing="3",
            align="start",
            wrap="wrap",
            width="100%",
        ),
        on_submit=ProjectDetailState.add_member,
        reset_on_submit=False,
        key=ProjectDetailState.member_form_key,
        width="100%",
    )


def _member_row(member: rx.Var) -> rx.Component:
    role_cell = rx.cond(
        ProjectDetailState.can_manage,
        rx.select.root(
            rx.select.trigger(variant="soft", class_name="member-role-select", aria_label=t("members.role")),
            rx.select.content(*_role_items()),
            value=member["role"],
            on_change=lambda role: ProjectDetailState.change_role(member["username"], role),
            size="1",
            disabled=ProjectDetailState.busy,
        ),
        project_role_badge(member["role"]),
    )
    return rx.table.row(
        rx.table.cell(rx.text(member["username"], weight="medium", font_family=MONO, word_break="break-all")),
        rx.table.cell(or_empty(member["display_name"]), **WIDE_CELL),
        rx.table.cell(role_cell, custom_attrs={"data-role": member["role"]}, class_name="member-role"),
        rx.table.cell(share_cell(member), class_name="member-share"),
        rx.table.cell(rx.cond(member["default"] != "",
                              rx.badge(rx.icon("star", size=12), t("members.default"), variant="surface",
                                       color_scheme="gray"),
                              empty_mark()), **WIDE_CELL),
        rx.cond(
            ProjectDetailState.can_manage,
            rx.table.cell(
                rx.icon_button(rx.icon("user_minus", size=14), variant="ghost", color_scheme="red",
                               on_click=ProjectDetailState.ask_remove(member["username"]),
                               aria_label=t("members.remove"), title=t("members.remove"),
                               disabled=ProjectDetailState.busy, class_name="remove-member"),
                text_align="right",
            ),
        ),
        align="center",
        custom_attrs={"data-username": member["username"]},
        class_name="member-row",
    )


def _members() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(
                section_title(t("members.title"), "users"),
                rx.badge(ProjectDetailState.members.length(), variant="soft", radius="full"),
                align="center",
                spacing="2",
            ),
            rx.cond(ProjectDetailState.can_manage, _add_member_form()),
            error_callout(ProjectDetailState.form_error, id="members-form-error"),
            error_callout(ProjectDetailState.error, id="members-error"),
            rx.cond(
                ProjectDetailState.members.length() > 0,
                rx.table.root(
                    rx.table.header(rx.table.row(
                        rx.table.column_header_cell(t("members.col.username")),
                        rx.table.column_header_cell(t("members.col.display_name"), **WIDE_CELL),
                        rx.table.column_header_cell(t("members.col.role")),
                        rx.table.column_header_cell(t("share.col")),
                        rx.table.column_header_cell(t("members.col.default"), **WIDE_CELL),
                        rx.cond(ProjectDetailState.can_manage, rx.table.column_header_cell("")),
                    )),
                    rx.table.body(rx.foreach(ProjectDetailState.members, _member_row)),
                    variant="ghost",
                    size=rx.breakpoints(initial="1", sm="2"),
                    width="100%",
                    id="members-table",
                ),
                rx.text(t("members.empty"), size="2", color_scheme="gray", id="members-empty"),
            ),
            spacing="4",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def _members_hidden() -> rx.Component:
    return rx.callout.root(
        rx.callout.icon(rx.icon("eye_off")),
        rx.callout.text(t("members.hidden")),
        color_scheme="gray",
        variant="surface",
        size="1",
        id="members-hidden",
    )


def _remove_dialog() -> rx.Component:
    return confirm_dialog(
        open=ProjectDetailState.confirm_remove != "",
        on_open_change=ProjectDetailState.set_confirm_open,
        title=t("members.remove.title"),
        text=rx.text(t_format("members.remove.text", username=ProjectDetailState.confirm_remove, project=P["name"])),
        confirm=t("members.remove"),
        on_confirm=ProjectDetailState.remove,
        confirm_id="confirm-remove",
        icon="user_minus",
    )


def _not_found() -> rx.Component:
    return rx.center(
        rx.vstack(
            rx.icon("folder_x", size=36, color=rx.color("gray", 8)),
            rx.heading(t("project.not_found"), size="5", id="page-title"),
            rx.text(t("project.not_found.hint"), size="2", color_scheme="gray", text_align="center"),
            rx.link(rx.button(rx.icon("arrow_left", size=16), t("project.back"), variant="soft"), href="/projects"),
            align="center",
            spacing="3",
        ),
        padding_y="var(--space-9)",
        width="100%",
        id="project-not-found",
    )


def project_detail_page() -> rx.Component:
    """One project."""
    return shell(
        rx.cond(
            ProjectDetailState.loaded,
            rx.cond(
                ProjectDetailState.not_found,
                _not_found(),
                rx.vstack(
                    page_header(_title(), crumbs=_crumbs()),
                    _details(),
                    quota_card(),
                    rx.cond(ProjectDetailState.members_visible, _members(), _members_hidden()),
                    _remove_dialog(),
                    quota_dialog(),
                    share_dialog(),
                    spacing="5",
                    width="100%",
                ),
            ),
            rx.vstack(error_callout(ProjectDetailState.error), loading(), width="100%"),
        ),
        active="projects",
    )
