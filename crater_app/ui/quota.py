"""The project page's Quota card, its "Edit quota" dialog (platform admins) and the member "Share" dialog
(platform admins and the project's admins); the services decide who may change what."""

from __future__ import annotations

import reflex as rx

from crater_app.state import ProjectDetailState as S
from crater_app.ui.components import MONO, empty_mark, error_callout, section_title, t, t_format, wide_only

LEVEL_COLORS = (("full", "red"), ("high", "amber"), ("ok", "green"))
WIDE_CELL = {"display": wide_only("table-cell")}
#: the i18n key of each dialog column's heading
COLUMN_KEYS = {"resource": "quota.col.resource", "guarantee": "quota.col.guarantee", "deserved": "quota.col.deserved",
               "capability": "quota.col.capability", "amount": "share.col.amount"}


def _amount(value: rx.Var, empty: rx.Var | None = None) -> rx.Component:
    return rx.cond(value != "", rx.text(value, font_family=MONO, size="2"),
                   rx.text(empty, size="2", color_scheme="gray") if empty is not None else empty_mark())


def _resource_cell(row: rx.Var) -> rx.Component:
    return rx.vstack(
        rx.text(row["resource"], weight="medium", font_family=MONO, size="2", word_break="break-all"),
        rx.cond(row["model"] != "", rx.text(row["model"], size="1", color_scheme="gray", word_break="break-all")),
        spacing="0",
    )


def _usage_cell(row: rx.Var) -> rx.Component:
    return rx.vstack(
        rx.text(row["used"], font_family=MONO, size="2", class_name="quota-used"),
        rx.cond(
            row["level"] != "none",
            rx.hstack(
                rx.box(  # a bar drawn from the percentage text (rx.progress wants a number, rows hold strings)
                    rx.box(height="100%", width=row["percent"] + "%", border_radius="inherit",
                           background_color=rx.match(row["level"], *[(lv, rx.color(c, 9)) for lv, c in LEVEL_COLORS],
                                                     rx.color("gray", 9))),
                    height="6px", width="100%", min_width="60px", border_radius="var(--radius-full)",
                    background_color=rx.color("gray", 4), overflow="hidden", role="progressbar",
                    custom_attrs={"aria-valuenow": row["percent"], "aria-valuemin": "0", "aria-valuemax": "100"},
                    aria_label=t("quota.col.used"), class_name="quota-bar",
                ),
                rx.text(row["percent"], "%", size="1", color_scheme="gray", white_space="nowrap"),
                align="center", spacing="2", width="100%",
            ),
        ),
        spacing="1",
        width="100%",
    )


def _quota_row(row: rx.Var) -> rx.Component:
    return rx.table.row(
        rx.table.cell(_resource_cell(row)),
        rx.table.cell(_amount(row["guarantee"]), class_name="quota-guarantee", **WIDE_CELL),
        rx.table.cell(_amount(row["deserved"]), class_name="quota-deserved", **WIDE_CELL),
        rx.table.cell(_amount(row["capability"], t("quota.unlimited")), class_name="quota-capability"),
        rx.table.cell(_usage_cell(row), min_width="140px"),
        align="center",
        custom_attrs={"data-key": row["key"], "data-level": row["level"]},
        class_name="quota-row",
    )


def _count_badge(icon: str, label: rx.Var, count: rx.Var, color: str, id: str) -> rx.Component:
    return rx.badge(rx.icon(icon, size=12), label, " ", rx.text(count, as_="span", weight="bold", id=id),
                    variant="soft", color_scheme=color, radius="full")


