"""/jobs/[id]: status, reason, exit code, devices, replicas, event timeline, a live log tail per replica and the
manifest."""

from __future__ import annotations

import reflex as rx

from crater_app.state import JobDetailState
from crater_app.ui.components import (
    MONO, empty_mark, error_callout, loading, narrow_only, or_empty, page_header, phase_badge, section_title, shell,
    t, t_format, wide_only,
)
from crater_app.ui.job_command import command_section
from crater_app.ui.replicas import manifest_section, replica_picker, replicas_section

J = JobDetailState.job
#: a job kind -> the catalogue key of its words and its badge color
KIND_WORDS = (("batch", "quota.kind.batch", "gray"), ("interactive", "quota.kind.interactive", "violet"),
              ("pytorch", "jobform.kind.pytorch", "orange"), ("mpi", "jobform.kind.mpi", "cyan"))


def _crumbs() -> rx.Component:
    return rx.hstack(
        rx.link(t("nav.jobs"), href="/jobs", size="2", color_scheme="gray"),
        rx.icon("chevron_right", size=14, color=rx.color("gray", 9)),
        rx.text("#", J["id"], size="2", color_scheme="gray"),
        align="center",
        spacing="1",
    )


def _item(label: rx.Var, value: rx.Component | rx.Var, item_id: str | None = None) -> rx.Component:
    content = value if isinstance(value, rx.Component) else rx.text(or_empty(value))
    return rx.data_list.item(
        rx.data_list.label(label, min_width="130px"),
        rx.data_list.value(content, id=item_id) if item_id else rx.data_list.value(content),
        align="center",
    )


def _cancel_button() -> rx.Component:
    return rx.alert_dialog.root(
        rx.alert_dialog.trigger(
            rx.button(rx.icon("square", size=14), t("job.cancel"), color_scheme="red", variant="soft",
                      id="cancel-job"),
        ),
        rx.alert_dialog.content(
            rx.alert_dialog.title(t("job.cancel.confirm_title")),
            rx.alert_dialog.description(t("job.cancel.confirm_text"), size="2"),
            rx.hstack(
                rx.alert_dialog.cancel(rx.button(t("common.back"), variant="soft", color_scheme="gray")),
                rx.alert_dialog.action(rx.button(t("job.cancel"), color_scheme="red", on_click=JobDetailState.cancel,
                                                 id="confirm-cancel")),
                spacing="3",
                justify="end",
                margin_top="var(--space-4)",
            ),
            max_width="440px",
        ),
    )


def _actions() -> list[rx.Component]:
    return [
        rx.cond(JobDetailState.can_cancel, _cancel_button(), rx.fragment()),
        # A longer max_runtime goes through an approval request (granted at once under the auto rule).
        rx.cond(
            ~JobDetailState.finished & (J["max_runtime_s"] != ""),
            rx.link(rx.button(rx.icon("timer", size=14), t("job.request_time"), variant="soft"),
                    href="/approvals?new=extend_runtime&job=" + J["id"], id="request-time"),
        ),
        rx.button(rx.icon("rotate_ccw", size=14), t("job.resubmit"), variant="soft", on_click=JobDetailState.resubmit,
                  id="resubmit-job"),
    ]


def _waiting() -> rx.Component:
    """"Why is this job waiting?": for a Held or Queued job, the blocking reason in plain words (which limit, how
    much is used and by how many jobs/users, its position), in the console's language."""
    return rx.cond(
        JobDetailState.waiting,
        rx.callout.root(
            rx.callout.icon(rx.icon("hourglass")),
            rx.vstack(
                rx.text(t("job.waiting.title"), weight="bold", size="2"),
                rx.text(JobDetailState.wait_lead, size="2"),
                rx.text(JobDetailState.reason_text, size="2", id="job-wait-reason"),
                spacing="1",
            ),
            color_scheme=rx.cond(J["phase"] == "Held", "amber", "blue"),
            width="100%",
            id="job-waiting",
        ),
    )


