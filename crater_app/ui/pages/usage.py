"""/usage: accelerator-hours per day stacked by project (admins) or user (project admins), totals per key, the
caller's points balance, and the price table (editable by platform admins)."""

from __future__ import annotations

import reflex as rx

from crater_app.state import AppState
from crater_app.state.usage import UsageState
from crater_app.ui.components import MONO, empty_mark, error_callout, loading, page_header, section_title, shell, t


def _select(value: rx.Var, on_change, items: list[tuple[str, rx.Var]], id_: str, label: rx.Var) -> rx.Component:
    return rx.vstack(
        rx.text(label, size="1", color_scheme="gray", weight="medium"),
        rx.select.root(
            rx.select.trigger(id=id_, min_width="140px"),
            rx.select.content(*[rx.select.item(text, value=v) for v, text in items]),
            value=value,
            on_change=on_change,
            size="2",
        ),
        spacing="1",
    )


def _controls() -> rx.Component:
    return rx.hstack(
        _select(UsageState.group_by, UsageState.set_group_by, [
            ("project", t("usage.group.project")), ("user", t("usage.group.user")), ("model", t("usage.group.model")),
        ], "usage-group-by", t("usage.group_by")),
        _select(UsageState.window_days, UsageState.set_window_days, [
            ("7", t("usage.window.7")), ("30", t("usage.window.30")), ("90", t("usage.window.90")),
            ("365", t("usage.window.365")),
        ], "usage-window", t("usage.window")),
        _select(UsageState.granularity, UsageState.set_granularity, [
            ("day", t("usage.granularity.day")), ("month", t("usage.granularity.month")),
        ], "usage-granularity", t("usage.granularity")),
        spacing="4",
        wrap="wrap",
        align="end",
    )


def _stat(label: rx.Var, value: rx.Var, icon: str, id_: str) -> rx.Component:
    return rx.card(
        rx.hstack(
            rx.center(rx.icon(icon, size=18), background_color=rx.color("accent", 3), color=rx.color("accent", 11),
                      border_radius="var(--radius-3)", width="36px", height="36px"),
            rx.vstack(rx.text(label, size="1", color_scheme="gray"),
                      rx.text(value, size="5", weight="bold", id=id_), spacing="0"),
            align="center",
            spacing="3",
        ),
        width="100%",
    )