def quota_card() -> rx.Component:
    """The Quota card: guarantee / deserved / capability per resource, admitted usage with a bar against the
    capability, admitted and held job counts; "Edit quota" for platform admins."""
    return rx.card(
        rx.vstack(
            rx.hstack(
                section_title(t("quota.title"), "gauge"),
                rx.spacer(),
                rx.cond(S.can_set_quota,
                        rx.button(rx.icon("pencil", size=14), t("quota.edit"), variant="soft", size="2",
                                  on_click=S.open_quota, id="edit-quota")),
                align="center",
                width="100%",
            ),
            rx.hstack(
                _count_badge("play", t("quota.admitted_jobs"), S.quota_admitted, "green", "quota-admitted"),
                _count_badge("pause", t("quota.held_jobs"), S.quota_held, "amber", "quota-held"),
                spacing="2",
                wrap="wrap",
            ),
            rx.cond(
                S.quota.length() > 0,
                rx.table.root(
                    rx.table.header(rx.table.row(
                        rx.table.column_header_cell(t("quota.col.resource")),
                        rx.table.column_header_cell(t("quota.col.guarantee"), **WIDE_CELL),
                        rx.table.column_header_cell(t("quota.col.deserved"), **WIDE_CELL),
                        rx.table.column_header_cell(t("quota.col.capability")),
                        rx.table.column_header_cell(t("quota.col.used")),
                    )),
                    rx.table.body(rx.foreach(S.quota, _quota_row)),
                    variant="ghost",
                    size=rx.breakpoints(initial="1", sm="2"),
                    width="100%",
                    id="quota-table",
                ),
                rx.text(t("quota.empty"), size="2", color_scheme="gray", id="quota-empty"),
            ),
            rx.text(t("quota.help"), size="1", color_scheme="gray"),
            spacing="4",
            width="100%",
        ),
        size="3",
        width="100%",
        id="quota-card",
    )


def _cell_error(row: rx.Var, column: str) -> rx.Component:
    return rx.cond(
        (row["error_col"] == column) & (row["error"] != ""),
        rx.text(row["error"], size="1", color=rx.color("red", 11), role="alert", class_name="cell-error",
                custom_attrs={"data-column": column}),
    )


def _cell(row: rx.Var, index: rx.Var, column: str, on_change, placeholder: str, width: str) -> rx.Component:
    return rx.vstack(
        rx.input(value=row[column], on_change=lambda v: on_change(index, column, v), placeholder=placeholder,
                 font_family=MONO, size="2", width="100%", max_length=256,
                 color_scheme=rx.cond(row["error_col"] == column, "red", "gray"),
                 aria_label=t(COLUMN_KEYS[column]),
                 class_name=f"cell-{column}"),
        _cell_error(row, column),
        spacing="1",
        width=width,
        min_width=width,
    )


def _quota_edit_row(row: rx.Var, index: rx.Var) -> rx.Component:
    return rx.hstack(
        _cell(row, index, "resource", S.set_quota_cell, "nvidia.com/gpu", "220px"),
        *[_cell(row, index, col, S.set_quota_cell, ph, "110px")
          for col, ph in (("guarantee", "0"), ("deserved", "0"), ("capability", "—"))],
        rx.icon_button(rx.icon("x", size=14), variant="ghost", color_scheme="gray", type="button",
                       on_click=S.remove_quota_row(index), aria_label=t("quota.row.remove"),
                       title=t("quota.row.remove"), class_name="remove-quota-row", margin_top="6px"),
        align="start",
        spacing="2",
        class_name="quota-edit-row",
        custom_attrs={"data-resource": row["resource"]},
    )


def _header_cell(column: str, width: str) -> rx.Component:
    return rx.text(t(COLUMN_KEYS[column]), size="1", weight="medium", color_scheme="gray", width=width, min_width=width)


def _dialog_buttons(on_save, save_id: str) -> rx.Component:
    return rx.hstack(
        rx.dialog.close(rx.button(t("common.cancel"), variant="soft", color_scheme="gray", type="button")),
        rx.button(rx.cond(S.saving, rx.spinner(size="2"), rx.icon("check", size=14)), t("quota.save"),
                  on_click=on_save, disabled=S.saving, id=save_id),
        spacing="3",
        justify="end",
        width="100%",
    )


