"""Form fields with their errors beside them: a labelled control with its hint (:func:`field`), the error line of
one input (:func:`field_error`, from a ``FieldErrors`` state) and the handlers that clear it and mark the input
invalid while it has one."""

from __future__ import annotations

import reflex as rx


def field(label: rx.Var, control: rx.Component, hint=None, required: bool = False,
          error: rx.Component | None = None) -> rx.Component:
    """A labelled form control with its error (:func:`field_error`, when given) right below it and an optional hint
    (text or component) below that."""
    if hint is None:
        hint_el = rx.fragment()
    elif isinstance(hint, rx.Component):
        hint_el = hint
    else:
        hint_el = rx.text(hint, size="1", color_scheme="gray")
    return rx.vstack(
        rx.hstack(
            rx.text(label, size="2", weight="medium", as_="label"),
            rx.text("*", color_scheme="red", size="2") if required else rx.fragment(),
            spacing="1",
        ),
        control,
        error if error is not None else rx.fragment(),
        hint_el,
        spacing="1",
        width="100%",
        align="stretch",
    )


def field_error(state, name: str, id: str | None = None) -> rx.Component:
    """The error of the form input ``name`` (``state.field_errors[name]``, a ``FieldErrors`` state), in red with an
    icon, when there is one; ``id`` defaults to ``<name>-error`` (``role="alert"``, ``data-field`` the input)."""
    return rx.cond(
        state.field_errors.contains(name),
        rx.hstack(
            rx.icon("circle_alert", size=14, color=rx.color("red", 11), flex_shrink="0"),
            rx.text(state.field_errors[name], size="1", color=rx.color("red", 11)),
            spacing="1",
            align="center",
            id=id or f"{name.replace('_', '-')}-error",
            role="alert",
            class_name="field-error",
            custom_attrs={"data-field": name},
        ),
    )


def clears(state, name: str):
    """The change handler of input ``name``: while the input has an error, a change sends ``clear_field_error``
    (the error goes at the first keystroke); without one the browser sends nothing (the choice is made in the
    browser, from ``state.field_errors``)."""
    return rx.cond(state.field_errors.contains(name), state.clear_field_error(name), rx.noop())


def invalid(state, name: str) -> rx.Var:
    """``"true"`` while input ``name`` has an error (for ``aria-invalid``), else ``"false"``."""
    return rx.cond(state.field_errors.contains(name), "true", "false")
