"""/nodes: each node's capacity and every accelerator with the job holding it."""

from __future__ import annotations

import reflex as rx

from crater_app.state import NodesState
from crater_app.ui.components import (
    MONO, empty_mark, error_callout, loading, or_empty, page_header, shell, t, wide_only,
)


def _meter(label: rx.Var, used: rx.Var, total: rx.Var, percent: rx.Var, unit: rx.Var | str = "") -> rx.Component:
    return rx.vstack(
        rx.hstack(
            rx.text(label, size="2", color_scheme="gray"),
            rx.spacer(),
            rx.text(used, " / ", total, unit, size="2", weight="medium"),
            width="100%",
        ),
        rx.progress(value=percent, max=100, size="2"),
        spacing="2",
        width="100%",
    )


def _device_row(device: rx.Var) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.badge("GPU ", device.index, variant="outline", font_family=MONO)),
        rx.table.cell(rx.text(device.model, size="2", weight="medium", white_space="nowrap")),
        rx.table.cell(rx.text(device.memory, size="2", white_space="nowrap")),
        rx.table.cell(rx.text(device.uuid, size="1", font_family=MONO, color_scheme="gray"),
                      display=wide_only("table-cell")),
        rx.table.cell(
            rx.cond(
                device.busy,
                rx.badge(rx.icon("zap", size=12), t("nodes.device.busy"), color_scheme="blue", variant="soft",
                         radius="full"),
                rx.badge(rx.icon("circle_check", size=12), t("nodes.device.free"), color_scheme="green",
                         variant="soft", radius="full"),
            )
        ),
        rx.table.cell(
            rx.cond(
                device.held,
                rx.link("#", device.job_id, " ", device.job_name, href="/jobs/" + device.job_id, class_name="device-job"),
                rx.cond(device.busy, rx.text(t("nodes.device.hidden"), size="2", color_scheme="gray"), empty_mark()),
            )
        ),
        rx.table.cell(or_empty(device.user)),
        align="center",
        class_name="device-row",
    )


def _node_card(node: rx.Var) -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.center(rx.icon("server", size=20), background_color=rx.color("accent", 3),
                          color=rx.color("accent", 11), border_radius="var(--radius-3)", width="40px",
                          height="40px"),
                rx.vstack(
                    rx.heading(node.name, size="5"),
                    rx.hstack(
                        rx.badge(t("nodes.backend"), ": ", node.backend, variant="surface", color_scheme="gray"),
                        rx.badge(t("nodes.source"), ": ", node.device_source, variant="surface", color_scheme="gray",
                                 max_width="100%", overflow="hidden"),
                        spacing="2",
                        wrap="wrap",
                    ),
                    spacing="1",
                    min_width="0",
                ),
                align="center",
                spacing="3",
            ),
            rx.grid(
                _meter(t("nodes.cpu"), node.cpu_allocated, node.cpu, node.cpu_percent),
                _meter(t("nodes.memory"), node.memory_allocated, node.memory, node.memory_percent),
                _meter(t("nodes.gpus"), node.gpus_busy, node.gpus_total,
                       rx.cond(node.gpus_total > 0, node.gpus_busy * 100 / node.gpus_total, 0)),
                columns=rx.breakpoints(initial="1", sm="3"),
                spacing="5",
                width="100%",
            ),
            rx.cond(
                node.devices.length() > 0,
                rx.table.root(
                    rx.table.header(rx.table.row(
                        rx.table.column_header_cell(t("nodes.col.device")),
                        rx.table.column_header_cell(t("nodes.col.model")),
                        rx.table.column_header_cell(t("nodes.col.memory")),
                        rx.table.column_header_cell(t("nodes.col.uuid"), display=wide_only("table-cell")),
                        rx.table.column_header_cell(t("nodes.col.status")),
                        rx.table.column_header_cell(t("nodes.col.job")),
                        rx.table.column_header_cell(t("nodes.col.user")),
                    )),
                    rx.table.body(rx.foreach(node.devices, _device_row)),
                    variant="ghost",
                    size="2",
                    width="100%",
                ),
                rx.text(t("nodes.no_devices"), size="2", color_scheme="gray"),
            ),
            spacing="5",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def nodes_page() -> rx.Component:
    """The nodes and their accelerators."""
    return shell(
        page_header(
            t("nodes.title"),
            t("nodes.subtitle"),
            rx.button(rx.icon("refresh_cw", size=14), t("common.refresh"), variant="soft", on_click=NodesState.load),
        ),
        error_callout(NodesState.error),
        rx.cond(NodesState.loaded, rx.vstack(rx.foreach(NodesState.nodes, _node_card), spacing="5", width="100%"),
                loading()),
        active="nodes",
    )
