"""/approvals: requests for quota, longer run time, reclaim locks and large jobs; decisions with a note; new
requests. Who sees and decides what is the service's business (``domain.policy``); the page only shows it."""

from __future__ import annotations

import reflex as rx

from crater_app.state import ApprovalsState
from crater_app.state.approvals import FORM_KINDS, KIND_KEYS, QUOTA_SECTIONS, SECTION_KEYS
from crater_app.ui.components import MONO, error_callout, loading, or_empty, page_header, shell, t, wide_only
from crater_app.ui.forms import clears, field, field_error, invalid
from crater_app.ui.governance import pager

S = ApprovalsState
STATUS_COLORS = (("pending", "amber"), ("approved", "green"), ("rejected", "red"), ("closed", "gray"))


def _edits(name: str) -> dict:
    """The props that clear input ``name``'s error when it changes and mark it invalid while it has one."""
    return {"on_change": clears(S, name), "aria_invalid": invalid(S, name)}
WIDE_CELL = {"display": wide_only("table-cell")}


def _status_badge(row: rx.Var) -> rx.Component:
    return rx.hstack(
        rx.badge(row["status_text"], color_scheme=rx.match(row["status"], *STATUS_COLORS, "gray"), variant="soft",
                 radius="full", custom_attrs={"data-status": row["status"]}, class_name="approval-status"),
        rx.cond(row["auto"] == "1", rx.badge(t("approvals.auto"), variant="outline", color_scheme="green",
                                             radius="full")),
        spacing="1",
    )


def _target(row: rx.Var) -> rx.Component:
    return rx.cond(
        row["job_id"] != "",
        rx.link(row["target"], href="/jobs/" + row["job_id"], weight="medium", word_break="break-all"),
        or_empty(row["target"], rx.text(row["target"], weight="medium")),
    )


def _decision(row: rx.Var) -> rx.Component:
    return rx.cond(
        row["can_decide"] == "1",
        rx.hstack(
            rx.button(rx.icon("check", size=14), t("approvals.approve"), size="1", color_scheme="green",
                      on_click=ApprovalsState.open_decision(row["id"], "approve"), class_name="approve-button"),
            rx.button(rx.icon("x", size=14), t("approvals.reject"), size="1", color_scheme="red", variant="soft",
                      on_click=ApprovalsState.open_decision(row["id"], "reject"), class_name="reject-button"),
            spacing="2",
        ),
        rx.vstack(
            rx.cond(row["decided_by"] != "", rx.text(t("approvals.by"), " ", row["decided_by"], size="1",
                                                     color_scheme="gray")),
            rx.cond(row["note"] != "", rx.text(row["note"], size="1", max_width="240px", title=row["note"],
                                               overflow="hidden", text_overflow="ellipsis", white_space="nowrap")),
            spacing="0",
        ),
    )


def _row(row: rx.Var) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text("#", row["id"], color_scheme="gray", font_family=MONO, size="2", white_space="nowrap")),
        rx.table.cell(rx.vstack(
            rx.text(row["kind_text"], weight="medium", size="2"),
            _target(row),
            spacing="1",
        )),
        rx.table.cell(rx.text(row["value"], font_family=MONO, size="2"), **WIDE_CELL),
        rx.table.cell(rx.vstack(
            rx.text(row["requester"], size="2"),
            rx.text(row["reason"], size="1", color_scheme="gray", max_width=rx.breakpoints(initial="160px", sm="320px"),
                    title=row["reason"], overflow="hidden", text_overflow="ellipsis", white_space="nowrap"),
            spacing="1",
        )),
        rx.table.cell(_status_badge(row)),
        rx.table.cell(rx.text(row["created"], size="2", font_family=MONO, white_space="nowrap"), **WIDE_CELL),
        rx.table.cell(_decision(row)),
        align="center",
        custom_attrs={"data-approval-id": row["id"]},
        class_name="approval-row",
    )


