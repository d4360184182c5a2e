"""The per-process cache of resolved identities, one per :class:`~crater_app.services.context.ServiceContext`.

Two maps, both short-lived so that a change made in another process applies within :data:`TTL_S` seconds:

- bearer token digest -> the :class:`Actor` (a revoked or expired token, or a disabled account, stops working
  within 5 s everywhere, at once in the process that made the change);
- user id -> the :class:`Actor` (roles and memberships) for console sessions, whose session row itself is read
  on every request (so signing out, everywhere or elsewhere, takes effect at the next request in every process).

It also remembers when each token's and session's "last used" time was last written, so that it is written at
most once a minute per process.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from crater_app.domain.policy import Actor

#: seconds a resolved identity is reused without reading the database
TTL_S = 5.0
#: seconds between two writes of a token's ``last_used_at`` or a session's ``last_seen_at`` by one process
LAST_USED_EVERY_S = 60.0


@dataclass
class IdentityCache:
    """Thread-safe; times from ``time.monotonic`` (and the token's own expiry, epoch seconds)."""

    _tokens: dict[str, tuple[float, Actor, float | None]] = field(default_factory=dict)
    _users: dict[int, tuple[float, Actor]] = field(default_factory=dict)
    _written: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def token(self, digest: str) -> Actor | None:
        """The actor of the bearer token with SHA-256 ``digest`` when resolved less than 5 s ago and not expired."""
        with self._lock:
            hit = self._tokens.get(digest)
        if hit is not None and time.monotonic() - hit[0] < TTL_S and (hit[2] is None or hit[2] > time.time()):
            return hit[1]
        return None

    def put_token(self, digest: str, actor: Actor, expires_at: float | None) -> None:
        """Remember ``actor`` for the token ``digest`` (``expires_at``: the token's expiry, epoch seconds)."""
        with self._lock:
            self._tokens[digest] = (time.monotonic(), actor, expires_at)

    def forget_token(self, digest: str) -> None:
        """Drop the token ``digest`` (its revocation applies at once in this process)."""
        with self._lock:
            self._tokens.pop(digest, None)

    def user(self, user_id: int) -> Actor | None:
        """The actor of ``user_id`` when built less than 5 s ago (console sessions)."""
        with self._lock:
            hit = self._users.get(user_id)
        return hit[1] if hit is not None and time.monotonic() - hit[0] < TTL_S else None

    def put_user(self, actor: Actor) -> None:
        """Remember the actor built for ``actor.user_id``."""
        with self._lock:
            self._users[actor.user_id] = (time.monotonic(), actor)

    def forget_user(self, user_id: int) -> None:
        """Drop everything cached about ``user_id`` (a change of their roles, memberships, status or tokens)."""
        with self._lock:
            self._users.pop(user_id, None)
            for digest in [d for d, (_, cached, _) in self._tokens.items() if cached.user_id == user_id]:
                del self._tokens[digest]

    def clear(self) -> None:
        """Drop every cached identity."""
        with self._lock:
            self._tokens.clear()
            self._users.clear()
            self._written.clear()

    def due(self, key: str) -> bool:
        """Whether the "last used" time of ``key`` (a token digest or session hash) is to be written now: true at
        most once a minute per key (and this process); the caller writes it."""
        now = time.monotonic()
        with self._lock:
            if now - self._written.get(key, -1e9) < LAST_USED_EVERY_S:
                return False
            self._written[key] = now
            return True
