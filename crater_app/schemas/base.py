"""The base of the API's public shapes: frozen pydantic models, safe to pickle into console state."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Public(BaseModel):
    """A frozen pydantic model (services return these; routes and console state read them)."""

    model_config = ConfigDict(frozen=True)