def _table() -> rx.Component:
    return rx.table.root(
        rx.table.header(rx.table.row(
            rx.table.column_header_cell(t("approvals.col.id"), white_space="nowrap"),
            rx.table.column_header_cell(t("approvals.col.request")),
            rx.table.column_header_cell(t("approvals.col.value"), **WIDE_CELL),
            rx.table.column_header_cell(t("approvals.col.requester")),
            rx.table.column_header_cell(t("approvals.col.status")),
            rx.table.column_header_cell(t("approvals.col.created"), **WIDE_CELL),
            rx.table.column_header_cell(t("approvals.col.decision")),
        )),
        rx.table.body(rx.foreach(ApprovalsState.view_rows, _row)),
        variant="ghost",
        size=rx.breakpoints(initial="1", sm="2"),
        width="100%",
        id="approvals-table",
    )


def _toolbar() -> rx.Component:
    return rx.flex(
        rx.segmented_control.root(
            rx.segmented_control.item(t("approvals.filter.pending"), value="pending"),
            rx.segmented_control.item(t("approvals.filter.all"), value="all"),
            value=ApprovalsState.status_filter,
            on_change=ApprovalsState.set_status_filter,
            id="approval-filter",
        ),
        rx.icon_button(rx.icon("refresh_cw", size=16), variant="soft", color_scheme="gray",
                       on_click=ApprovalsState.reload, aria_label=t("common.refresh"), title=t("common.refresh"),
                       id="approvals-refresh"),
        rx.spacer(),
        rx.el.label(rx.hstack(rx.switch(checked=ApprovalsState.mine_only, on_change=ApprovalsState.set_mine_only,
                                        id="approvals-mine"),
                              rx.text(t("approvals.filter.mine"), size="2"), spacing="2", align="center")),
        width="100%",
        gap="3",
        wrap="wrap",
        align="center",
    )




def _pager() -> rx.Component:
    return pager(ApprovalsState, "approvals-total", (t("approvals.total"), " ", ApprovalsState.total))


def _empty() -> rx.Component:
    return rx.center(
        rx.vstack(
            rx.icon("clipboard_check", size=36, color=rx.color("gray", 8)),
            rx.text(t("approvals.empty.title"), weight="medium"),
            rx.text(t("approvals.empty.hint"), size="2", color_scheme="gray"),
            align="center",
            spacing="2",
        ),
        padding_y="var(--space-9)",
        width="100%",
    )


def _kind_select() -> rx.Component:
    return rx.select.root(
        rx.select.trigger(width="100%", id="new-approval-kind"),
        rx.select.content(*[rx.select.item(t(KIND_KEYS[k]), value=k) for k in FORM_KINDS]),
        value=ApprovalsState.new_kind,
        on_change=ApprovalsState.set_new_kind,
    )


def _quota_fields() -> rx.Component:
    return rx.vstack(
        field(t("approvals.form.project"), rx.select.root(
            rx.select.trigger(width="100%", placeholder=t("approvals.form.project.none"), id="new-approval-project"),
            rx.select.content(rx.foreach(ApprovalsState.project_options, lambda p: rx.select.item(p, value=p))),
            value=ApprovalsState.new_project,
            on_change=ApprovalsState.set_new_project,
        ), required=True, error=field_error(S, "project", "new-approval-project-error")),
        field(t("approvals.form.section"), rx.select.root(
            rx.select.trigger(width="100%", id="new-approval-section"),
            rx.select.content(*[rx.select.item(t(SECTION_KEYS[s]), value=s) for s in QUOTA_SECTIONS]),
            value=ApprovalsState.new_section,
            on_change=ApprovalsState.set_new_section,
        ), t("approvals.form.section.hint")),
        field(t("approvals.form.resources"), rx.text_area(
            name="resources", id="new-approval-resources", placeholder="nvidia.com/gpu=8, cpu=64, memory=512Gi",
            font_family=MONO, rows="3", max_length=2000, **_edits("resources")), t("approvals.form.resources.hint"),
            required=True, error=field_error(S, "resources", "new-approval-resources-error")),
        spacing="3",
        width="100%",
    )


def _job_fields() -> rx.Component:
    return rx.vstack(
        field(t("approvals.form.job"), rx.input(name="job_id", id="new-approval-job", default_value=
                                                ApprovalsState.new_job_id, inputmode="numeric", max_length=20,
                                                font_family=MONO, placeholder="42", **_edits("job_id")),
              t("approvals.form.job.hint"), required=True, error=field_error(S, "job_id", "new-approval-job-error")),
        rx.cond(
            ApprovalsState.new_kind == "extend_runtime",
            field(t("approvals.form.max_runtime"), rx.input(name="max_runtime", id="new-approval-runtime",
                                                            placeholder="24h", max_length=32, font_family=MONO,
                                                            **_edits("max_runtime")),
                  t("approvals.form.max_runtime.hint"), required=True,
                  error=field_error(S, "max_runtime", "new-approval-runtime-error")),
        ),
        spacing="3",
        width="100%",
    )