def _overview() -> rx.Component:
    return rx.card(
        rx.vstack(
            section_title(t("job.section.status"), "activity"),
            rx.data_list.root(
                _item(t("job.status"), phase_badge(J["phase"]), "job-phase"),
                _item(t("job.reason"), rx.text(or_empty(JobDetailState.reason_text), id="job-reason")),
                _item(t("job.exit_code"), rx.text(or_empty(J["exit_code"], rx.text(J["exit_code"], as_="span",
                                                                                   font_family=MONO))),
                      "job-exit-code"),
                _item(t("job.user"), J["user"]),
                _item(t("job.project"), J["project"]),
                _item(t("quota.job.kind"),
                      rx.badge(rx.match(J["kind"], *[(kind, t(key)) for kind, key, _ in KIND_WORDS], J["kind"]),
                               variant="soft",
                               color_scheme=rx.match(J["kind"], *[(kind, color) for kind, _, color in KIND_WORDS],
                                                     "gray"),
                               custom_attrs={"data-kind": J["kind"]}),
                      "job-kind"),
                _item(t("quota.job.preemptible"),
                      rx.text(rx.cond(J["preemptible"] != "", t("quota.job.preemptible.yes"),
                                      t("quota.job.preemptible.no")),
                              custom_attrs={"data-preemptible": rx.cond(J["preemptible"] != "", "yes", "no")}),
                      "job-preemptible"),
                _item(t("job.created"), J["created"]),
                _item(t("job.started"), J["started"]),
                _item(t("job.finished"), J["finished"]),
                _item(t("job.runtime"), JobDetailState.view_job["runtime"]),
                rx.cond(
                    J["resubmitted_from"] != "",
                    _item(t("job.resubmitted_from"),
                          rx.link("#", J["resubmitted_from"], href="/jobs/" + J["resubmitted_from"])),
                ),
                size="2",
            ),
            spacing="4",
        ),
        size="3",
        width="100%",
    )


def _resources() -> rx.Component:
    return rx.card(
        rx.vstack(
            section_title(t("job.section.resources"), "cpu"),
            rx.data_list.root(
                _item(t("job.gpus"), rx.text(J["gpus"], rx.cond(J["model"] != "", " × " + J["model"], ""))),
                _item(
                    t("job.devices"),
                    rx.cond(
                        JobDetailState.device_list.length() > 0,
                        rx.hstack(rx.foreach(JobDetailState.device_list,
                                             lambda d: rx.badge("GPU ", d, variant="outline", font_family=MONO)),
                                  spacing="1", wrap="wrap"),
                        rx.text(empty_mark()),
                    ),
                    "job-devices",
                ),
                _item(t("job.cpu"), J["cpu"]),
                _item(t("job.memory"), J["memory"]),
                _item(t("job.max_runtime"), JobDetailState.view_job["max_runtime"]),
                _item(t("job.priority"), J["priority"]),
                _item(t("job.image"), rx.text(or_empty(J["image"], rx.text(J["image"], as_="span", font_family=MONO,
                                                                           size="2")))),
                _item(t("job.uid"), rx.text(J["uid"], font_family=MONO, size="1", color_scheme="gray")),
                size="2",
            ),
            spacing="4",
        ),
        size="3",
        width="100%",
    )


def _event_row(event: rx.Var) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(event["at"], font_family=MONO, size="1", white_space="nowrap")),
        rx.table.cell(phase_badge(event["phase"], size="1")),
        rx.table.cell(rx.text(event["reason_text"], weight="medium", size="2", title=event["reason"],
                              custom_attrs={"data-reason": event["reason"]}, class_name="event-reason")),
        rx.table.cell(rx.text(event["message_text"], size="2", color_scheme="gray", class_name="event-message")),
        align="center",
    )


def _event_item(event: rx.Var) -> rx.Component:
    """One timeline entry as a block (narrow screens, where four table columns do not fit)."""
    return rx.vstack(
        rx.hstack(
            phase_badge(event["phase"], size="1"),
            rx.text(event["reason_text"], weight="medium", size="2", custom_attrs={"data-reason": event["reason"]}),
            rx.spacer(),
            rx.text(event["at"], font_family=MONO, size="1", color_scheme="gray", white_space="nowrap"),
            align="center",
            spacing="2",
            width="100%",
        ),
        rx.text(event["message_text"], size="2", color_scheme="gray", word_break="break-word"),
        spacing="1",
        width="100%",
        padding_y="var(--space-2)",
        border_bottom=f"1px solid {rx.color('gray', 4)}",
    )


