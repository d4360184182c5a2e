"""Background loops started with the web process: the leader loop (placement + reconcile) in a thread.

Several workers/replicas may each start it; the database lease lets exactly one of them act.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import asynccontextmanager

from crater_app.bootstrap import get_context
from crater_app.services.reconcile import LeaderLoop


@asynccontextmanager
async def leader_loop(app=None):  # noqa: ANN001 - Reflex passes the app by name
    """Lifespan task: run :class:`LeaderLoop` in a daemon thread for the life of the process."""
    ctx = await asyncio.to_thread(get_context)
    loop = LeaderLoop(ctx)
    thread = threading.Thread(target=loop.run, name="crater-leader-loop", daemon=True)
    thread.start()
    try:
        yield
    finally:
        loop.stop()
        await asyncio.to_thread(thread.join, 5)
