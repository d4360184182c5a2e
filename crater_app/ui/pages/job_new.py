"""/jobs/new: the submit form (GPU model and count come from the nodes' real devices)."""

from __future__ import annotations

import reflex as rx

from crater_app.state import NewJobState
from crater_app.ui.components import MONO, error_callout, loading, page_header, section_title, shell, t, t_format
from crater_app.ui.forms import clears, field, field_error, invalid

S = NewJobState


def _crumbs() -> rx.Component:
    return rx.hstack(
        rx.link(t("nav.jobs"), href="/jobs", size="2", color_scheme="gray"),
        rx.icon("chevron_right", size=14, color=rx.color("gray", 9)),
        rx.text(t("newjob.title"), size="2", color_scheme="gray"),
        align="center",
        spacing="1",
    )


def _basics() -> rx.Component:
    return rx.card(
        rx.vstack(
            section_title(t("newjob.section.basics"), "file_text"),
            rx.grid(
                field(t("newjob.name"), rx.input(name="name", id="job-name", placeholder="train-resnet50",
                                                 required=True, max_length=63, font_family=MONO,
                                                 on_change=clears(S, "name"), aria_invalid=invalid(S, "name")),
                      t("newjob.name.hint"), required=True, error=field_error(S, "name", "job-name-error")),
                field(t("newjob.priority"), rx.input(name="priority", id="job-priority", type="number",
                                                     default_value="0", min=-1000, max=1000,
                                                     on_change=clears(S, "priority"),
                                                     aria_invalid=invalid(S, "priority")),
                      t("newjob.priority.hint"), error=field_error(S, "priority", "job-priority-error")),
                columns=rx.breakpoints(initial="1", sm="2"),
                spacing="4",
                width="100%",
            ),
            spacing="4",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def _scheduling() -> rx.Component:
    """Project, kind (batch job or interactive session) and whether the job may be preempted."""
    return rx.card(
        rx.vstack(
            section_title(t("quota.newjob.section"), "calendar_clock"),
            rx.grid(
                field(t("quota.newjob.project"), rx.select.root(
                    rx.select.trigger(width="100%", id="job-project"),
                    rx.select.content(rx.foreach(NewJobState.project_options,
                                                 lambda p: rx.select.item(p, value=p))),
                    value=NewJobState.project,
                    on_change=NewJobState.set_project,
                ), t("quota.newjob.project.hint"), error=field_error(S, "project", "job-project-error")),
                field(t("quota.newjob.kind"), rx.select.root(
                    rx.select.trigger(width="100%", id="job-kind"),
                    rx.select.content(
                        rx.select.item(t("quota.kind.batch"), value="batch"),
                        rx.select.item(t("quota.kind.interactive"), value="interactive"),
                    ),
                    value=NewJobState.kind,
                    on_change=NewJobState.set_kind,
                ), t("quota.newjob.kind.hint"), error=field_error(S, "kind", "job-kind-error")),
                columns=rx.breakpoints(initial="1", sm="2"),
                spacing="4",
                width="100%",
            ),
            rx.text(
                rx.hstack(
                    rx.checkbox(checked=NewJobState.preemptible, on_change=NewJobState.set_preemptible),
                    t("quota.newjob.preemptible"),
                    spacing="2",
                    align="center",
                ),
                as_="label",
                size="2",
                id="job-preemptible",
            ),
            field_error(S, "preemptible", "job-preemptible-error"),
            spacing="4",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def _command() -> rx.Component:
    return rx.card(
        rx.vstack(
            section_title(t("newjob.section.command"), "terminal"),
            rx.radio_group.root(
                rx.hstack(
                    rx.radio_group.item(value="lines", id="mode-lines"),
                    rx.text(t("newjob.command.mode.lines"), size="2", as_="label", html_for="mode-lines"),
                    rx.radio_group.item(value="shell", id="mode-shell", margin_left="var(--space-4)"),
                    rx.text(t("newjob.command.mode.shell"), size="2", as_="label", html_for="mode-shell"),
                    align="center",
                    spacing="2",
                ),
                value=NewJobState.command_mode,
                on_change=NewJobState.set_command_mode,
            ),
            rx.text_area(
                name="command",
                id="job-command",
                rows="5",
                required=True,
                font_family=MONO,
                width="100%",
                placeholder=rx.cond(NewJobState.command_mode == "lines", "python3\ntrain.py\n--epochs=10",
                                    "python3 train.py --epochs=10"),
                on_change=clears(S, "command"),
                aria_invalid=invalid(S, "command"),
            ),
            field_error(S, "command", "job-command-error"),
            rx.callout.root(
                rx.callout.icon(rx.icon("shield_check")),
                rx.callout.text(t("newjob.command.help")),
                size="1",
                color_scheme="gray",
                variant="surface",
            ),
            field(t("newjob.env"), rx.text_area(name="env", id="job-env", rows="3", font_family=MONO, width="100%",
                                                placeholder="WANDB_MODE=offline\nOMP_NUM_THREADS=8",
                                                on_change=clears(S, "env"), aria_invalid=invalid(S, "env")),
                  t("newjob.env.hint"), error=field_error(S, "env", "job-env-error")),
            spacing="3",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def _accelerators() -> rx.Component:
    return rx.cond(
        NewJobState.has_accelerators,
        rx.grid(
            field(
                t("newjob.model"),
                rx.select.root(
                    rx.select.trigger(width="100%", id="gpu-model"),
                    rx.select.content(rx.foreach(NewJobState.accelerators,
                                                 lambda c: rx.select.item(c["model"], value=c["model"]))),
                    value=NewJobState.model,
                    on_change=NewJobState.set_model,
                ),
            ),
            field(
                t("newjob.gpus"),
                rx.select.root(
                    rx.select.trigger(width="100%", id="gpu-count"),
                    rx.select.content(rx.foreach(NewJobState.gpu_options, lambda n: rx.select.item(n, value=n))),
                    value=NewJobState.gpus,
                    on_change=NewJobState.set_gpus,
                ),
                rx.text(t("newjob.gpus.available"), " ", NewJobState.model_free, " / ", NewJobState.model_max, size="1",
                        color_scheme="gray", id="gpu-available"),
                error=field_error(S, "gpus", "job-gpus-error"),
            ),
            columns=rx.breakpoints(initial="1", sm="2"),
            spacing="4",
            width="100%",
        ),
        rx.vstack(
            rx.callout.root(rx.callout.icon(rx.icon("info")), rx.callout.text(t("newjob.no_accelerators")),
                            color_scheme="gray", size="1"),
            field_error(S, "gpus", "job-gpus-error"),
            spacing="1",
            width="100%",
        ),
    )


def _default_hint(plain: str, with_default: str, default: rx.Var, id: str) -> rx.Component:
    """A resource field's hint: ``with_default`` naming the platform's default when there is one (what a job that
    leaves the field empty gets, through the form as through the API), else ``plain``."""
    return rx.text(rx.cond(default != "", t_format(with_default, default=default), t(plain)), size="1",
                   color_scheme="gray", id=id)


def _resources() -> rx.Component:
    return rx.card(
        rx.vstack(
            section_title(t("newjob.section.resources"), "cpu"),
            _accelerators(),
            rx.grid(
                field(t("newjob.cpu"), rx.input(name="cpu", id="job-cpu", default_value=S.default_cpu,
                                                placeholder=S.default_cpu, on_change=clears(S, "cpu"),
                                                aria_invalid=invalid(S, "cpu")),
                      _default_hint("newjob.cpu.hint", "newjob.cpu.hint_default", S.default_cpu, "job-cpu-hint"),
                      error=field_error(S, "cpu", "job-cpu-error")),
                field(t("newjob.memory"), rx.input(name="memory", id="job-memory", default_value=S.default_memory,
                                                   placeholder=S.default_memory, on_change=clears(S, "memory"),
                                                   aria_invalid=invalid(S, "memory")),
                      _default_hint("newjob.memory.hint", "newjob.memory.hint_default", S.default_memory,
                                    "job-memory-hint"),
                      error=field_error(S, "memory", "job-memory-error")),
                field(t("newjob.max_runtime"), rx.input(name="max_runtime", id="job-max-runtime", placeholder="2h",
                                                        on_change=clears(S, "max_runtime"),
                                                        aria_invalid=invalid(S, "max_runtime")),
                      t("newjob.max_runtime.hint"), error=field_error(S, "max_runtime", "job-max-runtime-error")),
                columns=rx.breakpoints(initial="1", sm="3"),
                spacing="4",
                width="100%",
            ),
            spacing="4",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def new_job_page() -> rx.Component:
    """The new-job form."""
    return shell(
        page_header(t("newjob.title"), t("newjob.subtitle"), crumbs=_crumbs()),
        rx.cond(
            NewJobState.loaded,
            rx.form(
                rx.vstack(
                    _basics(),
                    _scheduling(),
                    _command(),
                    _resources(),
                    error_callout(NewJobState.form_error, id="submit-error"),
                    rx.hstack(
                        rx.link(rx.button(t("common.cancel"), variant="soft", color_scheme="gray", type="button"),
                                href="/jobs"),
                        rx.button(
                            rx.cond(NewJobState.submitting, rx.spinner(size="2"), rx.icon("rocket", size=16)),
                            t("newjob.submit"),
                            type="submit",
                            size="3",
                            disabled=NewJobState.submitting,
                            id="submit-job",
                        ),
                        justify="end",
                        width="100%",
                        spacing="3",
                    ),
                    spacing="4",
                    width="100%",
                    max_width="880px",
                ),
                on_submit=NewJobState.submit,
                reset_on_submit=False,
                key=NewJobState.form_key,
                width="100%",
            ),
            rx.vstack(error_callout(NewJobState.error), loading(), width="100%"),
        ),
        active="jobs",
    )
