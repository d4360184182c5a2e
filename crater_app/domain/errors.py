"""Domain errors: a stable ``code``, its arguments and the offending ``field``; never a sentence.

A service raises ``InvalidInput("job.name_format", "tasks[1].name", max=63)``. The sentence lives in the
catalogues (``i18n/<area>/en.json`` and ``zh-CN.json``) under ``error.<code>``; the API renders it in the
request's language (``Accept-Language``) and the console in the user's, from the same arguments. The arguments are
JSON values in Crater's units (seconds, bytes, millicores, devices), so that a client can act on them without
parsing the message; the template decides how each is written (``{max:duration}``: :mod:`crater_app.i18n.format`).

The API's body is ``{"error": {"code", "kind", "message", "field", "args"}}`` with ``kind`` the class's category
(``invalid``, ``not_found``, ...) and the HTTP status in ``http_status``.
"""

from __future__ import annotations

from typing import ClassVar

from crater_app import i18n

#: catalogue keys of error messages are ``error.<code>``
KEY_PREFIX = "error."
#: the longest value (characters) a raise site echoes from the input (:func:`echo`); a number of more digits is
#: cut wherever it is raised (no count, size or limit of Crater's is that long)
MAX_ECHO_CHARS = 64
#: the longest text any argument keeps (a safety net behind :func:`echo`: no error body is ever megabytes)
MAX_ARG_CHARS = 256


def echo(value: object, limit: int = MAX_ECHO_CHARS) -> object:
    """``value`` as an error may echo it: text over ``limit`` characters, or an integer of more digits, is cut to
    ``limit`` characters ending with ``…`` (the integer then as text); anything else as it is. Refused values are
    echoed so that the caller recognises them, not to give them back in full (a 4,000-digit ``priority``)."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit - 1] + "…"
    if isinstance(value, int) and not isinstance(value, bool) and not -10**limit < value < 10**limit:
        try:
            text = str(value)
        except ValueError:  # over the interpreter's 4300 digits
            return "…"
        return text[:limit - 1] + "…"
    return value


def _clipped(value: object, depth: int = 0) -> object:
    """An argument with :func:`echo`'s rule applied to its integers and, at :data:`MAX_ARG_CHARS`, its text (also
    inside lists and dicts, three levels deep)."""
    if isinstance(value, str):
        return echo(value, MAX_ARG_CHARS)
    if isinstance(value, int):
        return echo(value)
    if depth < 3 and isinstance(value, list):
        return [_clipped(v, depth + 1) for v in value]
    if depth < 3 and isinstance(value, dict):
        return {k: _clipped(v, depth + 1) for k, v in value.items()}
    return value


class CraterError(Exception):
    """Base class of every error Crater reports to a user.

    Args:
        code: the message's stable code (dotted lower-case words, e.g. ``job.name_format``); its sentence is
            ``error.<code>`` in the catalogues.
        field: full path of the offending input field (``tasks[1].resources.nvidia.com/gpu``), or ``None``.
        **args: the values the sentence names (JSON-safe: numbers in Crater's units, strings, lists, dicts);
            an integer of more than :data:`MAX_ECHO_CHARS` digits or a text of more than :data:`MAX_ARG_CHARS`
            characters is cut (see :func:`echo`).
    """

    kind: ClassVar[str] = "error"
    http_status: ClassVar[int] = 400

    def __init__(self, code: str, field: str | None = None, **args: object) -> None:
        super().__init__(code)
        self.code = code
        self.field = field
        self.args_ = {name: _clipped(value) for name, value in args.items()}

    @property
    def params(self) -> dict[str, object]:
        """The message's arguments (``args`` of the API body)."""
        return self.args_

    def message_in(self, lang: object) -> str:
        """The sentence in ``lang`` (``en``, ``zh-CN``; anything else English)."""
        return i18n.render(lang, KEY_PREFIX + self.code, self.args_, fallback=self.code)

    @property
    def message(self) -> str:
        """The sentence in English (logs, the operation log's details)."""
        return self.message_in(i18n.DEFAULT_LANGUAGE)

    def __str__(self) -> str:
        return self.message

    def to_dict(self, lang: object = i18n.DEFAULT_LANGUAGE) -> dict:
        """``{"code", "kind", "message", "field", "args"}`` with the message in ``lang``."""
        return {"code": self.code, "kind": self.kind, "message": self.message_in(lang), "field": self.field,
                "args": self.args_}


class InvalidInput(CraterError):
    """Input that breaks a rule (name, quantity, size, type). HTTP 422."""

    kind = "invalid"
    http_status = 422


class Unauthenticated(CraterError):
    """No or bad credentials. HTTP 401."""

    kind = "unauthenticated"
    http_status = 401


class Forbidden(CraterError):
    """The actor may not do this. HTTP 403."""

    kind = "forbidden"
    http_status = 403


class NotFound(CraterError):
    """The object does not exist or is not visible to the actor. HTTP 404."""

    kind = "not_found"
    http_status = 404


class Conflict(CraterError):
    """The object exists already or is in a state that forbids the action. HTTP 409."""

    kind = "conflict"
    http_status = 409


class Unschedulable(CraterError):
    """The request can never fit the machine/cluster (numbers in the arguments). HTTP 422."""

    kind = "unschedulable"
    http_status = 422


class Busy(CraterError):
    """Too many requests of a costly kind at once (e.g. password checks); retry shortly. HTTP 429."""

    kind = "busy"
    http_status = 429


class PaymentRequired(CraterError):
    """Billing is on and the caller's points (free allowance and extra balance) are used up. HTTP 402."""

    kind = "payment_required"
    http_status = 402


class UnsupportedMediaType(CraterError):
    """The request body's ``Content-Type`` is not one Crater reads (the accepted types in the arguments). HTTP 415."""

    kind = "unsupported_media_type"
    http_status = 415


class TooLarge(CraterError):
    """The request body is over the size limit (bytes in the arguments). HTTP 413."""

    kind = "too_large"
    http_status = 413
