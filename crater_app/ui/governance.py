"""Components shared by the projects, API-token and operation-log pages: project-role and expiry badges, a
confirmation dialog driven by state, the admins-only notice and the pager (a form field's error line is
:func:`crater_app.ui.forms.field_error`)."""

from __future__ import annotations

import reflex as rx

from crater_app.ui.components import t, t_dynamic, t_format

PROJECT_ROLE_COLORS = (("admin", "crimson"), ("member", "indigo"), ("viewer", "gray"))
EXPIRY_COLORS = (("expired", "red"), ("soon", "amber"), ("active", "green"), ("never", "gray"))
EXPIRY_ICONS = (("expired", "calendar_x"), ("soon", "calendar_clock"), ("active", "calendar_check"),
                ("never", "infinity"))


def project_role_badge(role: rx.Var, **props) -> rx.Component:
    """A project-role badge (admin / member / viewer), translated; the role word stays in ``data-role``."""
    return rx.badge(
        t_dynamic("project.role.", role),
        color_scheme=rx.match(role, *PROJECT_ROLE_COLORS, "gray"),
        variant="soft",
        custom_attrs={"data-role": role},
        **props,
    )


def expiry_badge(row: rx.Var, **props) -> rx.Component:
    """A project's expiry state (``row["expiry"]``: never / active / soon / expired) as a colored badge; "soon"
    and "active" say how many days are left (``row["days_left"]``)."""
    state = row["expiry"]
    return rx.badge(
        rx.match(state, *[(s, rx.icon(icon, size=12)) for s, icon in EXPIRY_ICONS], rx.fragment()),
        rx.match(
            state,
            ("expired", t("expiry.expired")),
            ("never", t("expiry.never")),
            t_format("expiry.days_left", days=row["days_left"]),
        ),
        color_scheme=rx.match(state, *EXPIRY_COLORS, "gray"),
        variant=rx.cond(state == "expired", "solid", "soft"),
        radius="full",
        custom_attrs={"data-expiry": state},
        class_name="expiry-badge",
        **props,
    )


def confirm_dialog(*, open: rx.Var, on_open_change, title: rx.Var, text: rx.Component, confirm: rx.Var,
                   on_confirm, confirm_id: str, icon: str = "trash_2") -> rx.Component:
    """A confirmation dialog opened by state (``open``); Back closes it through ``on_open_change(False)``."""
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title(title),
            rx.alert_dialog.description(text, size="2"),
            rx.hstack(
                rx.alert_dialog.cancel(rx.button(t("common.back"), variant="soft", color_scheme="gray")),
                rx.alert_dialog.action(rx.button(rx.icon(icon, size=14), confirm, color_scheme="red",
                                                 on_click=on_confirm, id=confirm_id)),
                spacing="3",
                justify="end",
                margin_top="var(--space-4)",
            ),
            max_width="460px",
        ),
        open=open,
        on_open_change=on_open_change,
    )


def admins_only(text: rx.Var, id: str) -> rx.Component:
    """The notice shown instead of an admins-only page."""
    return rx.callout.root(
        rx.callout.icon(rx.icon("shield_alert")),
        rx.callout.text(text),
        color_scheme="amber",
        size="2",
        id=id,
    )


def pager(state, id: str, summary: tuple | None = None) -> rx.Component:
    """Rows shown / total and previous/next page buttons for a state with ``page``, ``page_count``, ``prev_page``,
    ``next_page`` and (for the default ``summary``) ``range_start``, ``range_end`` and ``total``.

    ``summary``: the children of the text left of the buttons (id ``id``), instead of "Rows a–b / total".
    """
    if summary is None:
        summary = (t("pager.rows"), " ", state.range_start, "–", state.range_end, " / ", state.total)
    return rx.hstack(
        rx.text(*summary, size="2", color_scheme="gray", id=id),
        rx.spacer(),
        rx.icon_button(rx.icon("chevron_left", size=16), variant="soft", color_scheme="gray",
                       disabled=state.page <= 1, on_click=state.prev_page, aria_label=t("pager.prev"),
                       id=f"{id}-prev"),
        rx.text(state.page, " / ", state.page_count, size="2"),
        rx.icon_button(rx.icon("chevron_right", size=16), variant="soft", color_scheme="gray",
                       disabled=state.page >= state.page_count, on_click=state.next_page,
                       aria_label=t("pager.next"), id=f"{id}-next"),
        align="center",
        width="100%",
        spacing="3",
    )
