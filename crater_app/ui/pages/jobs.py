"""/jobs: the live jobs list (phase filter, name search, pagination, newest first)."""

from __future__ import annotations

import reflex as rx

from crater_app.state import JobsState
from crater_app.state.jobs import ALL, PHASES
from crater_app.ui.components import (
    MONO, error_callout, loading, narrow_only, page_header, phase_badge, shell, t, wide_only,
)
from crater_app.ui.governance import pager


# Columns shown on wide screens only: phones keep ID, name (with the status sentence) and status.
WIDE_CELL = {"display": wide_only("table-cell")}


def _row(job: rx.Var) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text("#", job["id"], color_scheme="gray", font_family=MONO, size="2", white_space="nowrap")),
        rx.table.cell(
            rx.vstack(
                rx.link(job["name"], href="/jobs/" + job["id"], weight="medium", class_name="job-link",
                        word_break="break-all"),
                rx.text(job["reason"], size="1", color_scheme="gray",
                        max_width=rx.breakpoints(initial="160px", sm="360px"), title=job["reason"],
                        overflow="hidden", text_overflow="ellipsis", white_space="nowrap"),
                spacing="1",
            )
        ),
        rx.table.cell(phase_badge(job["phase"])),
        rx.table.cell(job["user"], **WIDE_CELL),
        rx.table.cell(job["project"], **WIDE_CELL),
        rx.table.cell(rx.text(job["gpus"], size="2"), **WIDE_CELL),
        rx.table.cell(rx.text(job["created"], size="2", font_family=MONO, white_space="nowrap"), **WIDE_CELL),
        rx.table.cell(rx.text(job["runtime"], size="2", white_space="nowrap"), **WIDE_CELL),
        align="center",
        custom_attrs={"data-job-id": job["id"]},
        class_name="job-row",
    )


def _toolbar() -> rx.Component:
    return rx.flex(
        rx.form(
            rx.hstack(
                rx.input(
                    rx.input.slot(rx.icon("search", size=16)),
                    name="q",
                    placeholder=t("jobs.search.placeholder"),
                    default_value=JobsState.query,
                    max_length=63,
                    width=rx.breakpoints(initial="100%", sm="260px"),
                    id="job-search",
                ),
                rx.button(t("jobs.search.button"), type="submit", variant="soft"),
                spacing="2",
                width="100%",
            ),
            on_submit=JobsState.search,
            reset_on_submit=False,
            key=JobsState.search_key,
            width=rx.breakpoints(initial="100%", sm="auto"),
        ),
        rx.spacer(),
        # Phones get a drop-down: the six segments do not fit next to each other.
        rx.segmented_control.root(
            rx.segmented_control.item(t("jobs.filter.all"), value=ALL),
            *[rx.segmented_control.item(t(f"phase.{p}"), value=p) for p in PHASES],
            value=JobsState.phase,
            on_change=JobsState.set_phase_filter,
            id="phase-filter",
            display=wide_only("inline-grid"),
        ),
        rx.box(
            rx.select.root(
                rx.select.trigger(width="100%", aria_label=t("jobs.filter.label"), id="phase-filter-select"),
                rx.select.content(
                    rx.select.item(t("jobs.filter.all"), value=ALL),
                    *[rx.select.item(t(f"phase.{p}"), value=p) for p in PHASES],
                ),
                value=JobsState.phase,
                on_change=JobsState.set_phase_filter,
            ),
            display=narrow_only("block"),
            width="100%",
        ),
        width="100%",
        gap="3",
        wrap="wrap",
        align="center",
    )


def _empty() -> rx.Component:
    return rx.center(
        rx.vstack(
            rx.icon("inbox", size=36, color=rx.color("gray", 8)),
            rx.text(t("jobs.empty.title"), weight="medium"),
            rx.text(t("jobs.empty.hint"), size="2", color_scheme="gray"),
            rx.cond(
                (JobsState.query != "") | (JobsState.phase != ALL),
                rx.button(t("jobs.filter.clear"), variant="soft", on_click=JobsState.clear_filters),
                rx.link(rx.button(rx.icon("plus", size=16), t("jobs.new")), href="/jobs/new"),
            ),
            align="center",
            spacing="2",
        ),
        padding_y="var(--space-9)",
        width="100%",
    )


def _table() -> rx.Component:
    return rx.table.root(
        rx.table.header(
            rx.table.row(
                rx.table.column_header_cell(t("jobs.col.id"), width=rx.breakpoints(initial="auto", sm="72px"),
                                            white_space="nowrap"),
                rx.table.column_header_cell(t("jobs.col.name")),
                rx.table.column_header_cell(t("jobs.col.status"), white_space="nowrap"),
                rx.table.column_header_cell(t("jobs.col.user"), **WIDE_CELL),
                rx.table.column_header_cell(t("jobs.col.project"), **WIDE_CELL),
                rx.table.column_header_cell(t("jobs.col.accelerators"), **WIDE_CELL),
                rx.table.column_header_cell(t("jobs.col.created"), **WIDE_CELL),
                rx.table.column_header_cell(t("jobs.col.runtime"), **WIDE_CELL),
            )
        ),
        rx.table.body(rx.foreach(JobsState.view_rows, _row)),
        variant="ghost",
        size=rx.breakpoints(initial="1", sm="2"),
        width="100%",
        id="jobs-table",
    )




def jobs_page() -> rx.Component:
    """The jobs list."""
    return shell(
        page_header(
            t("jobs.title"),
            t("jobs.subtitle"),
            rx.badge(rx.box(width="6px", height="6px", border_radius="50%", background_color=rx.color("green", 9)),
                     t("jobs.live"), color_scheme="green", variant="surface", radius="full"),
            rx.link(rx.button(rx.icon("plus", size=16), t("jobs.new"), size="2", id="new-job"), href="/jobs/new"),
        ),
        error_callout(JobsState.error),
        rx.card(
            rx.vstack(
                _toolbar(),
                rx.cond(
                    JobsState.loaded,
                    rx.cond(JobsState.total > 0, rx.vstack(_table(), pager(JobsState, "jobs-total"), width="100%", spacing="3"), _empty()),
                    loading(),
                ),
                spacing="4",
                width="100%",
            ),
            size="2",
            width="100%",
        ),
        active="jobs",
    )
