"""``/api/v1/nodes``: the cluster's nodes, their capacity and each device's holder."""

from __future__ import annotations

from fastapi import APIRouter, Response

from crater_app.api.deps import CtxDep, CurrentActor, run_read
from crater_app.api.error_docs import raises
from crater_app.api.responses import json_list
from crater_app.api.routes import API_PREFIX
from crater_app.schemas import NodePublic
from crater_app.services import nodes

router = APIRouter(prefix=API_PREFIX, tags=["nodes"])


@router.get("/nodes", response_model=list[NodePublic], responses=raises(403))
async def list_nodes(c: CtxDep, a: CurrentActor) -> Response:
    """Nodes with capacity and each device's holder."""
    return json_list(await run_read(nodes.list_nodes, c, a))
