"""/admin/operation-logs: who did what, when, with what result (platform admins; read-only by design)."""

from __future__ import annotations

import reflex as rx

from crater_app.state import OperationLogState
from crater_app.state.oplog import ANY_ACTION
from crater_app.ui.components import (
    MONO, error_callout, loading, narrow_only, or_empty, page_header, role_badge, shell, t, wide_only,
)
from crater_app.ui.forms import clears, field, field_error, invalid
from crater_app.ui.governance import admins_only, pager

S = OperationLogState
WIDE_CELL = {"display": wide_only("table-cell")}


def _edits(name: str) -> dict:
    """The props that clear filter ``name``'s error when it changes and mark it invalid while it has one."""
    return {"on_change": clears(S, name), "aria_invalid": invalid(S, name)}


def _filters() -> rx.Component:
    return rx.card(
        rx.form(
            rx.vstack(
                rx.grid(
                    field(t("oplog.filter.actor"),
                          rx.input(rx.input.slot(rx.icon("user", size=14)), name="actor", id="oplog-actor",
                                   default_value=S.filters["actor"], max_length=64, font_family=MONO,
                                   placeholder="admin", width="100%", **_edits("actor")),
                          error=field_error(S, "actor", "oplog-actor-error")),
                    field(t("oplog.filter.action"), rx.select.root(
                        rx.select.trigger(width="100%", id="oplog-action"),
                        rx.select.content(
                            rx.select.item(t("oplog.filter.any_action"), value=ANY_ACTION),
                            rx.foreach(S.action_options, lambda a: rx.select.item(a, value=a)),
                        ),
                        value=S.action_choice,
                        on_change=S.set_action_choice,
                    ), error=field_error(S, "action", "oplog-action-error")),
                    field(t("oplog.filter.target"),
                          rx.input(rx.input.slot(rx.icon("search", size=14)), name="target", id="oplog-target",
                                   default_value=S.filters["target"], max_length=255,
                                   placeholder=t("oplog.filter.target.placeholder"), width="100%",
                                   **_edits("target")),
                          error=field_error(S, "target", "oplog-target-error")),
                    field(t("oplog.filter.from"),
                          rx.input(name="from", id="oplog-from", type="date", default_value=S.filters["from"],
                                   width="100%", **_edits("from")),
                          error=field_error(S, "from", "oplog-from-error")),
                    field(t("oplog.filter.to"),
                          rx.input(name="to", id="oplog-to", type="date", default_value=S.filters["to"],
                                   width="100%", **_edits("to")),
                          error=field_error(S, "to", "oplog-to-error")),
                    columns=rx.breakpoints(initial="1", xs="2", md="5"),
                    spacing="3",
                    width="100%",
                ),
                rx.hstack(
                    rx.text(t("oplog.filter.hint"), size="1", color_scheme="gray"),
                    rx.spacer(),
                    rx.cond(S.filtered,
                            rx.button(rx.icon("x", size=14), t("oplog.filter.clear"), type="button", variant="soft",
                                      color_scheme="gray", on_click=S.clear_filters, id="oplog-clear")),
                    rx.button(rx.icon("filter", size=14), t("oplog.filter.apply"), type="submit", id="oplog-apply"),
                    align="center",
                    spacing="3",
                    width="100%",
                    wrap="wrap",
                ),
                spacing="3",
                width="100%",
            ),
            on_submit=S.apply,
            reset_on_submit=False,
            key=S.filter_key,
        ),
        size="2",
        width="100%",
    )


def _result_badge(result: rx.Var) -> rx.Component:
    return rx.badge(
        rx.match(result, ("ok", t("oplog.result.ok")), ("error", t("oplog.result.error")), result),
        color_scheme=rx.match(result, ("ok", "green"), ("error", "red"), "gray"),
        variant="soft",
        custom_attrs={"data-result": result},
    )


def _actor_role(role: rx.Var) -> rx.Component:
    return rx.cond(role == "system", rx.badge(t("oplog.system"), variant="surface", color_scheme="gray"),
                   rx.cond(role != "", role_badge(role)))


def _row(entry: rx.Var) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(entry["at"], size="1", font_family=MONO, white_space="nowrap")),
        rx.table.cell(
            rx.hstack(rx.text(entry["actor"], size="2", weight="medium", font_family=MONO),
                      rx.box(_actor_role(entry["actor_role"]), display=wide_only("block")),
                      spacing="2", align="center", wrap="wrap"),
        ),
        rx.table.cell(
            rx.vstack(
                rx.code(entry["action"], variant="soft", size="1", word_break="break-all"),
                # Phones have no target column: the target goes under the action.
                rx.text(entry["target"], size="1", font_family=MONO, word_break="break-all",
                        display=narrow_only("block")),
                spacing="1",
            ),
            class_name="oplog-action",
        ),
        rx.table.cell(rx.text(entry["target"], size="2", font_family=MONO, word_break="break-all"), **WIDE_CELL),
        rx.table.cell(_result_badge(entry["result"]), **WIDE_CELL),
        rx.table.cell(rx.text(or_empty(entry["details"]), size="1", color_scheme="gray", word_break="break-word",
                              max_width="360px"), **WIDE_CELL),
        align="center",
        custom_attrs={"data-action": entry["action"], "data-log-id": entry["id"]},
        class_name="oplog-row",
    )


def _table() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.cond(
                S.total > 0,
                rx.vstack(
                    rx.table.root(
                        rx.table.header(rx.table.row(
                            rx.table.column_header_cell(t("oplog.col.at"), white_space="nowrap"),
                            rx.table.column_header_cell(t("oplog.col.actor")),
                            rx.table.column_header_cell(t("oplog.col.action")),
                            rx.table.column_header_cell(t("oplog.col.target"), **WIDE_CELL),
                            rx.table.column_header_cell(t("oplog.col.result"), **WIDE_CELL),
                            rx.table.column_header_cell(t("oplog.col.details"), **WIDE_CELL),
                        )),
                        rx.table.body(rx.foreach(S.view_rows, _row)),
                        variant="ghost",
                        size="1",
                        width="100%",
                        id="oplog-table",
                    ),
                    pager(S, "oplog-total"),
                    spacing="3",
                    width="100%",
                ),
                rx.center(
                    rx.vstack(
                        rx.icon("scroll_text", size=36, color=rx.color("gray", 8)),
                        rx.text(t("oplog.empty"), weight="medium"),
                        align="center",
                        spacing="2",
                    ),
                    padding_y="var(--space-8)",
                    width="100%",
                    id="oplog-empty",
                ),
            ),
            width="100%",
        ),
        size="2",
        width="100%",
    )


def _export_button() -> rx.Component:
    return rx.cond(
        S.forbidden | ~S.loaded,
        rx.fragment(),
        rx.button(
            rx.cond(S.exporting, rx.spinner(size="2"), rx.icon("download", size=16)),
            t("oplog.export"),
            variant="soft",
            on_click=S.export_csv,
            disabled=S.exporting,
            id="oplog-export",
        ),
    )


def operation_log_page() -> rx.Component:
    """The operation log."""
    return shell(
        page_header(t("oplog.title"), t("oplog.subtitle"), _export_button()),
        rx.cond(
            S.loaded,
            rx.cond(
                S.forbidden,
                admins_only(t("oplog.forbidden"), "oplog-forbidden"),
                rx.vstack(
                    _filters(),
                    error_callout(S.form_error, id="oplog-error"),
                    _table(),
                    spacing="4",
                    width="100%",
                ),
            ),
            rx.vstack(error_callout(S.form_error), loading(), width="100%"),
        ),
        active="oplog",
    )
