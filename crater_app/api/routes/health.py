"""``/healthz`` (liveness and readiness) and ``/metrics`` (Prometheus), outside ``/api/v1`` and without a token."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse
from sqlalchemy import text

from crater_app.api import metrics
from crater_app.api.deps import CtxDep, run_read
from crater_app.services import metrics as platform_metrics

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(c: CtxDep) -> dict:
    """Liveness and readiness: the database answers and the backend lists its nodes."""
    with c.engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    return {"status": "ok", "backend": c.backend.name, "nodes": len(c.backend.inventory())}


@router.get("/metrics", response_class=PlainTextResponse)
async def prometheus_metrics(c: CtxDep) -> Response:
    """Platform health in the Prometheus text format (aggregates only; no token needed)."""
    body, content_type = metrics.render(await run_read(platform_metrics.platform_figures, c))
    return Response(body, media_type=content_type)
