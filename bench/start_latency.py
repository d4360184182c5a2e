"""Benchmark: submission to phase ``Running`` on an idle machine (4 virtual A100s, nothing running).

Each round submits a 1-GPU job (``sleep 60``), polls GET /api/v1/jobs/{id} over one keep-alive connection
until its phase is ``Running``, then cancels it and waits until it is ``Cancelled`` so that the next round
starts idle again. Prints the client-observed time (from sending the POST to the first GET that shows
Running) and the server-side one (``started_at - created_at``). Target: median < 300 ms.

    .venv/bin/python bench/start_latency.py [--rounds 20] [--poll-ms 5] [--mode reflex|standalone]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import time
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _server import CraterServer, describe_machine, pct  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--poll-ms", type=float, default=5.0, help="pause between two polls")
    ap.add_argument("--mode", choices=("reflex", "standalone"), default="reflex")
    args = ap.parse_args()

    print(f"machine: {describe_machine()}")
    with CraterServer(mode=args.mode) as server:
        print(f"server: {args.mode} on {server.url} (up in {server.startup_s:.1f} s)")
        token = server.login()
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

        def call(method: str, path: str, body: object | None = None) -> tuple[int, dict]:
            conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read())

        def wait_for(job_id: int, phases: tuple[str, ...], timeout_s: float = 30.0) -> dict:
            deadline = time.monotonic() + timeout_s
            while True:
                _, job = call("GET", f"/api/v1/jobs/{job_id}")
                if job["phase"] in phases:
                    return job
                if time.monotonic() > deadline:
                    raise RuntimeError(f"job {job_id} stuck in {job['phase']}: {job['reason']}")
                time.sleep(args.poll_ms / 1000)

        client, server_side, accepted, polls = [], [], [], []
        for i in range(args.rounds + 1):  # round 0 warms up (imports, first process start)
            t0 = time.perf_counter()
            status, job = call("POST", "/api/v1/jobs", {
                "name": f"latency-{i}", "command": ["sleep", "60"], "resources": {"nvidia.com/gpu": 1},
            })
            t_accept = time.perf_counter() - t0
            assert status == 201, job
            n0 = time.perf_counter()
            job = wait_for(job["id"], ("Running", "Succeeded", "Failed"))
            elapsed = time.perf_counter() - t0
            if job["phase"] != "Running":
                raise RuntimeError(f"job {job['id']} ended {job['phase']}: {job['reason']}")
            if i:
                client.append(elapsed * 1000)
                accepted.append(t_accept * 1000)
                polls.append((time.perf_counter() - n0) * 1000)
                created = datetime.fromisoformat(job["created_at"].replace("Z", "+00:00"))
                started = datetime.fromisoformat(job["started_at"].replace("Z", "+00:00"))
                server_side.append((started - created).total_seconds() * 1000)
            call("DELETE", f"/api/v1/jobs/{job['id']}")
            wait_for(job["id"], ("Cancelled", "Failed", "Succeeded"))

        def line(name: str, xs: list[float]) -> str:
            return (f"{name:<44} median {statistics.median(xs):6.0f}  p90 {pct(xs, 90):6.0f}  "
                    f"max {max(xs):6.0f} ms")

        print(f"rounds: {len(client)} (after 1 warm-up), polling every {args.poll_ms:g} ms")
        print(line("submission -> Running seen by client", client) + "   (target median < 300 ms)")
        print(line("  of which POST /jobs answered", accepted))
        print(line("server side: started_at - created_at", server_side))


if __name__ == "__main__":
    main()
