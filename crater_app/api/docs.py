"""OpenAPI descriptions of request bodies that the API reads itself (JSON or YAML, see ``api/body.py``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from crater_app.domain.jobs import JobSpec


class LoginRequest(BaseModel):
    """``POST /api/v1/auth/token`` body."""

    model_config = ConfigDict(extra="forbid")
    username: str = Field(max_length=1024)
    password: str = Field(max_length=1024)


class UserCreate(BaseModel):
    """``POST /api/v1/users`` body (platform admins)."""

    model_config = ConfigDict(extra="forbid")
    username: str = Field(max_length=63, description="DNS-1123 label")
    password: str = Field(min_length=8, max_length=1024)
    role: Literal["admin", "user", "guest"] = "user"
    display_name: str = Field(default="", max_length=128)
    email: str = Field(default="", max_length=254)


def request_body(model: type[BaseModel], yaml: bool = False) -> dict:
    """``openapi_extra`` documenting ``model`` as the required body (``application/json``, and
    ``application/yaml`` when ``yaml``)."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    schema.pop("$defs", None)
    content = {"application/json": {"schema": schema}}
    if yaml:
        content["application/yaml"] = {"schema": schema}
    return {"requestBody": {"required": True, "content": content}}


JOB_SPEC_BODY = request_body(JobSpec, yaml=True)
LOGIN_BODY = request_body(LoginRequest)
USER_CREATE_BODY = request_body(UserCreate)
