"""Shared console components: translation lookup, the top bar, page frame, badges and callouts (form fields with
their errors beside them: :mod:`crater_app.ui.forms`)."""

from __future__ import annotations

import reflex as rx

from crater_app import i18n
from crater_app.state import AppState, NotificationsState

PHASE_COLORS = (
    ("Held", "orange"),
    ("Queued", "amber"),
    ("Running", "blue"),
    ("Stopping", "purple"),
    ("Succeeded", "green"),
    ("Failed", "red"),
    ("Cancelled", "gray"),
)
PHASE_ICONS = (
    ("Held", "hand"),
    ("Queued", "clock"),
    ("Running", "loader"),
    ("Stopping", "circle_stop"),
    ("Succeeded", "circle_check"),
    ("Failed", "circle_x"),
    ("Cancelled", "ban"),
)
ROLE_COLORS = (("admin", "crimson"), ("user", "indigo"), ("guest", "gray"))
MONO = "var(--code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace)"
#: what an empty field shows, everywhere (in the body font: a monospace em dash looks like an en dash)
EMPTY = "—"


def t(key: str) -> rx.Var:
    """The text for ``key`` in the session's language (a key of ``i18n/en.json``)."""
    return AppState.tr[key]


def t_dynamic(prefix: str, value: rx.Var) -> rx.Var:
    """The text for the key ``prefix + value`` (e.g. ``phase.`` + a job's phase word)."""
    return AppState.tr[rx.Var.create(prefix) + value]


def t_format(key: str, **params: rx.Var | str) -> rx.Var:
    """The text for ``key`` with its ``{name}`` placeholders filled in the browser from ``params`` (Vars)."""
    text = t(key).to(str)
    for name, value in params.items():
        text = text.replace("{" + name + "}", value)
    return text


def phase_badge(phase: rx.Var, size: str = "2") -> rx.Component:
    """A colored status badge with a translated label (the API word stays in ``data-phase``)."""
    return rx.badge(
        rx.match(phase, *[(p, rx.icon(icon, size=12)) for p, icon in PHASE_ICONS], rx.icon("circle_help", size=12)),
        t_dynamic("phase.", phase),
        color_scheme=rx.match(phase, *PHASE_COLORS, "gray"),
        variant="soft",
        size=size,
        radius="full",
        custom_attrs={"data-phase": phase},
        class_name="phase-badge",
    )


def role_badge(role: rx.Var) -> rx.Component:
    """A platform-role badge (admin / user / guest)."""
    return rx.badge(t_dynamic("role.", role), color_scheme=rx.match(role, *ROLE_COLORS, "gray"), variant="surface")


def error_callout(message: rx.Var, **props) -> rx.Component:
    """A red callout showing a service error message when ``message`` is not empty."""
    return rx.cond(
        message != "",
        rx.callout.root(
            rx.callout.icon(rx.icon("triangle_alert")),
            rx.callout.text(message),
            color_scheme="red",
            role="alert",
            width="100%",
            **props,
        ),
    )


def section_title(text: rx.Var, icon: str | None = None) -> rx.Component:
    """A card heading with an optional icon."""
    return rx.hstack(
        rx.icon(icon, size=18, color=rx.color("gray", 10)) if icon else rx.fragment(),
        rx.heading(text, size="4", weight="bold"),
        align="center",
        spacing="2",
    )


def page_header(title: rx.Var, subtitle: rx.Var | None = None, *actions: rx.Component, crumbs=None) -> rx.Component:
    """Page title (text or a component), a gray subtitle and right-aligned actions."""
    title_el = title if isinstance(title, rx.Component) else rx.heading(title, size="7", weight="bold", id="page-title")
    return rx.flex(
        rx.vstack(
            crumbs if crumbs is not None else rx.fragment(),
            title_el,
            rx.text(subtitle, size="2", color_scheme="gray") if subtitle is not None else rx.fragment(),
            spacing="1",
        ),
        rx.spacer(),
        rx.hstack(*actions, spacing="3", align="center"),
        width="100%",
        align="end",
        wrap="wrap",
        gap="4",
    )


def wide_only(display: str = "inline") -> rx.Var:
    """A ``display`` value that hides an element on narrow screens (phones) and shows it from ``sm`` up."""
    return rx.breakpoints(initial="none", sm=display)


def narrow_only(display: str = "flex") -> rx.Var:
    """A ``display`` value that shows an element on narrow screens only."""
    return rx.breakpoints(initial=display, sm="none")


def empty_mark() -> rx.Component:
    """The mark of an empty field (``—``, gray, in the body font)."""
    return rx.text(EMPTY, as_="span", color_scheme="gray", class_name="empty-value")


def or_empty(value: rx.Var, component: rx.Component | None = None) -> rx.Component:
    """``component`` (default: ``value`` as text) when ``value`` is not empty, else :func:`empty_mark`."""
    return rx.cond(value != "", component if component is not None else rx.text(value, as_="span"), empty_mark())


