"""Users, sign-in tokens and personal API tokens as the API shows them."""

from __future__ import annotations

from datetime import datetime

from crater_app.schemas.base import Public


class UserPublic(Public):
    """A user as others see it (no password hash)."""

    id: int
    username: str
    display_name: str
    email: str
    role: str
    status: str
    default_project: str | None
    created_at: datetime


class UserDetail(UserPublic):
    """A user as an admin manages them (``GET``/``PATCH /api/v1/users/{username}``): the public fields plus the
    per-user limits (``None``: the platform default applies), how the account signs in, and its OIDC issuer."""

    max_sessions: int | None
    max_accelerators_per_job: int | None
    max_runtime_s: int | None
    sign_in: str  # "password", "oidc" or "password+oidc"
    oidc_issuer: str | None


class TokenPublic(Public):
    """``POST /auth/token`` answer: the secret (shown once), its type and expiry (UTC)."""

    access_token: str
    token_type: str = "bearer"
    expires_at: datetime | None


class PersonalTokenPublic(Public):
    """A personal API token's metadata (never its secret or hash); times UTC; ``last_used_at`` is updated at
    most once a minute per token."""

    id: int
    name: str
    user: str
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked: bool
    revoked_at: datetime | None


class PersonalTokenCreated(PersonalTokenPublic):
    """``POST /api/v1/tokens`` answer: the metadata plus ``access_token``, the secret, shown this once only."""

    access_token: str
    token_type: str = "bearer"