def _chart() -> rx.Component:
    return rx.card(
        rx.vstack(
            section_title(t("usage.chart.title"), "chart_column"),
            rx.cond(
                UsageState.series.length() > 0,
                rx.plotly(data=UsageState.figure, config={"displaylogo": False, "responsive": True}, width="100%",
                          id="usage-chart"),
                rx.text(t("usage.empty"), size="2", color_scheme="gray", id="usage-empty"),
            ),
            spacing="3",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def _totals_table() -> rx.Component:
    return rx.card(
        rx.vstack(
            section_title(t("usage.totals.title"), "table"),
            rx.table.root(
                rx.table.header(rx.table.row(
                    rx.table.column_header_cell(rx.match(
                        UsageState.group_by, ("user", t("usage.group.user")), ("model", t("usage.group.model")),
                        t("usage.group.project"))),
                    rx.table.column_header_cell(t("usage.col.accelerator_hours"), justify="end"),
                    rx.table.column_header_cell(t("usage.col.cpu_core_hours"), justify="end"),
                    rx.table.column_header_cell(t("usage.col.memory_gib_hours"), justify="end"),
                    rx.table.column_header_cell(t("usage.col.jobs"), justify="end"),
                )),
                rx.table.body(
                    rx.foreach(UsageState.totals, lambda r: rx.table.row(
                        rx.table.cell(rx.text(r["key"], font_family=MONO, weight="medium")),
                        rx.table.cell(r["accelerator_hours"], justify="end"),
                        rx.table.cell(r["cpu_core_hours"], justify="end"),
                        rx.table.cell(r["memory_gib_hours"], justify="end"),
                        rx.table.cell(r["jobs"], justify="end"),
                        class_name="usage-row",
                    )),
                    rx.table.row(
                        rx.table.row_header_cell(t("usage.total")),
                        rx.table.cell(rx.text(UsageState.total_accelerator_hours, weight="bold"), justify="end"),
                        rx.table.cell(rx.text(UsageState.total_cpu_core_hours, weight="bold"), justify="end"),
                        rx.table.cell(rx.text(UsageState.total_memory_gib_hours, weight="bold"), justify="end"),
                        rx.table.cell(rx.text(UsageState.total_jobs, weight="bold"), justify="end"),
                        id="usage-total-row",
                    ),
                ),
                variant="ghost",
                size="2",
                width="100%",
            ),
            spacing="3",
            width="100%",
            overflow_x="auto",
        ),
        size="3",
        width="100%",
    )


def _balance() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(
                section_title(t("billing.balance.title"), "wallet"),
                rx.spacer(),
                rx.badge(rx.cond(UsageState.billing_enabled, t("billing.on"), t("billing.off")),
                         color_scheme=rx.cond(UsageState.billing_enabled, "green", "gray"), variant="soft",
                         id="billing-state"),
                width="100%",
                align="center",
            ),
            rx.text(t("billing.balance.hint"), size="2", color_scheme="gray"),
            rx.hstack(
                rx.text(t("billing.extra"), size="2", color_scheme="gray"),
                rx.text(UsageState.extra_points, size="4", weight="bold", id="billing-extra"),
                rx.text(t("billing.points"), size="2", color_scheme="gray"),
                align="baseline",
                spacing="2",
            ),
            rx.cond(
                UsageState.allowances.length() > 0,
                rx.table.root(
                    rx.table.header(rx.table.row(
                        rx.table.column_header_cell(t("billing.col.project")),
                        rx.table.column_header_cell(t("billing.col.allowance"), justify="end"),
                        rx.table.column_header_cell(t("billing.col.used"), justify="end"),
                        rx.table.column_header_cell(t("billing.col.left"), justify="end"),
                    )),
                    rx.table.body(rx.foreach(UsageState.allowances, lambda r: rx.table.row(
                        rx.table.cell(rx.text(r["project"], font_family=MONO)),
                        rx.table.cell(r["allowance"], justify="end"),
                        rx.table.cell(r["used"], justify="end"),
                        rx.table.cell(rx.text(r["left"], weight="bold"), justify="end"),
                        class_name="allowance-row",
                    ))),
                    variant="ghost",
                    size="2",
                    width="100%",
                ),
                empty_mark(),
            ),
            rx.text(t("billing.period"), " ", UsageState.period, size="1", color_scheme="gray"),
            spacing="3",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def _price_cell(row: rx.Var, index: rx.Var, column: str, **props) -> rx.Component:
    """One cell of the price editor, with the service's error on it below (cleared when the cell changes)."""
    cell = index.to(str) + "." + column
    return rx.vstack(
        rx.input(value=row[column], read_only=~AppState.is_admin,
                 on_change=lambda v: UsageState.set_price_field(index, column, v),
                 aria_invalid=rx.cond(UsageState.field_errors.contains(cell), "true", "false"), **props),
        rx.cond(UsageState.field_errors.contains(cell),
                rx.text(UsageState.field_errors[cell], size="1", color=rx.color("red", 11), role="alert",
                        class_name="cell-error", custom_attrs={"data-column": column})),
        spacing="1",
    )


def _price_row(row: rx.Var, index: rx.Var) -> rx.Component:
    editable = AppState.is_admin
    return rx.table.row(
        rx.table.cell(_price_cell(row, index, "resource", placeholder="nvidia.com/gpu", font_family=MONO,
                                  max_length=253, aria_label=t("billing.col.resource"))),
        rx.table.cell(_price_cell(row, index, "model", placeholder=t("billing.model.any"), font_family=MONO,
                                  max_length=128, aria_label=t("billing.col.model"))),
        rx.table.cell(_price_cell(row, index, "points_per_hour", input_mode="decimal",
                                  aria_label=t("billing.col.price"), max_width="120px")),
        rx.table.cell(rx.cond(editable, rx.icon_button(rx.icon("trash_2", size=14), variant="ghost",
                                                       color_scheme="red", aria_label=t("billing.prices.remove"),
                                                       on_click=UsageState.remove_price(index)))),
        align="start",
        class_name="price-row",
    )


def _prices() -> rx.Component:
    return rx.card(
        rx.vstack(
            section_title(t("billing.prices.title"), "tag"),
            rx.text(t("billing.prices.hint"), size="2", color_scheme="gray"),
            rx.table.root(
                rx.table.header(rx.table.row(
                    rx.table.column_header_cell(t("billing.col.resource")),
                    rx.table.column_header_cell(t("billing.col.model")),
                    rx.table.column_header_cell(t("billing.col.price")),
                    rx.table.column_header_cell(""),
                )),
                rx.table.body(rx.foreach(UsageState.prices, _price_row)),
                variant="ghost",
                size="2",
                width="100%",
            ),
            rx.cond(UsageState.prices.length() == 0, rx.text(t("billing.prices.none"), size="2", color_scheme="gray")),
            error_callout(UsageState.form_error, id="price-error"),
            rx.cond(
                AppState.is_admin,
                rx.hstack(
                    rx.button(rx.icon("plus", size=14), t("billing.prices.add"), variant="soft",
                              on_click=UsageState.add_price, id="add-price"),
                    rx.button(rx.icon("save", size=14), t("billing.prices.save"), on_click=UsageState.save_prices,
                              id="save-prices"),
                    justify="end",
                    width="100%",
                ),
            ),
            spacing="3",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def usage_page() -> rx.Component:
    """Usage report, balance and prices."""
    return shell(
        page_header(
            t("usage.title"),
            t("usage.subtitle"),
            rx.button(rx.icon("refresh_cw", size=14), t("common.refresh"), variant="soft", on_click=UsageState.load),
        ),
        _controls(),
        error_callout(UsageState.error, id="usage-error"),
        rx.cond(
            UsageState.loaded,
            rx.vstack(
                rx.grid(
                    _stat(t("usage.col.accelerator_hours"), UsageState.total_accelerator_hours, "cpu", "usage-acc"),
                    _stat(t("usage.col.cpu_core_hours"), UsageState.total_cpu_core_hours, "gauge", "usage-cpu"),
                    _stat(t("usage.col.memory_gib_hours"), UsageState.total_memory_gib_hours, "memory_stick",
                          "usage-mem"),
                    _stat(t("usage.col.jobs"), UsageState.total_jobs, "list_checks", "usage-jobs"),
                    columns=rx.breakpoints(initial="2", md="4"),
                    spacing="4",
                    width="100%",
                ),
                _chart(),
                _totals_table(),
                rx.grid(_balance(), _prices(), columns=rx.breakpoints(initial="1", md="2"), spacing="5",
                        width="100%"),
                spacing="5",
                width="100%",
            ),
            loading(),
        ),
        active="usage",
    )
