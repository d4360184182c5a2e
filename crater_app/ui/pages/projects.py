"""/projects: the projects the user belongs to (platform admins: all), and the create form for admins."""

from __future__ import annotations

import reflex as rx

from crater_app.state import AppState, ProjectsState
from crater_app.ui.components import (
    MONO, empty_mark, error_callout, loading, or_empty, page_header, section_title, shell, t, wide_only,
)
from crater_app.ui.forms import clears, field, field_error, invalid
from crater_app.ui.governance import expiry_badge, project_role_badge

S = ProjectsState
WIDE_CELL = {"display": wide_only("table-cell")}


def _error(name: str) -> rx.Component:
    return field_error(S, name, f"project-{name.replace('_', '-')}-error")


def _edits(name: str) -> dict:
    """The props that clear input ``name``'s error when it changes and mark it invalid while it has one."""
    return {"on_change": clears(S, name), "aria_invalid": invalid(S, name)}


def _create_form() -> rx.Component:
    return rx.card(
        rx.form(
            rx.vstack(
                section_title(t("projects.create.title"), "folder_plus"),
                rx.grid(
                    field(t("projects.name"),
                          rx.vstack(rx.input(name="name", id="new-project-name", required=True, max_length=63,
                                             font_family=MONO, placeholder="vision-lab", width="100%",
                                             **_edits("name")),
                                    _error("name"), spacing="1", width="100%"),
                          t("projects.name.hint"), required=True),
                    field(t("projects.display_name"),
                          rx.vstack(rx.input(name="display_name", id="new-project-display-name", max_length=128,
                                             placeholder=t("projects.display_name.placeholder"), width="100%",
                                             **_edits("display_name")),
                                    _error("display_name"), spacing="1", width="100%")),
                    field(t("projects.expires"),
                          rx.vstack(rx.input(name="expires_at", id="new-project-expiry", type="date", width="100%",
                                             **_edits("expires_at")),
                                    _error("expires_at"), spacing="1", width="100%"),
                          t("projects.expires.hint")),
                    columns=rx.breakpoints(initial="1", sm="3"),
                    spacing="4",
                    width="100%",
                ),
                field(t("projects.description"),
                      rx.vstack(rx.text_area(name="description", id="new-project-description", rows="2",
                                             max_length=1024, width="100%", **_edits("description")),
                                _error("description"), spacing="1", width="100%")),
                error_callout(ProjectsState.form_error, id="create-project-error"),
                rx.hstack(
                    rx.button(rx.cond(ProjectsState.creating, rx.spinner(size="2"), rx.icon("folder_plus", size=16)),
                              t("projects.create.submit"), type="submit", disabled=ProjectsState.creating,
                              id="create-project"),
                    justify="end",
                    width="100%",
                ),
                spacing="4",
                width="100%",
            ),
            on_submit=ProjectsState.create,
            reset_on_submit=False,
            key=ProjectsState.form_key,
        ),
        size="3",
        width="100%",
    )


def _row(project: rx.Var) -> rx.Component:
    return rx.table.row(
        rx.table.cell(
            rx.vstack(
                rx.link(project["name"], href="/projects/" + project["name"], weight="medium", font_family=MONO,
                        class_name="project-link", word_break="break-all"),
                rx.cond(project["display_name"] != "",
                        rx.text(project["display_name"], size="1", color_scheme="gray")),
                spacing="1",
            )
        ),
        rx.table.cell(rx.text(or_empty(project["description"]), size="2", max_width="360px", overflow="hidden",
                              text_overflow="ellipsis", white_space="nowrap", title=project["description"]),
                      **WIDE_CELL),
        rx.table.cell(rx.cond(project["role"] != "", project_role_badge(project["role"]), empty_mark()),
                      class_name="project-role"),
        rx.table.cell(rx.text(project["members"], size="2"), **WIDE_CELL),
        rx.table.cell(
            rx.vstack(
                expiry_badge(project),
                rx.cond(project["expires"] != "",
                        rx.text(project["expires"], size="1", color_scheme="gray", font_family=MONO,
                                white_space="nowrap")),
                spacing="1",
            ),
            class_name="project-expiry",
        ),
        rx.table.cell(rx.text(project["created"], size="1", font_family=MONO, white_space="nowrap"), **WIDE_CELL),
        align="center",
        custom_attrs={"data-project": project["name"]},
        class_name="project-row",
    )


def _empty() -> rx.Component:
    return rx.center(
        rx.vstack(
            rx.icon("folder_open", size=36, color=rx.color("gray", 8)),
            rx.text(t("projects.empty.title"), weight="medium"),
            rx.text(rx.cond(AppState.is_admin, t("projects.empty.admin"), t("projects.empty.hint")), size="2",
                    color_scheme="gray", text_align="center"),
            align="center",
            spacing="2",
        ),
        padding_y="var(--space-8)",
        width="100%",
        id="projects-empty",
    )


def _table() -> rx.Component:
    return rx.card(
        rx.vstack(
            section_title(rx.cond(AppState.is_admin, t("projects.list.all"), t("projects.list.mine")), "folders"),
            rx.cond(
                ProjectsState.rows.length() > 0,
                rx.table.root(
                    rx.table.header(rx.table.row(
                        rx.table.column_header_cell(t("projects.col.name")),
                        rx.table.column_header_cell(t("projects.col.description"), **WIDE_CELL),
                        rx.table.column_header_cell(t("projects.col.role"), white_space="nowrap"),
                        rx.table.column_header_cell(t("projects.col.members"), **WIDE_CELL),
                        rx.table.column_header_cell(t("projects.col.expires")),
                        rx.table.column_header_cell(t("projects.col.created"), **WIDE_CELL),
                    )),
                    rx.table.body(rx.foreach(ProjectsState.rows, _row)),
                    variant="ghost",
                    size=rx.breakpoints(initial="1", sm="2"),
                    width="100%",
                    id="projects-table",
                ),
                _empty(),
            ),
            spacing="3",
            width="100%",
        ),
        size=rx.breakpoints(initial="2", sm="3"),
        width="100%",
    )


def projects_page() -> rx.Component:
    """The projects list (and, for platform admins, the create form)."""
    return shell(
        page_header(t("projects.title"), t("projects.subtitle")),
        rx.cond(
            ProjectsState.loaded,
            rx.vstack(
                rx.cond(AppState.is_admin, _create_form()),
                error_callout(ProjectsState.error),
                _table(),
                spacing="5",
                width="100%",
            ),
            rx.vstack(error_callout(ProjectsState.error), loading(), width="100%"),
        ),
        active="projects",
    )
