"""Console sessions (signed-in browsers) as the API and the account page show them."""

from __future__ import annotations

from datetime import datetime

from crater_app.schemas.base import Public


class ConsoleSessionPublic(Public):
    """One signed-in browser of the caller: when it signed in, was last seen (updated at most once a minute) and
    ends (``expires_at``: the absolute end; ``idle_expires_at``: when it ends unless used before), its browser's
    user agent and IP address as seen at sign-in, and whether it is the session of this request (``current``).
    Times are UTC. Never the secret or its hash."""

    id: int
    created_at: datetime
    last_seen_at: datetime
    expires_at: datetime
    idle_expires_at: datetime
    user_agent: str
    ip: str
    current: bool = False


class ConsoleSessionStarted(Public):
    """``POST /api/v1/auth/session`` answer: the new session and the user it belongs to (the secret travels only in
    the ``Set-Cookie`` header)."""

    session: ConsoleSessionPublic
    username: str


class SessionsEnded(Public):
    """How many console sessions and login tokens an action ended (sign out everywhere, a password change)."""

    ended: int
