"""The job page's Command card: the argument list a single-task job runs, or one block per task of a job with
several (its name, replicas, per-replica resources and argument list)."""

from __future__ import annotations

import reflex as rx

from crater_app.state import JobDetailState
from crater_app.ui.components import MONO, section_title, t, t_format


def _arg(arg: rx.Var, index: rx.Var) -> rx.Component:
    return rx.hstack(
        rx.text(index, font_family=MONO, size="1", color_scheme="gray", min_width="28px", text_align="right",
                padding_top="2px"),
        rx.text(arg, font_family=MONO, size="2", white_space="pre-wrap", word_break="break-all"),
        spacing="3",
        align="start",
        width="100%",
        class_name="job-arg",
    )


def _argv_box(argv: rx.Var, **props) -> rx.Component:
    return rx.vstack(
        rx.foreach(argv, _arg),
        background_color=rx.color("gray", 3),
        border_radius="var(--radius-3)",
        padding="var(--space-3)",
        spacing="1",
        width="100%",
        **props,
    )


def _task_block(argv: rx.Var, index: rx.Var) -> rx.Component:
    """One task of a job with several: its name, replicas, per-replica resources and argument list."""
    task = JobDetailState.task_blocks[index]
    return rx.vstack(
        rx.hstack(
            rx.text(task["name"], weight="bold", size="2", font_family=MONO),
            rx.badge(t_format("job.task.replicas", replicas=task["replicas"]), variant="soft", color_scheme="gray",
                     size="1"),
            rx.text(t_format("job.task.resources", resources=task["resources_text"]), size="1", color_scheme="gray"),
            align="center",
            spacing="3",
            wrap="wrap",
        ),
        _argv_box(argv),
        spacing="2",
        width="100%",
        class_name="job-task",
        custom_attrs={"data-task": task["name"]},
    )


def command_section() -> rx.Component:
    """The Command card: the job's argument list; one block per task (name, replicas, per-replica resources,
    argument list) for a job with several."""
    return rx.card(
        rx.vstack(
            section_title(t("job.section.command"), "terminal"),
            rx.cond(
                JobDetailState.task_argvs.length() > 1,
                rx.vstack(
                    rx.foreach(JobDetailState.task_argvs, _task_block),
                    rx.text(t("job.command.note.tasks"), size="1", color_scheme="gray"),
                    spacing="4",
                    width="100%",
                    id="job-tasks",
                ),
                rx.vstack(
                    _argv_box(JobDetailState.argv, id="job-command"),
                    rx.text(t("job.command.note"), size="1", color_scheme="gray"),
                    spacing="3",
                    width="100%",
                ),
            ),
            spacing="3",
            width="100%",
        ),
        size="3",
        width="100%",
    )