def _rows_footer(name: str, on_add, error: rx.Var, on_save) -> tuple[rx.Component, ...]:
    """Below a dialog's rows: "Add row" (id ``add-<name>-row``), the error not placed on a row (``<name>-error``)
    and Cancel / Save (``save-<name>``)."""
    return (
        rx.button(rx.icon("plus", size=14), t("quota.row.add"), variant="ghost", size="2", type="button",
                  on_click=on_add, id=f"add-{name}-row"),
        error_callout(error, id=f"{name}-error"),
        _dialog_buttons(on_save, f"save-{name}"),
    )


def quota_dialog() -> rx.Component:
    """"Edit quota": one row per resource key (add/remove), guarantee / deserved / capability as quantity text;
    the service's errors are shown under the cell they name and nothing typed is lost."""
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(t_format("quota.edit.title", project=S.project["name"])),
            rx.dialog.description(t("quota.edit.help"), size="2", color_scheme="gray"),
            rx.vstack(
                rx.scroll_area(
                    rx.vstack(
                        rx.hstack(
                            _header_cell("resource", "220px"),
                            *[_header_cell(c, "110px") for c in ("guarantee", "deserved", "capability")],
                            spacing="2",
                        ),
                        rx.foreach(S.quota_edit, _quota_edit_row),
                        spacing="2",
                    ),
                    type="auto",
                    scrollbars="horizontal",
                    width="100%",
                ),
                *_rows_footer("quota", S.add_quota_row, S.quota_error, S.save_quota),
                spacing="3",
                margin_top="var(--space-3)",
                width="100%",
            ),
            max_width="720px",
            id="quota-dialog",
        ),
        open=S.quota_open,
        on_open_change=S.set_quota_open,
    )


def _share_edit_row(row: rx.Var, index: rx.Var) -> rx.Component:
    return rx.hstack(
        _cell(row, index, "resource", S.set_share_cell, "nvidia.com/gpu", "220px"),
        _cell(row, index, "amount", S.set_share_cell, "2", "120px"),
        rx.icon_button(rx.icon("x", size=14), variant="ghost", color_scheme="gray", type="button",
                       on_click=S.remove_share_row(index), aria_label=t("quota.row.remove"),
                       title=t("quota.row.remove"), class_name="remove-share-row", margin_top="6px"),
        align="start",
        spacing="2",
        class_name="share-edit-row",
    )


def share_dialog() -> rx.Component:
    """A member's share: resource rows (add/remove); no rows means no per-member limit."""
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(t_format("share.edit.title", username=S.share_user)),
            rx.dialog.description(t("share.edit.help"), size="2", color_scheme="gray"),
            rx.vstack(
                rx.hstack(_header_cell("resource", "220px"), _header_cell("amount", "120px"),
                          spacing="2"),
                rx.foreach(S.share_edit, _share_edit_row),
                *_rows_footer("share", S.add_share_row, S.share_error, S.save_share),
                spacing="2",
                margin_top="var(--space-3)",
                width="100%",
            ),
            max_width="480px",
            id="share-dialog",
        ),
        open=S.share_user != "",
        on_open_change=S.set_share_open,
    )


def share_cell(member: rx.Var) -> rx.Component:
    """A member's share in the members table, with an edit button for those who may change it."""
    return rx.hstack(
        rx.cond(member["share"] != "", rx.text(member["share"], size="2", font_family=MONO, class_name="share-text"),
                rx.text(t("share.none"), size="2", color_scheme="gray", class_name="share-text")),
        rx.cond(S.can_manage,
                rx.icon_button(rx.icon("pencil", size=12), variant="ghost", size="1", color_scheme="gray",
                               on_click=S.open_share(member["username"]), aria_label=t("share.edit"),
                               title=t("share.edit"), disabled=S.busy | S.saving, class_name="edit-share")),
        align="center",
        spacing="2",
    )
