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
  when it succeeded (2xx/3xx), failed in an unknown state (5xx: the object may exist), or failed after it wrote
  something (the request called :func:`mark_written`: a job row committed before the backend refused the
  workload); an answer saying nothing changed (a 4xx refusal before any write: bad input, no permission, a
  conflict) releases the key, so that the same request may be retried with it once the obstacle is gone.
- A later request with the same key, method, path and body gets the stored answer (status, body, content type);
  with another method, path or body it is refused (422, naming the ``Idempotency-Key`` header); while the first
  one is still running, 409 (retry shortly).
- Stored answers are encrypted (AES-256-GCM, a key derived from the deployment secret, ``auth/keys.py``, bound to
  the caller, the key and the request): an answer may hold a secret - ``POST /tokens`` answers with the personal
  token, which Crater otherwise keeps only as a hash - and the database alone must never reveal it. The replay
  gives it again to the same caller within the window, which is what a retry after a lost answer needs.
- Records expire after :data:`WINDOW_S` (24 h, as Stripe keeps keys); an expired key starts afresh. A claim is a
  lease of :data:`CLAIM_LEASE_S` that the claiming worker renews while its request runs (:func:`renew`, every
  :data:`RENEW_EVERY_S`): another request takes the key over only when the lease lapsed - the worker died or was
  stopped - never because the first request is slow. Expired records are deleted on write, at most once per
  :data:`SWEEP_INTERVAL_S` per process.
"""

from __future__ import annotations

import base64
import hashlib
import os
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from crater_app.auth.keys import derive_key
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
#: how long a claim holds its key without being renewed, seconds: its worker renews it every
#: :data:`RENEW_EVERY_S` while the request runs, so only a claim whose worker is gone (or whose event loop was
#: blocked for a minute) lapses and may be taken over
CLAIM_LEASE_S = 60
#: how often the claiming worker renews its lease, seconds (four renewals per lease: one late renewal is harmless)
RENEW_EVERY_S = 15
#: how often one process deletes expired records, seconds
SWEEP_INTERVAL_S = 60
#: what a 409 tells the client to wait before retrying, seconds
RETRY_AFTER_S = 1
_TABLE = IdempotencyRecord.__table__
_MAX_CONTENT_TYPE_CHARS = 128
_MAX_PATH_CHARS = 255
_SWEPT_AT = ("idempotency", "swept-at")
_CIPHER = ("idempotency", "cipher")
#: the prefix of an encrypted stored answer (then base64url of the 12-byte nonce and the AES-GCM ciphertext)
SEALED_PREFIX = "aes256gcm:"
#: the request being answered under a claim: whether it wrote something (see :func:`mark_written`)
_WRITES: ContextVar["Writes | None"] = ContextVar("crater_idempotent_writes", default=None)


@dataclass(frozen=True)
class Claim:
    """``user_id`` holds ``key`` while its request (``request_hash``) runs (row ``record_id`` written at
    ``created_at``); finish or release it. The row is matched on both: SQLite may give a new row the id of a deleted
    one, and a claim that takes over a lapsed or expired one is written later."""

    record_id: int
    key: str
    created_at: datetime
    user_id: int = 0
    request_hash: str = ""


@dataclass
class Writes:
    """Whether the request answered under a claim wrote something a retry must not repeat (:func:`mark_written`)."""

    written: bool = False
    what: list[str] = field(default_factory=list)


def watch_writes() -> Writes:
    """Start recording :func:`mark_written` calls for the request that runs in this context (and the worker threads
    it hands work to, which run in a copy of it); returns the record."""
    writes = Writes()
    _WRITES.set(writes)
    return writes


def mark_written(what: str = "") -> None:
    """Say that the request being answered has committed a change (``what``, e.g. ``"job"``) that a retry must not
    repeat: if it then fails, even with a 4xx refusal, its answer is kept for the key instead of the key being
    released. A service calls it right after such a commit when it may still raise afterwards; outside an
    idempotent request it does nothing."""
    writes = _WRITES.get()
    if writes is not None:
        writes.written = True
        writes.what.append(what)


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
    """SHA-256 (hex, 64 characters) of the request a key was used for: method, ``path`` (with its query string, when
    it has one) and body bytes. The draft leaves the fingerprint to the server; a retry sends the same bytes."""
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
            return Claim(claimed, key, now, user_id, request_hash)
        with ctx.session() as s:
            row = s.execute(select(_TABLE).where(_TABLE.c.user_id == user_id, _TABLE.c.key == key)).first()
            if row is None:
                continue
            if row.expires_at <= now:  # an answer past the window, or a claim whose worker stopped renewing it
                s.execute(delete(_TABLE).where(_TABLE.c.id == row.id, _TABLE.c.expires_at <= now))
                continue
            if row.body_hash != request_hash:
                raise InvalidInput("idempotency.key_reused", HEADER, window=WINDOW_S)
            if row.status_code is None:
                raise Conflict("idempotency.in_progress", HEADER, retry_after=RETRY_AFTER_S)
            return StoredAnswer(row.status_code, row.content_type,
                                _unseal(ctx, row.response, _bound_to(user_id, key, request_hash)))
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
                expires_at=now + timedelta(seconds=CLAIM_LEASE_S),
            )).inserted_primary_key[0]
    except IntegrityError:  # the unique (user, key): another request has it
        return None


def finish(ctx: ServiceContext, claim: Claim, status_code: int, content_type: str, body: bytes,
           written: bool = False) -> bool:
    """Store the answer of the claimed request (encrypted, see the module), to be given again to the key's later
    uses until :data:`WINDOW_S` after the claim.

    The answer is stored when it succeeded (status below 400), failed in an unknown state (500 and above) or the
    request ``written`` something before it failed; a 4xx answer of a request that wrote nothing releases the key
    instead. Returns whether the answer was stored (``False`` also when the claim lapsed and was taken over).
    """
    if 400 <= status_code < 500 and not written:
        release(ctx, claim)
        return False
    sealed = _seal(ctx, body, _bound_to(claim.user_id, claim.key, claim.request_hash))
    with ctx.session() as s:
        stored = s.execute(update(_TABLE).where(*_of(claim)).values(
            status_code=status_code, content_type=content_type[:_MAX_CONTENT_TYPE_CHARS], response=sealed,
            expires_at=claim.created_at + timedelta(seconds=WINDOW_S)))
        return bool(stored.rowcount)


def renew(ctx: ServiceContext, claim: Claim, now: datetime | None = None) -> bool:
    """Extend the lease of ``claim`` to :data:`CLAIM_LEASE_S` from ``now`` (default the clock), never past the
    record's window; ``False`` when the claim is no longer held (finished, released, or lapsed and taken over)."""
    moment = now or utcnow()
    until = min(moment + timedelta(seconds=CLAIM_LEASE_S), claim.created_at + timedelta(seconds=WINDOW_S))
    with ctx.session() as s:
        return bool(s.execute(update(_TABLE).where(*_of(claim)).values(expires_at=until)).rowcount)


