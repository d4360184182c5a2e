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
    import os, anyio.to_thread, sys
    if os.environ.get("XTHREADS"):
        anyio.to_thread.current_default_thread_limiter().total_tokens = int(os.environ["XTHREADS"])
    if os.environ.get("XBATCHLOG"):
        import time as _t
        from crater_app.services import jobs as _jobs
        orig = _jobs._write_submissions
        logf = open(os.environ["XBATCHLOG"], "a")
        def logged(c, batch):
            t0 = _t.perf_counter(); r = orig(c, batch); logf.write(f"main {len(batch)} {(_t.perf_counter()-t0)*1000:.2f} {t0:.4f}\n"); return r
        _jobs._write_submissions = logged
        be = ctx.backend; origb = be._insert_workloads
        def loggedb(rows):
            t0 = _t.perf_counter(); r = origb(rows); logf.write(f"back {len(rows)} {(_t.perf_counter()-t0)*1000:.2f} {t0:.4f}\n"); return r
        be._insert_workloads = loggedb
        import gc as _gc
        _gcs = {}
        def _cb(phase, info):
            if phase == "start": _gcs["t"] = _t.perf_counter()
            else:
                d = (_t.perf_counter() - _gcs.get("t", _t.perf_counter())) * 1000
                if d > 2: logf.write(f"gc{info['generation']} 1 {d:.2f} {_gcs['t']:.4f}\n")
        _gc.callbacks.append(_cb)
        loop_obj = {}
        from crater_app.services import reconcile as _rec
        _ostep = _rec.LeaderLoop.step
        def _step(self):
            t0 = _t.perf_counter(); r = _ostep(self); logf.write(f"step 1 {(_t.perf_counter()-t0)*1000:.2f} {t0:.4f}\n"); return r
        _rec.LeaderLoop.step = _step
    if os.environ.get("XSWITCH"):
        sys.setswitchinterval(float(os.environ["XSWITCH"]))
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
