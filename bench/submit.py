"""Benchmark: API job submissions per second (POST /api/v1/jobs) with 16 concurrent clients.

All 4 (virtual) GPUs are first taken by a long 4-GPU job, so every benchmark job (1 GPU) waits in the
queue: what is measured is the control plane (validate, authorise, write, hand to the backend, reconcile),
not process start-up. Target: >= 1,000 submissions/s, p99 < 50 ms.

    .venv/bin/python bench/submit.py [--jobs 2000] [--clients 16] [--users 4] [--mode reflex|standalone]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _load import encode_request, run_load  # noqa: E402
from _server import CraterServer, MachineMeter, describe_machine, http_json, pct, wait_phase  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--users", type=int, default=4, help="distinct users the clients sign in as")
    ap.add_argument("--warmup", type=int, default=100, help="submissions before the measured run")
    ap.add_argument("--mode", choices=("reflex", "standalone"), default="reflex")
    args = ap.parse_args()

    print(f"machine: {describe_machine()}")
    with CraterServer(mode=args.mode) as server:
        print(f"server: {args.mode} on {server.url} (up in {server.startup_s:.1f} s), data {server.data_dir}")
        admin = server.login()
        tokens = []
        for i in range(args.users):
            server.create_user(admin, f"bench-u{i}", "bench-password-1")
            tokens.append(server.login(f"bench-u{i}", "bench-password-1"))

        status, blocker = http_json("POST", server.url + "/api/v1/jobs", {
            "name": "occupy-all-gpus", "command": ["sleep", "3600"], "resources": {"nvidia.com/gpu": 4},
        }, token=admin)
        assert status == 201, blocker
        wait_phase(server, admin, blocker["id"], "Running")

        def requests(prefix: str, n: int) -> list[bytes]:
            return [
                encode_request("POST", "/api/v1/jobs", server.port, tokens[i % len(tokens)], {
                    "name": f"{prefix}-{i}", "command": ["python", "train.py", "--epochs", "10"],
                    "resources": {"nvidia.com/gpu": 1, "cpu": "2", "memory": "8Gi"},
                    "env": {"SEED": str(i)},
                })
                for i in range(n)
            ]

        if args.warmup:
            run_load(server.port, requests("warm", args.warmup), args.warmup, args.clients)
        reqs = requests("bench", args.jobs)
        cpu0 = server.cpu_seconds()
        meter = MachineMeter().start()
        result = run_load(server.port, reqs, args.jobs, args.clients)
        server_cpu = server.cpu_seconds() - cpu0
        machine = meter.stop(server_cpu + result.client_cpu_s)

        ms = [x * 1000 for x in result.latencies]
        print(f"submissions: {result.count} with {args.clients} clients as {args.users} users "
              f"(after {args.warmup} warm-up), statuses {result.statuses}")
        for err in result.errors:
            print(f"  error sample: {err}")
        print(f"throughput: {result.rate:,.0f} submissions/s over {result.elapsed_s:.2f} s   (target >= 1,000/s)")
        print(f"latency ms: p50 {pct(ms, 50):.1f}  p95 {pct(ms, 95):.1f}  p99 {pct(ms, 99):.1f}  "
              f"max {max(ms):.1f}   (target p99 < 50 ms)")
        print(f"cpu: server {server_cpu:.2f} s ({server_cpu / result.elapsed_s * 100:.0f}% of one core, "
              f"{server_cpu / result.count * 1000:.2f} ms/submission), client {result.client_cpu_s:.2f} s "
              f"({result.client_cpu_s / result.count * 1000:.2f} ms/request)")
        print(machine)

        # Everything submitted must be queued behind the blocker (the control plane kept up).
        time.sleep(1.0)
        _, page = http_json("GET", server.url + "/api/v1/jobs?phase=Queued&page_size=1", token=admin)
        print(f"queued after the run: {page['total']} (expected {args.jobs + args.warmup})")


if __name__ == "__main__":
    main()
