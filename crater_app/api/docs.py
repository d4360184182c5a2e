"""OpenAPI descriptions of request bodies that the API reads itself (JSON or YAML, see ``api/body.py``)."""

from __future__ import annotations

import copy
from typing import Literal, Mapping

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
    username: str = Field(max_length=64, description="1..64 Unicode letters, digits, '.', '_', '-', '@'; unique "
                          "without case (NFKC case folding)")
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


def with_job_defaults(schema: dict, path: str, defaults: Mapping[str, str]) -> dict:
    """``schema`` (a generated OpenAPI document) with the deployment's job defaults shown on the job spec body of
    ``POST path``: ``resources`` gets ``default`` (the whole list when left out) and, per resource, its own
    ``default`` and a description (a job that names only one of them gets the default of the other). The
    operation is copied first: the generated document shares its body schemas with :data:`JOB_SPEC_BODY`."""
    operation = schema.get("paths", {}).get(path, {}).get("post")
    if not operation or not defaults:
        return schema
    operation = schema["paths"][path]["post"] = copy.deepcopy(operation)
    words = ", ".join(f"{name} {value}" for name, value in defaults.items())
    for content in operation.get("requestBody", {}).get("content", {}).values():
        resources = content.get("schema", {}).get("properties", {}).get("resources")
        if resources is None:
            continue
        resources["default"] = dict(defaults)
        resources["description"] = (
            "Kubernetes resource list: cpu, memory, accelerators such as nvidia.com/gpu (whole devices). "
            f"A resource left out gets the default ({words}); a job that names only one of them gets the other's.")
        resources["properties"] = {
            **resources.get("properties", {}),
            **{name: {"default": value, "description": f"default {value} when left out",
                      "anyOf": [{"type": "string"}, {"type": "number"}]} for name, value in defaults.items()},
        }
    return schema
LOGIN_BODY = request_body(LoginRequest)
USER_CREATE_BODY = request_body(UserCreate)


class ProjectCreate(BaseModel):
    """``POST /api/v1/projects`` body (platform admins)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(max_length=63, description="DNS-1123 label, unique; never renamed")
    display_name: str = Field(default="", max_length=128)
    description: str = Field(default="", max_length=1024)
    expires_at: str | None = Field(default=None, description="ISO 8601 time with offset, in the future; null: never")


class MemberRole(BaseModel):
    """``PUT /api/v1/projects/{name}/members/{username}`` body: the project role and, optionally, the member's
    share inside the project's capability (``role`` may be left out when only the share of a member changes)."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["admin", "member", "viewer"] | None = None
    share: dict[str, str | int] | None = Field(
        default=None, description="resource list, e.g. {\"nvidia.com/gpu\": 2}; {} removes the member's limit")


class QuotaBody(BaseModel):
    """``PUT /api/v1/projects/{name}/quota`` body (platform admins): resource lists as in a JobSpec; a key may
    name an accelerator model after a colon (``nvidia.com/gpu:NVIDIA-A100-SXM4-80GB``). A section left out or
    ``null`` is ``{}`` (capability ``{}``: no ceiling), as ``domain.quota.parse_quota`` reads it.
    ``guarantee <= deserved <= capability``."""

    model_config = ConfigDict(extra="forbid")
    guarantee: dict[str, str | int] | None = Field(default=None, description="null or left out: {}")
    deserved: dict[str, str | int] | None = Field(default=None, description="null or left out: {}")
    capability: dict[str, str | int] | None = Field(default=None, description="null or left out: {} (no ceiling)")


class TokenCreate(BaseModel):
    """``POST /api/v1/tokens`` body: a personal API token for the caller."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=64)
    expires_in_days: int = Field(default=90, ge=1, le=365)


PROJECT_CREATE_BODY = request_body(ProjectCreate)
MEMBER_ROLE_BODY = request_body(MemberRole)
QUOTA_BODY = request_body(QuotaBody)
TOKEN_CREATE_BODY = request_body(TokenCreate)
