"""/jobs/new: the submit form for jobs of every kind (batch, PyTorch DDP, MPI, interactive) and its "Edit as YAML"
mode. GPU model and per-replica count come from the nodes' real devices; the advanced options and the YAML editor
are in :mod:`crater_app.ui.pages.job_new_parts`."""

from __future__ import annotations

import reflex as rx

from crater_app.state import NewJobState
from crater_app.ui.components import MONO, error_callout, loading, page_header, section_title, shell, t, t_format
from crater_app.ui.forms import clears, field, field_error, invalid
from crater_app.ui.pages.job_new_parts import advanced, kept, yaml_editor

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
                                                 on_change=clears(S, "name"), on_blur=kept("name"),
                                                 aria_invalid=invalid(S, "name")),
                      t("newjob.name.hint"), required=True, error=field_error(S, "name", "job-name-error")),
                field(t("newjob.priority"), rx.input(name="priority", id="job-priority", type="number",
                                                     default_value="0", min=-1000, max=1000,
                                                     on_change=clears(S, "priority"), on_blur=kept("priority"),
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


def _kind_select() -> rx.Component:
    """The four kinds, each with its one-line explanation below the choice."""
    return field(t("quota.newjob.kind"), rx.select.root(
        rx.select.trigger(width="100%", id="job-kind"),
        rx.select.content(
            rx.select.item(t("quota.kind.batch"), value="batch"),
            rx.select.item(t("jobform.kind.pytorch"), value="pytorch"),
            rx.select.item(t("jobform.kind.mpi"), value="mpi"),
            rx.select.item(t("quota.kind.interactive"), value="interactive"),
        ),
        value=S.kind,
        on_change=S.set_kind,
    ), rx.text(rx.match(S.kind, ("pytorch", t("jobform.kind.about.pytorch")), ("mpi", t("jobform.kind.about.mpi")),
                        ("interactive", t("quota.newjob.kind.hint")), t("jobform.kind.about.batch")),
               size="1", color_scheme="gray", id="job-kind-about"),
        error=field_error(S, "kind", "job-kind-error"))


def _scheduling() -> rx.Component:
    """Project, kind and whether the job may be preempted."""
    return rx.card(
        rx.vstack(
            section_title(t("quota.newjob.section"), "calendar_clock"),
            rx.grid(
                field(t("quota.newjob.project"), rx.select.root(
                    rx.select.trigger(width="100%", id="job-project"),
                    rx.select.content(rx.foreach(S.project_options, lambda p: rx.select.item(p, value=p))),
                    value=S.project,
                    on_change=S.set_project,
                ), t("quota.newjob.project.hint"), error=field_error(S, "project", "job-project-error")),
                _kind_select(),
                columns=rx.breakpoints(initial="1", sm="2"),
                spacing="4",
                width="100%",
            ),
            rx.text(
                rx.hstack(
                    rx.checkbox(checked=S.preemptible, on_change=S.set_preemptible),
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


def _note(text: rx.Var, icon: str, id: str) -> rx.Component:
    return rx.callout.root(rx.callout.icon(rx.icon(icon)), rx.callout.text(text), size="1", color_scheme="gray",
                           variant="surface", id=id)


def _command_box(name: str, id: str, lines: str, shell_line: str, required: bool) -> rx.Component:
    return rx.text_area(
        name=name, id=id, rows="4", required=required, font_family=MONO, width="100%",
        placeholder=rx.cond(S.command_mode == "lines", lines, shell_line),
        on_change=clears(S, name), on_blur=kept(name), aria_invalid=invalid(S, name),
    )


def _command() -> rx.Component:
    mpi = S.kind == "mpi"
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
                value=S.command_mode,
                on_change=S.set_command_mode,
            ),
            rx.text(rx.match(S.kind, ("pytorch", t("jobform.command.pytorch")), ("mpi", t("jobform.command.mpi")),
                             t("jobform.command")), size="2", weight="medium", id="job-command-label"),
            _command_box("command", "job-command", "python3\ntrain.py\n--epochs=10", "python3 train.py --epochs=10",
                         True),
            field_error(S, "command", "job-command-error"),
            rx.cond(
                mpi,
                field(t("jobform.worker_command"),
                      _command_box("worker_command", "job-worker-command", "/usr/sbin/sshd\n-D", "/usr/sbin/sshd -D",
                                   False),
                      t("jobform.worker_command.hint"),
                      error=field_error(S, "worker_command", "job-worker-command-error")),
            ),
            rx.match(
                S.kind,
                ("pytorch", _note(t_format("jobform.pytorch.rendezvous", world=S.replica_total), "network",
                                  "job-rendezvous")),
                ("mpi", _note(t("jobform.mpi.hostfile"), "network", "job-hostfile")),
                rx.fragment(),
            ),
            _note(t("newjob.command.help"), "shield_check", "job-command-help"),
            field(t("newjob.env"), rx.text_area(name="env", id="job-env", rows="3", font_family=MONO, width="100%",
                                                placeholder="WANDB_MODE=offline\nOMP_NUM_THREADS=8",
                                                on_change=clears(S, "env"), on_blur=kept("env"),
                                                aria_invalid=invalid(S, "env")),
                  t("newjob.env.hint"), error=field_error(S, "env", "job-env-error")),
            spacing="3",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def _replicas() -> rx.Component:
    """The batch gang's replicas or the workers (not for a session), with the live GPU total."""
    workers = S.kind != "batch"
    return rx.cond(
        S.kind != "interactive",
        field(
            rx.cond(workers, t("jobform.workers"), t("jobform.replicas")),
            rx.input(name="replicas", value=S.replicas, on_change=S.set_replicas, id="job-replicas", type="number",
                     min=rx.cond(workers, "0", "1"), max="1024", aria_invalid=invalid(S, "replicas")),
            rx.text(rx.match(S.kind, ("pytorch", t("jobform.workers.hint.pytorch")),
                             ("mpi", t("jobform.workers.hint.mpi")), t("jobform.replicas.hint")),
                    size="1", color_scheme="gray"),
            error=field_error(S, "replicas", "job-replicas-error"),
        ),
    )


def _accelerators() -> rx.Component:
    return rx.cond(
        S.has_accelerators,
        rx.grid(
            field(
                t("newjob.model"),
                rx.select.root(
                    rx.select.trigger(width="100%", id="gpu-model"),
                    rx.select.content(rx.foreach(S.accelerators,
                                                 lambda c: rx.select.item(c["model"], value=c["model"]))),
                    value=S.model,
                    on_change=S.set_model,
                ),
            ),
            field(
                rx.cond(S.kind == "interactive", t("newjob.gpus"), t("jobform.gpus.per_replica")),
                rx.select.root(
                    rx.select.trigger(width="100%", id="gpu-count"),
                    rx.select.content(rx.foreach(S.gpu_options, lambda n: rx.select.item(n, value=n))),
                    value=S.gpus,
                    on_change=S.set_gpus,
                ),
                rx.vstack(
                    rx.text(t("newjob.gpus.available"), " ", S.model_free, " / ", S.model_max, size="1",
                            color_scheme="gray", id="gpu-available"),
                    rx.text(t_format("jobform.gpus.bound", max=S.model_max), size="1", color_scheme="gray"),
                    spacing="0",
                ),
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
            section_title(rx.cond(S.kind == "interactive", t("newjob.section.resources"),
                                  t("jobform.section.replicas")), "cpu"),
            rx.text(t("jobform.resources.per_replica"), size="2", color_scheme="gray"),
            _replicas(),
            _accelerators(),
            rx.grid(
                field(t("newjob.cpu"), rx.input(name="cpu", id="job-cpu", default_value=S.default_cpu,
                                                placeholder=S.default_cpu, on_change=clears(S, "cpu"),
                                                on_blur=kept("cpu"), aria_invalid=invalid(S, "cpu")),
                      _default_hint("newjob.cpu.hint", "newjob.cpu.hint_default", S.default_cpu, "job-cpu-hint"),
                      error=field_error(S, "cpu", "job-cpu-error")),
                field(t("newjob.memory"), rx.input(name="memory", id="job-memory", default_value=S.default_memory,
                                                   placeholder=S.default_memory, on_change=clears(S, "memory"),
                                                   on_blur=kept("memory"), aria_invalid=invalid(S, "memory")),
                      _default_hint("newjob.memory.hint", "newjob.memory.hint_default", S.default_memory,
                                    "job-memory-hint"),
                      error=field_error(S, "memory", "job-memory-error")),
                field(t("newjob.max_runtime"), rx.input(name="max_runtime", id="job-max-runtime", placeholder="2h",
                                                        on_change=clears(S, "max_runtime"),
                                                        on_blur=kept("max_runtime"),
                                                        aria_invalid=invalid(S, "max_runtime")),
                      t("newjob.max_runtime.hint"), error=field_error(S, "max_runtime", "job-max-runtime-error")),
                columns=rx.breakpoints(initial="1", sm="3"),
                spacing="4",
                width="100%",
            ),
            rx.hstack(
                rx.icon("calculator", size=16, color=rx.color("gray", 10)),
                rx.text(t_format("jobform.total", replicas=S.gpu_replicas, gpus=S.gpus, total=S.gpu_total),
                        size="2", weight="medium", id="job-gpu-total"),
                align="center",
                spacing="2",
            ),
            spacing="4",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def _form() -> rx.Component:
    """The form (kept mounted, only hidden, in YAML mode: what the user typed stays for "Back to the form")."""
    return rx.form(
        rx.vstack(
            _basics(),
            _scheduling(),
            _command(),
            _resources(),
            advanced(),
            error_callout(S.form_error, id="submit-error"),
            rx.hstack(
                rx.button(rx.icon("file_code", size=16), t("jobform.yaml.open"), type="button", variant="soft",
                          on_click=S.open_yaml, id="edit-yaml"),
                rx.spacer(),
                rx.link(rx.button(t("common.cancel"), variant="soft", color_scheme="gray", type="button"),
                        href="/jobs"),
                rx.button(
                    rx.cond(S.submitting, rx.spinner(size="2"), rx.icon("rocket", size=16)),
                    t("newjob.submit"),
                    type="submit",
                    size="3",
                    disabled=S.submitting,
                    id="submit-job",
                ),
                align="center",
                width="100%",
                spacing="3",
            ),
            spacing="4",
            width="100%",
        ),
        on_submit=S.submit,
        reset_on_submit=False,
        key=S.form_key,
        width="100%",
        display=rx.cond(S.yaml_mode, "none", "block"),
    )


def new_job_page() -> rx.Component:
    """The new-job form, or its spec as YAML."""
    return shell(
        page_header(t("newjob.title"), t("newjob.subtitle"), crumbs=_crumbs()),
        rx.cond(
            S.loaded,
            rx.box(_form(), rx.cond(S.yaml_mode, yaml_editor()), width="100%", max_width="880px"),
            rx.vstack(error_callout(S.error), loading(), width="100%"),
        ),
        active="jobs",
    )
