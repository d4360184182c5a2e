"""Parts of the new-job page: the advanced options (shared memory, gang size, restart policy, node selector) and the
"Edit as YAML" editor, which submits its text as it is."""

from __future__ import annotations

import reflex as rx

from crater_app.state import NewJobState
from crater_app.ui.components import MONO, section_title, t
from crater_app.ui.forms import clears, field, field_error, invalid

S = NewJobState


def kept(name: str):
    """The blur handler of text input ``name``: its value is kept for the YAML editor."""
    return lambda value: S.keep_value(name, value)


def _text(name: str, id: str, placeholder: str = "", **props) -> rx.Component:
    return rx.input(name=name, id=id, placeholder=placeholder, font_family=MONO, on_change=clears(S, name),
                    on_blur=kept(name), aria_invalid=invalid(S, name), **props)


def _restart() -> rx.Component:
    return rx.grid(
        field(t("jobform.restart_policy"), rx.select.root(
            rx.select.trigger(width="100%", id="job-restart-policy"),
            rx.select.content(
                rx.select.item(t("jobform.restart.fail"), value="fail"),
                rx.select.item(t("jobform.restart.restart"), value="restart"),
                rx.select.item(t("jobform.restart.ignore"), value="ignore"),
            ),
            value=S.restart_policy,
            on_change=S.set_restart_policy,
        ), t("jobform.restart_policy.hint"), error=field_error(S, "restart_policy", "job-restart-policy-error")),
        rx.cond(
            S.restart_policy == "restart",
            field(t("jobform.max_retry"), _text("max_retry", "job-max-retry", "3", type="number", min=0, max=100),
                  t("jobform.max_retry.hint"), error=field_error(S, "max_retry", "job-max-retry-error")),
        ),
        columns=rx.breakpoints(initial="1", sm="2"),
        spacing="4",
        width="100%",
    )


def advanced() -> rx.Component:
    """The advanced options, behind a toggle (hidden, not removed: their values stay in the form)."""
    return rx.card(
        rx.vstack(
            rx.button(
                rx.cond(S.show_advanced, rx.icon("chevron_down", size=16), rx.icon("chevron_right", size=16)),
                t("jobform.advanced"),
                type="button", variant="ghost", color_scheme="gray", on_click=S.toggle_advanced, id="show-advanced",
                aria_expanded=rx.cond(S.show_advanced, "true", "false"),
            ),
            rx.vstack(
                rx.grid(
                    field(t("jobform.shm_size"), _text("shm_size", "job-shm-size", "8Gi"), t("jobform.shm_size.hint"),
                          error=field_error(S, "shm_size", "job-shm-size-error")),
                    field(t("jobform.min_available"),
                          _text("min_available", "job-min-available", "", type="number", min=1),
                          t("jobform.min_available.hint"), error=field_error(S, "min_available",
                                                                            "job-min-available-error")),
                    columns=rx.breakpoints(initial="1", sm="2"),
                    spacing="4",
                    width="100%",
                ),
                _restart(),
                field(t("jobform.node_selector"),
                      rx.text_area(name="node_selector", id="job-node-selector", rows="3", font_family=MONO,
                                   width="100%", placeholder="nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB",
                                   on_change=clears(S, "node_selector"), on_blur=kept("node_selector"),
                                   aria_invalid=invalid(S, "node_selector")),
                      t("jobform.node_selector.hint"), error=field_error(S, "node_selector",
                                                                         "job-node-selector-error")),
                spacing="4",
                width="100%",
                display=rx.cond(S.show_advanced, "flex", "none"),
                id="advanced-options",
            ),
            spacing="3",
            width="100%",
        ),
        size="3",
        width="100%",
    )


def yaml_editor() -> rx.Component:
    """The spec as YAML, editable, submitted as it is; an error's spec path and message above the text."""
    return rx.form(
        rx.card(
            rx.vstack(
                section_title(t("jobform.yaml.title"), "file_code"),
                rx.text(t("jobform.yaml.hint"), size="2", color_scheme="gray"),
                rx.cond(
                    S.yaml_error != "",
                    rx.callout.root(
                        rx.callout.icon(rx.icon("triangle_alert")),
                        rx.callout.text(
                            rx.cond(S.yaml_error_path != "",
                                    rx.code(S.yaml_error_path, id="yaml-error-path", margin_right="0.5em")),
                            rx.text.span(S.yaml_error, id="yaml-error-message"),
                        ),
                        color_scheme="red", role="alert", width="100%", id="yaml-error",
                    ),
                ),
                rx.text_area(name="spec_yaml", id="job-yaml", default_value=S.yaml_text, key=S.yaml_key, rows="24",
                             font_family=MONO, width="100%", spell_check=False,
                             aria_invalid=rx.cond(S.yaml_error != "", "true", "false")),
                rx.hstack(
                    rx.button(rx.icon("arrow_left", size=16), t("jobform.yaml.back"), type="button", variant="soft",
                              color_scheme="gray", on_click=S.close_yaml, id="yaml-back"),
                    rx.spacer(),
                    rx.button(
                        rx.cond(S.submitting, rx.spinner(size="2"), rx.icon("rocket", size=16)),
                        t("newjob.submit"), type="submit", size="3", disabled=S.submitting, id="submit-yaml",
                    ),
                    align="center",
                    width="100%",
                ),
                spacing="3",
                width="100%",
            ),
            size="3",
            width="100%",
        ),
        on_submit=S.submit_yaml,
        reset_on_submit=False,
        width="100%",
    )