def _nav_link(label: rx.Var, href: str, icon: str, active: bool, key: str, **props) -> rx.Component:
    # Labels from ``md`` (1024 px) up: below that the six sections of an admin's bar are icons (with a tooltip
    # and an accessible name), which keeps the bar on one line down to 390 px.
    return rx.link(
        rx.hstack(rx.icon(icon, size=16),
                  rx.text(label, size="2", weight="medium", display=rx.breakpoints(initial="none", md="inline")),
                  spacing="2", align="center"),
        href=href,
        underline="none",
        color=rx.color("accent", 11) if active else rx.color("gray", 11),
        title=label,
        aria_label=label,
        **({"aria_current": "page"} if active else {}),
        padding_x=rx.breakpoints(initial="var(--space-2)", sm="var(--space-3)"),
        padding_y="var(--space-2)",
        border_radius="var(--radius-2)",
        background_color=rx.color("accent", 3) if active else "transparent",
        _hover={"background_color": rx.color("gray", 3), "color": rx.color("gray", 12)},
        id=f"nav-{key}",
        **props,
    )


def language_switch() -> rx.Component:
    """English / 简体中文, remembered in this browser."""
    return rx.select.root(
        rx.select.trigger(variant="ghost", color="gray", aria_label=t("nav.language"), id="lang-switch"),
        rx.select.content(
            *[rx.select.item(t(f"lang.{code}"), value=code) for code in i18n.LANGUAGES],
        ),
        value=AppState.lang_code,
        on_change=AppState.set_lang,
        size="2",
    )


def user_menu() -> rx.Component:
    """The signed-in user's name, role and the sign-out item."""
    return rx.menu.root(
        rx.menu.trigger(
            rx.button(
                rx.icon("circle_user_round", size=18),
                rx.text(AppState.username, id="nav-username", display=wide_only(),
                        max_width="160px", overflow="hidden", text_overflow="ellipsis", white_space="nowrap"),
                rx.icon("chevron_down", size=14),
                variant="ghost",
                color_scheme="gray",
                aria_label=AppState.username,
                id="user-menu",
            ),
        ),
        rx.menu.content(
            rx.menu.item(
                rx.vstack(
                    rx.hstack(rx.text(t("nav.signed_in_as"), size="1", color_scheme="gray"),
                              role_badge(AppState.role), align="center", spacing="2"),
                    rx.text(AppState.username, size="2", weight="medium", color=rx.color("gray", 12)),
                    spacing="1",
                ),
                disabled=True,
                height="auto",
                padding_y="var(--space-2)",
            ),
            rx.menu.separator(),
            rx.menu.item(rx.icon("circle_user_round", size=14), t("identity.account.title"),
                         on_click=rx.redirect("/account"), id="menu-account"),
            rx.menu.item(rx.icon("key_round", size=14), t("nav.tokens"), on_click=rx.redirect("/tokens"),
                         id="menu-tokens"),
            # The sections that only wide screens show in the bar are reachable here on every width.
            rx.menu.item(rx.icon("clipboard_check", size=14), t("nav.approvals"), on_click=rx.redirect("/approvals"),
                         id="menu-approvals"),
            rx.cond(AppState.role != "guest",
                    rx.menu.item(rx.icon("chart_column", size=14), t("nav.usage"), on_click=rx.redirect("/usage"),
                                 id="menu-usage")),
            rx.menu.separator(),
            rx.menu.item(rx.icon("log_out", size=14), t("nav.sign_out"), on_click=AppState.sign_out, color="red",
                         id="sign-out"),
            align="end",
        ),
    )


def _notification_item(item: rx.Var) -> rx.Component:
    return rx.menu.item(
        rx.hstack(
            rx.box(width="8px", height="8px", border_radius="50%", flex_shrink="0", margin_top="6px",
                   background_color=rx.cond(item["read"] == "1", "transparent", rx.color("accent", 9))),
            rx.vstack(
                rx.text(item["text"], size="2", white_space="normal", color=rx.color("gray", 12)),
                rx.text(item["at"], size="1", color_scheme="gray", font_family=MONO),
                spacing="1",
            ),
            spacing="2",
            align="start",
        ),
        on_click=NotificationsState.mark_read(item["id"]),
        height="auto",
        padding_y="var(--space-2)",
        class_name="notification-item",
        custom_attrs={"data-read": item["read"]},
    )