def release(ctx: ServiceContext, claim: Claim) -> None:
    """Give the key up: the request changed nothing, so its next use runs afresh."""
    with ctx.session() as s:
        s.execute(delete(_TABLE).where(*_of(claim)))


def _of(claim: Claim) -> tuple:
    """The conditions that match ``claim``'s row while its request runs (not one that took over)."""
    return (_TABLE.c.id == claim.record_id, _TABLE.c.created_at == claim.created_at, _TABLE.c.status_code.is_(None))


def _bound_to(user_id: int, key: str, request_hash: str) -> bytes:
    """The associated data a stored answer is sealed with: it opens only for its own caller, key and request."""
    return f"{user_id}\n{key}\n{request_hash}".encode("ascii", "replace")


def _cipher(ctx: ServiceContext) -> AESGCM:
    """AES-256-GCM with the key derived for stored answers (cached on the context)."""
    cipher = ctx.cache.get(_CIPHER)
    if cipher is None:
        settings = ctx.settings
        cipher = AESGCM(derive_key(settings.secret_key, settings.data_dir, "idempotency-stored-answers"))
        ctx.cache[_CIPHER] = cipher
    return cipher


def _seal(ctx: ServiceContext, body: bytes, bound_to: bytes) -> str:
    """``body`` encrypted for the ``response`` column: :data:`SEALED_PREFIX` + base64url(nonce + ciphertext)."""
    nonce = os.urandom(12)
    sealed = _cipher(ctx).encrypt(nonce, body, bound_to)
    return SEALED_PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")


def _unseal(ctx: ServiceContext, stored: str, bound_to: bytes) -> bytes:
    """The answer :func:`_seal` stored.

    Raises:
        Conflict: ``idempotency.answer_unreadable`` (409): it cannot be decrypted (the deployment secret changed
        since it was stored); the first request did run, so it is not run again.
    """
    try:
        if not stored.startswith(SEALED_PREFIX):
            raise ValueError("not sealed")
        raw = base64.urlsafe_b64decode(stored[len(SEALED_PREFIX):])
        return _cipher(ctx).decrypt(raw[:12], raw[12:], bound_to)
    except (ValueError, InvalidTag):
        raise Conflict("idempotency.answer_unreadable", HEADER) from None


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
