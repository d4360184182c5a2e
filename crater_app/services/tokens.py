"""Personal API tokens (``ApiToken.kind == "personal"``) for the CLI and scripts: created by a user for
themselves, shown once, stored as a SHA-256 digest, with an expiry of 1..365 days, listed with their last use,
revocable by their owner or a platform admin. A revoked token stops working at the caller's next request in
this process (its cached identity is dropped), and within 5 s in other processes."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func
from sqlmodel import select

from crater_app.auth.tokens import new_token
from crater_app.db.models import ApiToken, User
from crater_app.schemas import PersonalTokenCreated, PersonalTokenPublic
from crater_app.db.types import utcnow
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, NotFound
from crater_app.domain.naming import check_bidi, is_text
from crater_app.domain.policy import Actor, can_create_token, can_revoke_token
from crater_app.services import identity, oplog
from crater_app.services.context import ServiceContext

PERSONAL = "personal"
MAX_NAME_CHARS = 64
MIN_EXPIRY_DAYS, MAX_EXPIRY_DAYS = 1, 365
DEFAULT_EXPIRY_DAYS = 90
MAX_ACTIVE_TOKENS = 20  # unrevoked, unexpired personal tokens per user


def _public(row: ApiToken, username: str) -> PersonalTokenPublic:
    return PersonalTokenPublic(
        id=row.id, name=row.name, user=username, created_at=row.created_at, expires_at=row.expires_at,
        last_used_at=row.last_used_at, revoked=row.revoked_at is not None, revoked_at=row.revoked_at,
    )


def create_token(ctx: ServiceContext, actor: Actor, name: object,
                 expires_in_days: object = DEFAULT_EXPIRY_DAYS) -> PersonalTokenCreated:
    """Create a personal token for the caller.

    Args:
        name: 1..64 characters, unique among the caller's active tokens.
        expires_in_days: whole days, 1..365 (default 90).

    Returns:
        The metadata and ``access_token`` (the secret: shown this once, only its SHA-256 is stored).

    Raises:
        Forbidden: ``token.forbidden``. InvalidInput: ``token.name`` (empty, too long, not text),
        ``name.text_bidi`` (a bidirectional override or isolate, see ``domain.naming.check_bidi``) or
        ``token.expiry`` (``expires_in_days`` not an integer in 1..365). Conflict: ``token.name_taken`` (an active
        token has that name) or ``token.limit`` (the caller has 20 active personal tokens).
    """
    if not can_create_token(actor):
        raise Forbidden("token.forbidden")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS or not is_text(name):
        raise InvalidInput("token.name", "name", max=MAX_NAME_CHARS)
    check_bidi(name, "name")
    if isinstance(expires_in_days, bool) or not isinstance(expires_in_days, int) or not (
        MIN_EXPIRY_DAYS <= expires_in_days <= MAX_EXPIRY_DAYS
    ):
        raise InvalidInput("token.expiry", "expires_in_days", min=MIN_EXPIRY_DAYS, max=MAX_EXPIRY_DAYS)
    name = name.strip()
    now = utcnow()
    secret, digest = new_token()
    with ctx.session() as s:
        # The owner's row is locked (PostgreSQL; SQLite writes one at a time) so the limit holds under concurrency.
        s.exec(select(User.id).where(User.id == actor.user_id).with_for_update()).first()
        active = [t.name for t in s.exec(select(ApiToken).where(
            ApiToken.user_id == actor.user_id, ApiToken.kind == PERSONAL, ApiToken.revoked_at.is_(None),  # type: ignore[union-attr]
            (ApiToken.expires_at.is_(None)) | (ApiToken.expires_at > now),  # type: ignore[union-attr,operator]
        ))]
        if name in active:
            raise Conflict("token.name_taken", "name", name=name)
        if len(active) >= MAX_ACTIVE_TOKENS:
            raise Conflict("token.limit", "name", active=len(active), max=MAX_ACTIVE_TOKENS)
        row = ApiToken(user_id=actor.user_id, token_hash=digest, kind=PERSONAL, name=name, created_at=now,
                       expires_at=now + timedelta(days=expires_in_days))
        s.add(row)
        s.flush()
        oplog.record(s, actor, "token:create", f"{actor.username}/{row.id}", code="token.created",
                     args={"name": name, "expires_in_days": expires_in_days})
        meta = _public(row, actor.username)
    return PersonalTokenCreated(**meta.model_dump(), access_token=secret)


def list_tokens(ctx: ServiceContext, actor: Actor) -> list[PersonalTokenPublic]:
    """The caller's personal tokens (revoked and expired ones too), newest first; never secrets or hashes."""
    with ctx.session(read_only=True) as s:
        rows = s.exec(select(ApiToken).where(ApiToken.user_id == actor.user_id, ApiToken.kind == PERSONAL)
                      .order_by(ApiToken.id.desc())).all()  # type: ignore[union-attr]
        return [_public(r, actor.username) for r in rows]


def revoke_token(ctx: ServiceContext, actor: Actor, token_id: int) -> PersonalTokenPublic:
    """Revoke personal token ``token_id`` (its owner, or a platform admin); revoking twice changes nothing.

    Raises:
        NotFound: ``token.not_found``: no personal token with that id, or the caller is neither its owner nor a
        platform admin (login tokens are not addressable here).
    """
    with ctx.session() as s:
        row = s.get(ApiToken, token_id) if 0 < token_id < 2**63 else None
        if row is None or row.kind != PERSONAL or not can_revoke_token(actor, row.user_id):
            raise NotFound("token.not_found", "id", id=token_id)
        owner = s.get(User, row.user_id)
        if row.revoked_at is None:
            row.revoked_at = utcnow()
            s.add(row)
            oplog.record(s, actor, "token:revoke", f"{owner.username}/{row.id}", code="token.revoked",
                         args={"name": row.name})
        result = _public(row, owner.username)
        owner_id = row.user_id
    identity.forget_user(ctx, owner_id)
    return result


def count_active(ctx: ServiceContext, user_id: int) -> int:
    """Active (unrevoked, unexpired) personal tokens of ``user_id``."""
    now = utcnow()
    with ctx.session(read_only=True) as s:
        return s.exec(select(func.count()).select_from(ApiToken).where(
            ApiToken.user_id == user_id, ApiToken.kind == PERSONAL, ApiToken.revoked_at.is_(None),  # type: ignore[union-attr]
            (ApiToken.expires_at.is_(None)) | (ApiToken.expires_at > now),  # type: ignore[union-attr,operator]
        )).one()
