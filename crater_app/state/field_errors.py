"""Errors beside the form fields they name, cleared when that field changes (a Reflex state mixin).

A form state mixes in :class:`FieldErrors` (``class NewJobState(FieldErrors, AppState)``) and names its inputs in
``FIELDS``: for each input (the ``name`` of its ``<input>``), the service field paths whose errors it shows. An
error (a service's :class:`~crater_app.domain.errors.CraterError` or a form's own
:class:`~crater_app.state.forms.FormError`) goes to ``field_errors[<input>]`` when its field maps to an input,
else to ``form_error`` (one message below the form). Each input's change handler calls ``clear_field_error`` with
its name (``crater_app.ui.forms.clears``), so the message goes away as soon as the user edits that field.
"""

from __future__ import annotations

from typing import ClassVar

import reflex as rx

#: (input name, service field paths) in order: the first input one of whose paths matches wins
FieldMap = tuple[tuple[str, tuple[str, ...]], ...]


def input_for(path: str | None, fields: FieldMap) -> str | None:
    """The form input that shows an error on the service's field ``path``: an input whose path is ``path`` itself
    or a prefix of it at a ``.``/``[`` boundary (``resources`` matches ``resources.nvidia.com/gpu`` but not
    ``resourcesx``); ``None`` when no input matches (the error is the form's)."""
    if not path:
        return None
    for name, prefixes in fields:
        for prefix in prefixes:
            if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
                return name
    return None


class FieldErrors(rx.State, mixin=True):
    """``field_errors`` (input name -> message, in the console's language) and ``form_error`` (a message that
    names no input of the form), for the inputs of :attr:`FIELDS`."""

    field_errors: dict[str, str] = {}
    form_error: str = ""
    #: the form's inputs and the service field paths each shows (see :func:`input_for`)
    FIELDS: ClassVar[FieldMap] = ()

    def _show_error(self, message: str, path: str | None, fields: FieldMap | None = None) -> None:
        """Show ``message`` beside the input for the service field ``path`` (among ``fields``, default
        :attr:`FIELDS`: a state with two forms names the second one's inputs apart), or as the form's message; any
        earlier error goes (one error at a time, as the service reports one)."""
        name = input_for(path, self.FIELDS if fields is None else fields)
        if name is None:
            self.field_errors, self.form_error = {}, message
        else:
            self.field_errors, self.form_error = {name: message}, ""

    def _clear_errors(self) -> None:
        """No error on the form."""
        if self.field_errors:
            self.field_errors = {}
        self.form_error = ""

    def _forget_field_error(self, name: str) -> None:
        """Drop the error of input ``name`` (the user changed that field)."""
        if name in self.field_errors:
            self.field_errors = {k: v for k, v in self.field_errors.items() if k != name}

    @rx.event
    def clear_field_error(self, name: str) -> None:
        """The input ``name`` changed: its error goes away (the others stay)."""
        self._forget_field_error(name)