def _new_request_dialog() -> rx.Component:
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(t("approvals.new.title")),
            rx.dialog.description(t("approvals.new.description"), size="2", color_scheme="gray"),
            rx.form(
                rx.vstack(
                    field(t("approvals.form.kind"), _kind_select(),
                          error=field_error(S, "kind", "new-approval-kind-error")),
                    rx.cond(ApprovalsState.new_kind == "quota", _quota_fields(), _job_fields()),
                    field(t("approvals.form.reason"), rx.text_area(name="reason", id="new-approval-reason",
                                                                   required=True, max_length=1000, rows="3",
                                                                   **_edits("reason")),
                          t("approvals.form.reason.hint"), required=True,
                          error=field_error(S, "reason", "new-approval-reason-error")),
                    error_callout(ApprovalsState.form_error, id="new-approval-error"),
                    rx.hstack(
                        rx.dialog.close(rx.button(t("common.cancel"), variant="soft", color_scheme="gray",
                                                  type="button")),
                        rx.button(rx.icon("send", size=14), t("approvals.new.submit"), type="submit",
                                  id="new-approval-submit"),
                        justify="end",
                        width="100%",
                        spacing="3",
                    ),
                    spacing="4",
                    width="100%",
                    margin_top="var(--space-4)",
                ),
                on_submit=ApprovalsState.create,
                reset_on_submit=False,
                key=ApprovalsState.form_key,
            ),
            max_width="560px",
        ),
        open=ApprovalsState.new_open,
        on_open_change=ApprovalsState.set_new_open,
    )


def _decision_dialog() -> rx.Component:
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(rx.cond(ApprovalsState.decide_action == "approve", t("approvals.decide.approve_title"),
                                    t("approvals.decide.reject_title")), " #", ApprovalsState.decide_id),
            rx.form(
                rx.vstack(
                    field(t("approvals.decide.note"), rx.text_area(name="note", id="decision-note", max_length=1000,
                                                                   rows="3", **_edits("note")),
                          t("approvals.decide.note.hint"), error=field_error(S, "note", "decision-note-error")),
                    error_callout(ApprovalsState.decide_error, id="decision-error"),
                    rx.hstack(
                        rx.dialog.close(rx.button(t("common.cancel"), variant="soft", color_scheme="gray",
                                                  type="button")),
                        rx.button(rx.cond(ApprovalsState.decide_action == "approve", t("approvals.approve"),
                                          t("approvals.reject")),
                                  color_scheme=rx.cond(ApprovalsState.decide_action == "approve", "green", "red"),
                                  type="submit", id="decision-submit"),
                        justify="end",
                        width="100%",
                        spacing="3",
                    ),
                    spacing="4",
                    width="100%",
                    margin_top="var(--space-3)",
                ),
                on_submit=ApprovalsState.decide,
                reset_on_submit=True,
            ),
            max_width="480px",
        ),
        open=ApprovalsState.decide_open,
        on_open_change=ApprovalsState.set_decide_open,
    )


def approvals_page() -> rx.Component:
    """Approval requests."""
    return shell(
        page_header(
            t("approvals.title"),
            t("approvals.subtitle"),
            rx.button(rx.icon("plus", size=16), t("approvals.new"), size="2", id="new-approval",
                      on_click=ApprovalsState.set_new_open(True)),
        ),
        error_callout(ApprovalsState.error),
        rx.card(
            rx.vstack(
                _toolbar(),
                rx.cond(
                    ApprovalsState.loaded,
                    rx.cond(ApprovalsState.total > 0, rx.vstack(_table(), _pager(), width="100%", spacing="3"),
                            _empty()),
                    loading(),
                ),
                spacing="4",
                width="100%",
            ),
            size="2",
            width="100%",
        ),
        _new_request_dialog(),
        _decision_dialog(),
        active="approvals",
    )
