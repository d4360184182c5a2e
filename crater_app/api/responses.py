"""JSON answers of the routes, serialised by pydantic-core."""

from __future__ import annotations

from typing import Iterable

from fastapi import Response
from pydantic import BaseModel

JSON = "application/json"


def json_response(model: BaseModel, status_code: int = 200, by_alias: bool = False) -> Response:
    """``model`` as a JSON response, serialised by pydantic-core in one step: the same document as
    ``JSONResponse(model.model_dump(mode="json"))`` without building the intermediate dicts (hot paths: job pages,
    submit). ``by_alias``: field aliases as the keys (the billing shapes)."""
    return Response(model.model_dump_json(by_alias=by_alias), status_code=status_code, media_type=JSON)


def json_list(models: Iterable[BaseModel], by_alias: bool = False) -> Response:
    """A JSON array of ``models`` (200)."""
    body = "[" + ",".join(m.model_dump_json(by_alias=by_alias) for m in models) + "]"
    return Response(body, media_type=JSON)
