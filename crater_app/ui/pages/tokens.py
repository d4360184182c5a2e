"""/tokens: personal API tokens for the CLI and scripts (every signed-in user manages their own)."""

from __future__ import annotations

import reflex as rx

from crater_app.state import TokensState
from crater_app.ui.components import (
    MONO, error_callout, loading, page_header, section_title, shell, t, t_dynamic, t_format, wide_only,
)
from crater_app.ui.forms import clears, field, field_error
from crater_app.ui.governance import confirm_dialog

WIDE_CELL = {"display": wide_only("table-cell")}
STATUS_COLORS = (("active", "green"), ("expired", "gray"), ("revoked", "red"))
#: copies the secret from its input, in the browser (no round trip: the click's user activation still holds);
#: where the page is not a secure context (plain http to a host other than localhost) the older copy command is used
COPY_SECRET_JS = (
    "(() => { const el = document.getElementById('token-secret'); if (!el) return; el.select();"
    " if (navigator.clipboard && window.isSecureContext) { navigator.clipboard.writeText(el.value); }"
    " else { document.execCommand('copy'); } })()"
)


def _create_form() -> rx.Component:
    return rx.card(
        rx.form(
            rx.vstack(
                section_title(t("tokens.create.title"), "key_round"),
                rx.flex(
                    rx.box(
                        field(t("tokens.name"),
                              rx.vstack(rx.input(name="name", id="token-name", required=True, max_length=64,
                                                 placeholder=t("tokens.name.placeholder"), width="100%",
                                                 on_change=clears(TokensState, "name")),
                                        field_error(TokensState, "name", "token-name-error"),
                                        spacing="1", width="100%"),
                              t("tokens.name.hint"), required=True),
                        flex="2",
                        min_width="220px",
                    ),
                    rx.box(
                        field(t("tokens.days"),
                              rx.vstack(rx.input(name="expires_in_days", id="token-days", type="number", min=1,
                                                 max=365, step=1, default_value="90", required=True, width="100%",
                                                 on_change=clears(TokensState, "expires_in_days")),
                                        field_error(TokensState, "expires_in_days", "token-days-error"),
                                        spacing="1", width="100%"),
                              t("tokens.days.hint"), required=True),
                        flex="1",
                        min_width="160px",
                    ),
                    spacing="4",
                    wrap="wrap",
                    width="100%",
                ),
                error_callout(TokensState.form_error, id="create-token-error"),
                rx.hstack(
                    rx.button(rx.cond(TokensState.creating, rx.spinner(size="2"), rx.icon("plus", size=16)),
                              t("tokens.create.submit"), type="submit", disabled=TokensState.creating,
                              id="create-token"),
                    justify="end",
                    width="100%",
                ),
                spacing="4",
                width="100%",
            ),
            on_submit=TokensState.create,
            reset_on_submit=False,
            key=TokensState.form_key,
        ),
        size="3",
        width="100%",
    )


def _usage() -> rx.Component:
    return rx.callout.root(
        rx.callout.icon(rx.icon("terminal")),
        rx.callout.text(
            t("tokens.usage"), " ",
            rx.code("Authorization: Bearer <token>", variant="ghost", word_break="break-all"),
        ),
        color_scheme="gray",
        variant="surface",
        size="1",
    )


def _status_badge(status: rx.Var) -> rx.Component:
    return rx.badge(
        t_dynamic("token.status.", status),
        color_scheme=rx.match(status, *STATUS_COLORS, "gray"),
        variant="soft",
        radius="full",
        custom_attrs={"data-status": status},
        class_name="token-status",
    )


def _time(value: rx.Var, empty_key: str) -> rx.Component:
    return rx.cond(value != "", rx.text(value, size="1", font_family=MONO, white_space="nowrap"),
                   rx.text(t(empty_key), size="1", color_scheme="gray"))


def _row(token: rx.Var) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(token["name"], weight="medium", word_break="break-all")),
        rx.table.cell(_status_badge(token["status"])),
        rx.table.cell(_time(token["created"], "tokens.never"), **WIDE_CELL),
        rx.table.cell(rx.cond(token["status"] == "revoked", _time(token["revoked"], "tokens.never"),
                              _time(token["expires"], "tokens.never")), class_name="token-expires"),
        rx.table.cell(_time(token["last_used"], "tokens.never_used"), **WIDE_CELL),
        rx.table.cell(
            rx.cond(
                token["status"] == "active",
                rx.button(rx.icon("ban", size=14), rx.text(t("tokens.revoke"), display=wide_only()), size="1",
                          variant="soft", color_scheme="red", on_click=TokensState.ask_revoke(token["id"], token["name"]),
                          aria_label=t("tokens.revoke"), class_name="revoke-token"),
            ),
            text_align="right",
        ),
        align="center",
        custom_attrs={"data-token-id": token["id"], "data-token-name": token["name"]},
        class_name="token-row",
    )


