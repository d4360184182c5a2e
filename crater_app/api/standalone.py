"""The HTTP API alone, without the Reflex console, for profiling and benchmarks (``bench/ --mode standalone``):

    granian --interface asgi --workers 1 crater_app.api.standalone:app

It runs the same leader loop as the real app (placement + reconcile in a thread). Comparing it with
``reflex run --env prod`` tells how much of a request's time goes to the Reflex layers in front of the API.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from contextlib import asynccontextmanager

from fastapi import FastAPI

from crater_app.api.app import build_api
from crater_app.bootstrap import get_context
from crater_app.services.reconcile import LeaderLoop


@asynccontextmanager
async def _lifespan(_app: FastAPI):
    ctx = await asyncio.to_thread(get_context)
    gc.collect()
    gc.freeze()  # as crater_app.tasks does for the real app
    loop = LeaderLoop(ctx)
    thread = threading.Thread(target=loop.run, name="crater-leader-loop", daemon=True)
    thread.start()
    try:
        yield
    finally:
        loop.stop()
        await asyncio.to_thread(thread.join, 5)


app = build_api()
app.router.lifespan_context = _lifespan