def _events() -> rx.Component:
    return rx.card(
        rx.vstack(
            section_title(t("job.section.events"), "history"),
            rx.table.root(
                rx.table.header(rx.table.row(
                    rx.table.column_header_cell(t("job.events.time")),
                    rx.table.column_header_cell(t("job.events.phase")),
                    rx.table.column_header_cell(t("job.events.reason")),
                    rx.table.column_header_cell(t("job.events.message")),
                )),
                rx.table.body(rx.foreach(JobDetailState.event_rows, _event_row)),
                size="1",
                variant="ghost",
                width="100%",
                id="job-events",
                display=wide_only("block"),
            ),
            rx.vstack(rx.foreach(JobDetailState.event_rows, _event_item), spacing="0", width="100%",
                      display=narrow_only("flex"), id="job-events-list"),
            spacing="3",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def _logs() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(
                section_title(t("job.section.logs"), "scroll_text"),
                replica_picker(),
                rx.cond(
                    JobDetailState.log_restarts != "",
                    rx.badge(rx.icon("rotate_ccw", size=12),
                             t_format("job.logs.restarts", restarts=JobDetailState.log_restarts),
                             color_scheme="amber", variant="soft", radius="full", id="log-restarts"),
                    rx.fragment(),
                ),
                rx.spacer(),
                rx.cond(
                    JobDetailState.finished,
                    rx.text(t("job.logs.final"), size="1", color_scheme="gray"),
                    rx.badge(rx.spinner(size="1"), t("job.logs.live"), color_scheme="green", variant="surface",
                             radius="full"),
                ),
                width="100%",
                align="center",
            ),
            # column-reverse keeps the view scrolled to the newest line
            rx.box(
                rx.el.pre(
                    rx.cond(
                        JobDetailState.logs != "",
                        JobDetailState.logs,
                        rx.el.span(rx.cond(JobDetailState.finished, t("job.logs.none"), t("job.logs.empty")),
                                   class_name="logs-placeholder", style={"opacity": "0.6", "font-style": "italic"}),
                    ),
                    id="job-logs",
                    style={"margin": "0", "white-space": "pre-wrap", "word-break": "break-all",
                           "font-family": MONO, "font-size": "12.5px", "line-height": "1.55"},
                ),
                display="flex",
                flex_direction="column-reverse",
                max_height="480px",
                min_height="120px",
                overflow_y="auto",
                padding="var(--space-3)",
                border_radius="var(--radius-3)",
                background_color="#0d1117",
                color="#e6edf3",
                width="100%",
            ),
            spacing="3",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def _not_found() -> rx.Component:
    return rx.center(
        rx.vstack(
            rx.icon("search_x", size=40, color=rx.color("gray", 8)),
            rx.heading(t("job.not_found"), size="5"),
            rx.link(rx.button(t("job.back_to_list"), variant="soft"), href="/jobs"),
            align="center",
            spacing="3",
        ),
        padding_y="var(--space-9)",
        width="100%",
    )


def job_detail_page() -> rx.Component:
    """One job."""
    return shell(
        rx.cond(
            JobDetailState.not_found,
            _not_found(),
            rx.cond(
                JobDetailState.loaded,
                rx.vstack(
                    page_header(
                        rx.hstack(rx.heading(J["name"], size="7", weight="bold", id="job-name"), phase_badge(J["phase"], size="3"),
                                  align="center", spacing="3"),
                        None,
                        *_actions(),
                        crumbs=_crumbs(),
                    ),
                    error_callout(JobDetailState.error),
                    _waiting(),
                    rx.grid(_overview(), _resources(), columns=rx.breakpoints(initial="1", md="2"), spacing="5",
                            width="100%"),
                    command_section(),
                    replicas_section(),
                    _logs(),
                    _events(),
                    manifest_section(),
                    spacing="5",
                    width="100%",
                ),
                rx.vstack(error_callout(JobDetailState.error), loading(), width="100%"),
            ),
        ),
        active="jobs",
    )
