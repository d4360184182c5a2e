"""Background loops started with the web process: the leader loop (placement + reconcile) in a thread.

Every worker (``CRATER_WORKERS``) and replica starts it; the database lease lets exactly one of them act, and the
others only watch the lease and ring the leader's doorbell (``services.doorbell``) after a submission.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from contextlib import asynccontextmanager

from crater_app.bootstrap import get_context
from crater_app.services.leader import LeaderLoop


def _freeze_heap() -> None:
    gc.collect()
    gc.freeze()


@asynccontextmanager
async def leader_loop(app=None):  # noqa: ANN001 - Reflex passes the app by name
    """Lifespan task: run :class:`LeaderLoop` in a daemon thread for the life of the process."""
    ctx = await asyncio.to_thread(get_context)
    # Everything built so far (modules, the engine, the backend) lives as long as the process: move it out of
    # the collector's reach, so that a full collection scans only newer objects. Reflex freezes the heap once
    # before forking the worker; this also covers what the worker built since. (A full collection of an
    # unfrozen heap paused every thread for ~90 ms under a stream of submissions in bench/submit.py.)
    await asyncio.to_thread(_freeze_heap)
    loop = LeaderLoop(ctx)
    thread = threading.Thread(target=loop.run, name="crater-leader-loop", daemon=True)
    thread.start()
    try:
        yield
    finally:
        loop.stop()
        await asyncio.to_thread(thread.join, 5)


def standalone_api():
    """The HTTP API alone, without the Reflex console, with the same leader loop (for profiling and
    ``bench/ --mode standalone``; comparing it with ``reflex run --env prod`` shows what the Reflex layers
    in front of the API cost)::

        granian --interface asgi --factory --workers 1 crater_app.tasks:standalone_api
    """
    from crater_app.api.app import build_api

    app = build_api()
    app.router.lifespan_context = leader_loop
    return app