def notification_bell() -> rx.Component:
    """The bell: unread count, the latest notifications (a click marks one read), "mark all read" and a link to
    the approvals page. The count is read when the page mounts and whenever the menu opens."""
    return rx.menu.root(
        rx.menu.trigger(
            rx.box(
                rx.icon_button(rx.icon("bell", size=18), variant="ghost", color_scheme="gray",
                               aria_label=t("notify.title"), id="notification-bell"),
                rx.cond(
                    NotificationsState.unread > 0,
                    rx.badge(NotificationsState.unread, color_scheme="red", variant="solid", radius="full", size="1",
                             position="absolute", top="-6px", right="-8px", id="notification-count"),
                ),
                position="relative",
                on_mount=NotificationsState.refresh,
            ),
        ),
        rx.menu.content(
            rx.hstack(
                rx.text(t("notify.title"), weight="bold", size="2"),
                rx.spacer(),
                rx.cond(NotificationsState.unread > 0,
                        rx.button(t("notify.mark_all"), size="1", variant="ghost",
                                  on_click=NotificationsState.mark_all_read, id="notification-mark-all")),
                align="center",
                padding_x="var(--space-3)",
                padding_y="var(--space-2)",
                width="100%",
            ),
            rx.menu.separator(),
            rx.cond(
                NotificationsState.items.length() > 0,
                rx.foreach(NotificationsState.items, _notification_item),
                rx.text(t("notify.empty"), size="2", color_scheme="gray", padding="var(--space-3)"),
            ),
            rx.menu.separator(),
            rx.menu.item(rx.link(t("notify.all_requests"), href="/approvals", size="2")),
            align="end",
            max_width="380px",
            max_height="70vh",
            overflow_y="auto",
        ),
        on_open_change=NotificationsState.on_open,
    )


def logo(size: str = "5", compact: bool = False) -> rx.Component:
    """The Crater word mark (``compact``: the word is left out on narrow screens)."""
    return rx.hstack(
        rx.center(rx.icon("hexagon", size=20, color="white"), background=rx.color("accent", 9), border_radius="8px",
                  width="30px", height="30px", flex_shrink="0"),
        rx.heading(t("app.name"), size=size, weight="bold", **({"display": wide_only("block")} if compact else {})),
        align="center",
        spacing="2",
    )


def navbar(active: str) -> rx.Component:
    """The top bar: logo, sections, language switch and user menu."""
    return rx.box(
        rx.hstack(
            rx.link(logo("4", compact=True), href="/jobs", underline="none", color=rx.color("gray", 12),
                    aria_label=t("app.name")),
            rx.separator(orientation="vertical", size="2", display=wide_only("block")),
            rx.el.nav(
                rx.hstack(
                    _nav_link(t("nav.jobs"), "/jobs", "list_checks", active == "jobs", "jobs"),
                    _nav_link(t("nav.nodes"), "/nodes", "server", active == "nodes", "nodes"),
                    _nav_link(t("nav.projects"), "/projects", "folder_kanban", active == "projects", "projects"),
                    # Phones reach the tokens through the user menu (the bar has no room for a sixth icon).
                    _nav_link(t("nav.tokens"), "/tokens", "key_round", active == "tokens", "tokens",
                              display=wide_only("block")),
                    # Phones reach /approvals through the bell's menu ("All requests"): the bar has no room.
                    rx.box(_nav_link(t("nav.approvals"), "/approvals", "clipboard_check", active == "approvals",
                                     "approvals"), display=wide_only("block")),
                    rx.cond(AppState.role != "guest",
                            _nav_link(t("nav.usage"), "/usage", "chart_column", active == "usage", "usage",
                                      display=wide_only("block"))),
                    rx.cond(AppState.is_admin,
                            rx.fragment(
                                _nav_link(t("nav.admin"), "/admin/users", "users", active == "admin", "admin"),
                                _nav_link(t("nav.oplog"), "/admin/operation-logs", "scroll_text", active == "oplog",
                                          "oplog"),
                            )),
                    align="center",
                    spacing=rx.breakpoints(initial="1", sm="2"),
                ),
                aria_label=t("nav.menu"),
            ),
            rx.spacer(),
            rx.hstack(rx.icon("languages", size=16, color=rx.color("gray", 10), display=wide_only("block")),
                      language_switch(), align="center", spacing="3"),
            notification_bell(),
            user_menu(),
            align="center",
            spacing=rx.breakpoints(initial="2", sm="3"),
            max_width="1280px",
            margin_x="auto",
            padding_x=rx.breakpoints(initial="var(--space-3)", sm="var(--space-5)"),
            height="56px",
        ),
        position="sticky",
        top="0",
        z_index="10",
        background_color=rx.color("gray", 1),
        border_bottom=f"1px solid {rx.color('gray', 5)}",
    )


def shell(*children: rx.Component, active: str = "") -> rx.Component:
    """A signed-in console page: top bar plus the page body."""
    return rx.box(
        navbar(active),
        rx.box(
            rx.vstack(*children, spacing="5", width="100%"),
            max_width="1280px",
            margin_x="auto",
            padding_x=rx.breakpoints(initial="var(--space-3)", sm="var(--space-5)"),
            padding_y=rx.breakpoints(initial="var(--space-4)", sm="var(--space-6)"),
        ),
        min_height="100vh",
        background_color=rx.color("gray", 2),
        lang=AppState.lang_code,
    )


def loading() -> rx.Component:
    """A centered spinner."""
    return rx.center(rx.spinner(size="3"), padding="var(--space-8)", width="100%")


def mono(text: rx.Var, **props) -> rx.Component:
    """Inline monospace text (user data, escaped)."""
    return rx.text(text, font_family=MONO, size="2", **props)
