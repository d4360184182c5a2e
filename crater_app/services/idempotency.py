"""Idempotent requests: the first answer to a ``POST`` sent with an ``Idempotency-Key`` is kept for 24 hours and
given again for the same key and request, so that a client may retry after a timeout without creating a second
object.

Semantics are those of the IETF draft ``draft-ietf-httpapi-idempotency-key-header`` and of Stripe's API, which
it describes:

- A key is 1..255 printable ASCII characters (``0x20``-``0x7E``), chosen by the client (a UUID is typical); the
  draft writes it as a Structured Field string (``"…"``), which is read the same as the bare value. Keys are per
  caller: two users may use the same key.
- The first request with a key claims it (a row in ``idempotency_records``, unique on user and key, so that two
  concurrent first requests cannot both run, on SQLite and on PostgreSQL alike) and runs. Its answer is stored
  when it succeeded (2xx/3xx) or failed in an unknown state (5xx: the object may exist); an answer saying nothing
  changed (a 4xx refusal: bad input, no permission, a conflict) releases the key, so that the corrected request
  may be retried with it.
- A later request with the same key, method, path and body gets the stored answer (status, body, content type);
  with another method, path or body it is refused (422, naming the ``Idempotency-Key`` header); while the first
  one is still running, 409 (retry shortly).
- Records expire after :data:`WINDOW_S` (24 h, as Stripe keeps keys); an expired key starts afresh. A claim whose
  request never finished (its process died) is taken over after :data:`ABANDONED_AFTER_S`. Expired records are
  deleted on write, at most once per :data:`SWEEP_INTERVAL_S` per process.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from crater_app.db.models import IdempotencyRecord
from crater_app.domain.errors import Conflict, InvalidInput
from crater_app.domain.times import utcnow
from crater_app.services.context import ServiceContext

#: the request header (IETF draft-ietf-httpapi-idempotency-key-header)
HEADER = "Idempotency-Key"
#: the response header on a replayed answer (Stripe's name)
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_CHARS = 255
#: how long a key's first answer is kept and replayed, seconds (Stripe: 24 hours)
WINDOW_S = 24 * 3600
#: a claim older than this whose request has not finished is abandoned (its process died), seconds; a request
#: that runs longer than this (far longer than any create) could run twice
ABANDONED_AFTER_S = 60
#: how often one process deletes expired records, seconds
SWEEP_INTERVAL_S = 60
#: what a 409 tells the client to wait before retrying, seconds
RETRY_AFTER_S = 1
_TABLE = IdempotencyRecord.__table__
_MAX_CONTENT_TYPE_CHARS = 128
_MAX_PATH_CHARS = 255
_SWEPT_AT = ("idempotency", "swept-at")


@dataclass(frozen=True)
class Claim:
    """The caller holds ``key`` while its request runs (row ``record_id`` written at ``created_at``); finish or
    release it. The row is matched on both: SQLite may give a new row the id of a deleted one, and a claim that
    takes over an abandoned or expired one is written at least :data:`ABANDONED_AFTER_S` later."""

    record_id: int
    key: str
    created_at: datetime


@dataclass(frozen=True)
class StoredAnswer:
    """The first answer to a key: ``status_code``, ``content_type`` and ``body`` (bytes), to be given again."""

    status_code: int
    content_type: str
    body: bytes


def parse_key(raw: str) -> str:
    """The key in an ``Idempotency-Key`` header value: the bare value, or a Structured Field string (``"abc"``,
    RFC 8941 §3.3.3, with ``\\"`` and ``\\\\`` escapes) as the draft writes it.

    Raises:
        InvalidInput: ``idempotency.key_format`` (field ``Idempotency-Key``, limit ``max``): empty, longer than 255
            characters, or a character outside printable ASCII.
    """
    value = raw.strip(" \t")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        inner, unescaped, escape = value[1:-1], [], False
        for ch in inner:
            if escape:
                if ch not in '"\\':
                    raise InvalidInput("idempotency.key_format", HEADER, max=MAX_KEY_CHARS)
                unescaped.append(ch)
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                raise InvalidInput("idempotency.key_format", HEADER, max=MAX_KEY_CHARS)
            else:
                unescaped.append(ch)
        if escape:
            raise InvalidInput("idempotency.key_format", HEADER, max=MAX_KEY_CHARS)
        value = "".join(unescaped)
    if not 1 <= len(value) <= MAX_KEY_CHARS or not all(" " <= ch <= "~" for ch in value):
        raise InvalidInput("idempotency.key_format", HEADER, max=MAX_KEY_CHARS)
    return value


def fingerprint(method: str, path: str, body: bytes) -> str:
    """SHA-256 (hex, 64 characters) of the request a key was used for: method, path and body bytes. The draft
    leaves the fingerprint to the server; a retry sends the same bytes."""
    digest = hashlib.sha256()
    for part in (method.upper().encode("ascii", "replace"), path.encode("utf-8", "surrogatepass"), body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def begin(ctx: ServiceContext, user_id: int, key: str, method: str, path: str, request_hash: str
          ) -> Claim | StoredAnswer:
    """Claim ``key`` for the request ``request_hash`` (see :func:`fingerprint`) of ``user_id``, or give the answer
    its first use left.

    Returns:
        :class:`Claim` when this request is the key's first (run it, then :func:`finish` or :func:`release`), or
        the :class:`StoredAnswer` of the first request.

    Raises:
        InvalidInput: ``idempotency.key_reused`` (422, field ``Idempotency-Key``): the key was used for another
            method, path or body within the window.
        Conflict: ``idempotency.in_progress`` (409, ``retry_after`` seconds): the first request with the key is
            still running.
    """
    for _ in range(4):  # a record found and gone (released, expired) between the insert and the read: again
        now = utcnow()
        claimed = _insert(ctx, user_id, key, method, path, request_hash, now)
        if claimed is not None:
            return Claim(claimed, key, now)
        with ctx.session() as s:
            row = s.execute(select(_TABLE).where(_TABLE.c.user_id == user_id, _TABLE.c.key == key)).first()
            if row is None:
                continue
            abandoned = row.status_code is None and row.created_at <= now - timedelta(seconds=ABANDONED_AFTER_S)
            if row.expires_at <= now or abandoned:
                s.execute(delete(_TABLE).where(_TABLE.c.id == row.id))
                continue
            if row.body_hash != request_hash:
                raise InvalidInput("idempotency.key_reused", HEADER, window=WINDOW_S)
            if row.status_code is None:
                raise Conflict("idempotency.in_progress", HEADER, retry_after=RETRY_AFTER_S)
            return StoredAnswer(row.status_code, row.content_type, row.response.encode("utf-8"))
    raise Conflict("idempotency.in_progress", HEADER, retry_after=RETRY_AFTER_S)


def _insert(ctx: ServiceContext, user_id: int, key: str, method: str, path: str, request_hash: str,
            now: datetime) -> int | None:
    """Write the claim (and sweep expired records when due); its id, or ``None`` when the key has a record."""
    try:
        with ctx.session() as s:
            _sweep_if_due(ctx, s, now)
            return s.execute(insert(_TABLE).values(
                user_id=user_id, key=key, method=method.upper()[:8], path=path[:_MAX_PATH_CHARS],
                body_hash=request_hash, status_code=None, content_type="", response="", created_at=now,
                expires_at=now + timedelta(seconds=WINDOW_S),
            )).inserted_primary_key[0]
    except IntegrityError:  # the unique (user, key): another request has it
        return None


def finish(ctx: ServiceContext, claim: Claim, status_code: int, content_type: str, body: bytes) -> bool:
    """Store the answer of the claimed request, to be given again to the key's later uses.

    The answer is stored when it succeeded (status below 400) or failed in an unknown state (500 and above); a 4xx
    answer (nothing changed) releases the key instead, as does a body that is not UTF-8 text (Crater's answers
    are JSON). Returns whether the answer was stored (``False`` also when the claim was taken over meanwhile).
    """
    if 400 <= status_code < 500:
        release(ctx, claim)
        return False
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        release(ctx, claim)
        return False
    with ctx.session() as s:
        stored = s.execute(update(_TABLE).where(*_of(claim)).values(
            status_code=status_code, content_type=content_type[:_MAX_CONTENT_TYPE_CHARS], response=text))
        return bool(stored.rowcount)


def release(ctx: ServiceContext, claim: Claim) -> None:
    """Give the key up: the request changed nothing, so its next use runs afresh."""
    with ctx.session() as s:
        s.execute(delete(_TABLE).where(*_of(claim)))


def _of(claim: Claim) -> tuple:
    """The conditions that match ``claim``'s row while its request runs (not one that took over)."""
    return (_TABLE.c.id == claim.record_id, _TABLE.c.created_at == claim.created_at, _TABLE.c.status_code.is_(None))


def sweep(ctx: ServiceContext, now: datetime | None = None) -> int:
    """Delete the records that expired (``expires_at`` at or before ``now``, default the clock). Returns how many."""
    with ctx.session() as s:
        return s.execute(delete(_TABLE).where(_TABLE.c.expires_at <= (now or utcnow()))).rowcount


def _sweep_if_due(ctx: ServiceContext, s, now: datetime) -> None:
    """:func:`sweep` inside the write transaction ``s``, when this context last swept over
    :data:`SWEEP_INTERVAL_S` ago."""
    last = ctx.cache.get(_SWEPT_AT)
    if last is not None and (now - last).total_seconds() < SWEEP_INTERVAL_S:
        return
    ctx.cache[_SWEPT_AT] = now
    s.execute(delete(_TABLE).where(_TABLE.c.expires_at <= now))
