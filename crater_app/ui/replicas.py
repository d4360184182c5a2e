"""The job page's replica parts: the replicas table, the log's replica selector and the manifest section (shown
only where the backend keeps the objects it made)."""

from __future__ import annotations

import reflex as rx

from crater_app.state import JobDetailState
from crater_app.ui.components import MONO, or_empty, section_title, t

#: replica phase -> badge color
PHASE_COLORS = (("Pending", "amber"), ("Running", "blue"), ("Succeeded", "green"), ("Failed", "red"))


def _phase(row: rx.Var) -> rx.Component:
    return rx.badge(row["phase_text"], color_scheme=rx.match(row["phase"], *PHASE_COLORS, "gray"), variant="soft",
                    size="1", radius="full", custom_attrs={"data-phase": row["phase"]})


def _row(row: rx.Var) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(row["task"], weight="medium", size="2")),
        rx.table.cell(rx.text(row["replica"], font_family=MONO, size="2")),
        rx.table.cell(_phase(row)),
        rx.table.cell(or_empty(row["node"])),
        rx.table.cell(or_empty(row["devices"])),
        rx.table.cell(or_empty(row["exit_code"])),
        rx.table.cell(rx.text(row["restarts"], font_family=MONO, size="2")),
        rx.table.cell(rx.text(row["reason_text"], size="2", title=row["message"],
                              custom_attrs={"data-reason": row["reason"]})),
        custom_attrs={"data-replica": row["key"]},
        align="center",
    )


def replicas_section() -> rx.Component:
    """The replicas table: task, replica, phase, node, devices, exit code, restarts, reason (its message on hover)."""
    return rx.card(
        rx.vstack(
            section_title(t("job.section.replicas"), "boxes"),
            rx.cond(
                JobDetailState.replicas.length() > 0,
                rx.box(
                    rx.table.root(
                        rx.table.header(rx.table.row(
                            rx.table.column_header_cell(t("job.replicas.task")),
                            rx.table.column_header_cell(t("job.replicas.replica")),
                            rx.table.column_header_cell(t("job.replicas.phase")),
                            rx.table.column_header_cell(t("job.replicas.node")),
                            rx.table.column_header_cell(t("job.replicas.devices")),
                            rx.table.column_header_cell(t("job.replicas.exit_code")),
                            rx.table.column_header_cell(t("job.replicas.restarts")),
                            rx.table.column_header_cell(t("job.replicas.reason")),
                        )),
                        rx.table.body(rx.foreach(JobDetailState.replica_rows, _row)),
                        size="1",
                        variant="ghost",
                        width="100%",
                        id="job-replicas",
                    ),
                    overflow_x="auto",
                    width="100%",
                ),
                rx.text(t("job.replicas.none"), size="2", color_scheme="gray", id="job-replicas-none"),
            ),
            spacing="3",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def replica_picker() -> rx.Component:
    """The log's replica selector (``task/index``), shown when the job has more than one replica."""
    return rx.cond(
        JobDetailState.replica_keys.length() > 1,
        rx.hstack(
            rx.text(t("job.logs.replica"), size="1", color_scheme="gray"),
            rx.select(JobDetailState.replica_keys, value=JobDetailState.log_key,
                      on_change=JobDetailState.pick_replica, size="1", id="log-replica"),
            align="center",
            spacing="2",
        ),
        rx.fragment(),
    )


def manifest_section() -> rx.Component:
    """The objects the backend made as YAML, collapsed until asked for; nothing on a backend that keeps none."""
    return rx.cond(
        JobDetailState.keeps_manifests,
        rx.card(
            rx.vstack(
                rx.hstack(
                    section_title(t("job.section.manifest"), "file_code"),
                    rx.spacer(),
                    rx.cond(
                        JobDetailState.manifest != "",
                        rx.button(rx.cond(JobDetailState.manifest_open, t("job.manifest.hide"),
                                          t("job.manifest.show")),
                                  on_click=JobDetailState.toggle_manifest, variant="soft", size="1",
                                  id="toggle-manifest"),
                        rx.fragment(),
                    ),
                    width="100%",
                    align="center",
                ),
                rx.text(rx.cond(JobDetailState.manifest != "", t("job.manifest.hint"), t("job.manifest.none")),
                        size="2", color_scheme="gray"),
                rx.cond(
                    JobDetailState.manifest_open & (JobDetailState.manifest != ""),
                    rx.box(
                        rx.el.pre(JobDetailState.manifest, id="job-manifest",
                                  style={"margin": "0", "white-space": "pre", "font-family": MONO,
                                         "font-size": "12.5px", "line-height": "1.55"}),
                        max_height="480px",
                        overflow="auto",
                        padding="var(--space-3)",
                        border_radius="var(--radius-3)",
                        background_color=rx.color("gray", 2),
                        width="100%",
                    ),
                    rx.fragment(),
                ),
                spacing="3",
                width="100%",
            ),
            size="3",
            width="100%",
            id="job-manifest-section",
        ),
        rx.fragment(),
    )
