"""/tokens: the signed-in user's personal API tokens (create, shown once; list; revoke)."""

from __future__ import annotations

import json

import reflex as rx

from crater_app.services import tokens
from crater_app.state import governance_views as gv
from crater_app.state.base import AppState
from crater_app.state.field_errors import FieldErrors
from crater_app.state.forms import FormError
from crater_app.state.governance_forms import token_form

TOKEN_FIELDS = (("name", ("name",)), ("expires_in_days", ("expires_in_days",)))


def fill_secret_script(secret: str) -> str:
    """JavaScript that writes ``secret`` into the dialog's ``#token-secret`` input once React has mounted it
    (it retries on each animation frame for about two seconds), then selects it."""
    return (
        "(function fill(n) { const el = document.getElementById('token-secret');"
        f" if (el) {{ el.value = {json.dumps(secret)}; el.dataset.filled = 'true'; el.select(); }}"
        " else if (n > 0) { requestAnimationFrame(() => fill(n - 1)); } })(120)"
    )


class TokensState(FieldErrors, AppState):
    """The token list, the create form, the one-time secret dialog and the revoke confirmation.

    The secret never enters this state (which Reflex keeps in Redis between events): the create handler sends it
    once to the browser in a script that writes it into the dialog's input (:func:`fill_secret_script`); closing
    the dialog unmounts the input, and the service keeps only its SHA-256.
    """

    FIELDS = TOKEN_FIELDS
    rows: list[dict[str, str]] = []
    error: str = ""
    loaded: bool = False
    creating: bool = False
    form_key: int = 0
    #: the dialog showing a new token's secret is open (for the token named ``secret_name``)
    secret_open: bool = False
    secret_name: str = ""
    #: the token waiting for the revoke confirmation: ``{"id", "name"}`` (empty when the dialog is closed)
    confirm_revoke: dict[str, str] = {}

    @rx.var
    def active_count(self) -> int:
        """Tokens that still work."""
        return sum(1 for r in self.rows if r.get("status") == "active")

    async def _list(self):
        found, stop = await self.guarded(tokens.list_tokens)
        if found is None:
            return stop
        self.rows = [gv.token_row(t) for t in found]
        return None

    @rx.event
    async def load(self):
        """on_load: list the caller's tokens."""
        self.error = ""
        self._clear_errors()
        self.secret_open, self.secret_name = False, ""
        self.confirm_revoke = {}
        self.creating = False
        stop = await self._list()
        self.loaded = True
        return stop

    @rx.event
    async def create(self, form: dict):
        """Create a token and open the dialog that shows its secret this once."""
        self._clear_errors()
        try:
            name, days = token_form(form)
        except FormError as exc:
            self._form_failed(exc)
            return
        self.creating = True
        yield
        created, stop = await self.submitted(tokens.create_token, name, days)
        self.creating = False
        if created is None:
            if stop is not None:
                yield stop
            return
        self.secret_open, self.secret_name = True, created.name
        self.form_key += 1
        yield rx.call_script(fill_secret_script(created.access_token))
        yield await self._list()

    @rx.event
    def set_secret_open(self, is_open: bool) -> None:
        """Closing the secret dialog (Escape) drops the secret from the page for good."""
        if not is_open:
            self.secret_open, self.secret_name = False, ""

    @rx.event
    def close_secret(self) -> None:
        """The "I have copied it" button."""
        self.secret_open, self.secret_name = False, ""

    @rx.event
    def ask_revoke(self, token_id: str, name: str) -> None:
        """Open the confirmation for revoking token ``token_id``."""
        self.error = ""
        self.confirm_revoke = {"id": token_id, "name": name}

    @rx.event
    def set_revoke_open(self, is_open: bool) -> None:
        """Closing the confirmation forgets the pending revocation."""
        if not is_open:
            self.confirm_revoke = {}

    @rx.event
    async def revoke(self):
        """Revoke the token waiting for confirmation."""
        pending, self.confirm_revoke = self.confirm_revoke, {}
        raw = pending.get("id", "")
        if not raw.isdigit() or len(raw) > 18:
            return None
        self.error = ""
        done, stop = await self.guarded(tokens.revoke_token, int(raw))
        if done is None:
            return stop
        stop = await self._list()
        return stop or rx.toast.success(self.msg("tokens.revoked", name=done.name))
