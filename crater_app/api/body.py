"""Request bodies: JSON or YAML (``application/yaml``), at most 2 MiB, decoded to plain objects."""

from __future__ import annotations

import json

import yaml
from fastapi import Request

from crater_app.domain.errors import CraterError, InvalidInput

MAX_BODY_BYTES = 2 * 1024 * 1024


class BodyTooLarge(CraterError):
    """The request body is over :data:`MAX_BODY_BYTES`. HTTP 413."""

    code = "too_large"
    http_status = 413


async def decode_body(request: Request) -> object:
    """Read and decode the body by ``Content-Type`` (YAML for ``*yaml*``, JSON otherwise).

    Raises:
        BodyTooLarge: over 2 MiB. InvalidInput: empty or undecodable body.
    """
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise BodyTooLarge(f"request body is {declared} bytes; the limit is {MAX_BODY_BYTES} bytes")
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY_BYTES:
            raise BodyTooLarge(f"request body is over the limit of {MAX_BODY_BYTES} bytes")
    if not data.strip():
        raise InvalidInput("request body is empty; send a JSON (or YAML) object")
    if "yaml" in request.headers.get("content-type", ""):
        try:
            return yaml.safe_load(data)
        except yaml.YAMLError as exc:
            raise InvalidInput(f"body is not valid YAML: {str(exc)[:200]}") from None
        except RecursionError:
            raise InvalidInput("body is not valid YAML: nested too deeply") from None
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"body is not valid JSON: {str(exc)[:200]}") from None
    except RecursionError:  # e.g. a million '[' fits in 2 MiB
        raise InvalidInput("body is not valid JSON: nested too deeply") from None
