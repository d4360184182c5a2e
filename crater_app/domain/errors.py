"""Domain errors. Each carries a machine ``code``, a human ``message`` and the offending ``field``.

The API maps them to ``{"error": {"code", "message", "field"}}`` with the status in ``http_status``.
"""

from __future__ import annotations


class CraterError(Exception):
    """Base class of every error Crater reports to a user.

    Args:
        message: plain sentence naming the field and the limit.
        field: dotted path of the offending input field, or ``None``.
    """

    code = "error"
    http_status = 400

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def to_dict(self) -> dict:
        """Return ``{"code", "message", "field"}``."""
        return {"code": self.code, "message": self.message, "field": self.field}


class InvalidInput(CraterError):
    """Input that breaks a rule (name, quantity, size, type). HTTP 422."""

    code = "invalid"
    http_status = 422


class Unauthenticated(CraterError):
    """No or bad credentials. HTTP 401."""

    code = "unauthenticated"
    http_status = 401


class Forbidden(CraterError):
    """The actor may not do this. HTTP 403."""

    code = "forbidden"
    http_status = 403


class NotFound(CraterError):
    """The object does not exist or is not visible to the actor. HTTP 404."""

    code = "not_found"
    http_status = 404


class Conflict(CraterError):
    """The object exists already or is in a state that forbids the action. HTTP 409."""

    code = "conflict"
    http_status = 409


class Unschedulable(CraterError):
    """The request can never fit the machine/cluster (numbers in the message). HTTP 422."""

    code = "unschedulable"
    http_status = 422


class Busy(CraterError):
    """Too many requests of a costly kind at once (e.g. password checks); retry shortly. HTTP 429."""

    code = "busy"
    http_status = 429


class PaymentRequired(CraterError):
    """Billing is on and the caller's points (free allowance and extra balance) are used up. HTTP 402."""

    code = "payment_required"
    http_status = 402