def _table() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(
                section_title(t("tokens.list.title"), "key_square"),
                rx.badge(TokensState.active_count, " ", t("token.status.active"), variant="soft", radius="full",
                         color_scheme="green", id="tokens-active-count"),
                align="center",
                spacing="2",
            ),
            rx.cond(
                TokensState.rows.length() > 0,
                rx.table.root(
                    rx.table.header(rx.table.row(
                        rx.table.column_header_cell(t("tokens.col.name")),
                        rx.table.column_header_cell(t("tokens.col.status")),
                        rx.table.column_header_cell(t("tokens.col.created"), **WIDE_CELL),
                        rx.table.column_header_cell(t("tokens.col.expires")),
                        rx.table.column_header_cell(t("tokens.col.last_used"), **WIDE_CELL),
                        rx.table.column_header_cell(""),
                    )),
                    rx.table.body(rx.foreach(TokensState.rows, _row)),
                    variant="ghost",
                    size=rx.breakpoints(initial="1", sm="2"),
                    width="100%",
                    id="tokens-table",
                ),
                rx.center(
                    rx.vstack(
                        rx.icon("key_round", size=32, color=rx.color("gray", 8)),
                        rx.text(t("tokens.empty"), size="2", color_scheme="gray"),
                        align="center",
                        spacing="2",
                    ),
                    padding_y="var(--space-6)",
                    width="100%",
                    id="tokens-empty",
                ),
            ),
            spacing="3",
            width="100%",
        ),
        size=rx.breakpoints(initial="2", sm="3"),
        width="100%",
    )


def _secret_dialog() -> rx.Component:
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(rx.hstack(rx.icon("key_round", size=20), t("tokens.secret.title"), align="center",
                                      spacing="2")),
            rx.dialog.description(t("tokens.secret.for"), " ", rx.text(TokensState.secret_name, weight="bold",
                                                                       as_="span"), size="2"),
            rx.vstack(
                rx.callout.root(
                    rx.callout.icon(rx.icon("triangle_alert")),
                    rx.callout.text(t("tokens.secret.warning")),
                    color_scheme="amber",
                    size="1",
                    id="token-secret-warning",
                ),
                rx.hstack(
                    # Uncontrolled: the create handler's script writes the secret into it (it is not state).
                    rx.input(read_only=True, id="token-secret", font_family=MONO,
                             width="100%", aria_label=t("tokens.secret.title"),
                             on_focus=rx.call_script("document.getElementById('token-secret').select()")),
                    rx.button(rx.icon("copy", size=16), t("tokens.copy"), on_click=[rx.call_script(COPY_SECRET_JS), rx.toast.success(t("tokens.copied"))],
                              id="copy-token"),
                    width="100%",
                    spacing="2",
                ),
                rx.hstack(
                    rx.button(t("tokens.secret.done"), on_click=TokensState.close_secret, variant="soft",
                              id="token-secret-done"),
                    justify="end",
                    width="100%",
                ),
                spacing="4",
                margin_top="var(--space-4)",
                width="100%",
            ),
            max_width="560px",
            # Clicking outside does not close it: the secret cannot be shown again.
            on_pointer_down_outside=rx.prevent_default,
            on_interact_outside=rx.prevent_default,
        ),
        open=TokensState.secret_open,
        on_open_change=TokensState.set_secret_open,
    )


def _revoke_dialog() -> rx.Component:
    return confirm_dialog(
        open=TokensState.confirm_revoke.contains("id"),
        on_open_change=TokensState.set_revoke_open,
        title=t("tokens.revoke.title"),
        text=rx.text(t_format("tokens.revoke.text", name=TokensState.confirm_revoke["name"])),
        confirm=t("tokens.revoke"),
        on_confirm=TokensState.revoke,
        confirm_id="confirm-revoke",
        icon="ban",
    )


def tokens_page() -> rx.Component:
    """The personal API tokens page."""
    return shell(
        page_header(t("tokens.title"), t("tokens.subtitle")),
        rx.cond(
            TokensState.loaded,
            rx.vstack(_create_form(), error_callout(TokensState.error, id="tokens-error"), _usage(), _table(),
                      _secret_dialog(), _revoke_dialog(), spacing="5", width="100%"),
            rx.vstack(error_callout(TokensState.error), loading(), width="100%"),
        ),
        active="tokens",
    )
