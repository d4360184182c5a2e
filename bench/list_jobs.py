"""Benchmark: GET /api/v1/jobs with 100,000 jobs in the database.

Seeds a fresh data dir (bench/_seed.py: 50 users, 5 projects, 100k finished jobs, 200k events), starts the
real app, and measures the first page and a filtered page (``phase=Failed&q=resnet``) as a platform admin,
a plain member (sees only their own jobs) and a project admin (own jobs OR all jobs of a project): latency
with one client, then pages/s and latency with 8 clients. Ends with the server's RSS (supervisor + worker).
Targets: p95 < 50 ms, >= 400 pages/s with 8 clients, RSS < 400 MB.

    .venv/bin/python bench/list_jobs.py [--jobs 100000] [--requests 1000] [--mode reflex|standalone]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _load import encode_request, run_load  # noqa: E402
from _seed import MEMBER_USER, PROJECT_ADMIN_USER, USER_PASSWORD, seed  # noqa: E402
from _server import CraterServer, MachineMeter, describe_machine, pct  # noqa: E402

PAGES = [("first page", "/api/v1/jobs"), ("phase=Failed&q=resnet", "/api/v1/jobs?phase=Failed&q=resnet")]


def measure(server: CraterServer, token: str, path: str, sequential: int, concurrent: int, clients: int) -> dict:
    req = [encode_request("GET", path, server.port, token)]
    run_load(server.port, req, 20, 1)  # warm-up
    one = run_load(server.port, req, sequential, 1, keep_bodies=1)
    cpu0 = server.cpu_seconds()
    meter = MachineMeter().start()
    many = run_load(server.port, req, concurrent, clients)
    server_cpu = server.cpu_seconds() - cpu0
    machine = meter.stop(server_cpu + many.client_cpu_s)
    body = json.loads(one.sample_bodies[0]) if one.sample_bodies else {}
    return {"one": one, "many": many, "server_cpu": server_cpu, "machine": machine, "total": body.get("total"),
            "items": len(body.get("items", [])), "statuses": {**one.statuses, **many.statuses}}


def report(label: str, r: dict, clients: int) -> None:
    one = [x * 1000 for x in r["one"].latencies]
    many = [x * 1000 for x in r["many"].latencies]
    print(f"  {label:<38} total={r['total']!s:>6} items={r['items']:>2}  statuses={r['statuses']}")
    print(f"    1 client : p50 {pct(one, 50):6.1f}  p95 {pct(one, 95):6.1f}  p99 {pct(one, 99):6.1f} ms"
          f"   {r['one'].rate:6.0f} pages/s")
    print(f"    {clients} clients: p50 {pct(many, 50):6.1f}  p95 {pct(many, 95):6.1f}  p99 {pct(many, 99):6.1f} ms"
          f"   {r['many'].rate:6.0f} pages/s   (server cpu {r['server_cpu'] / r['many'].count * 1000:.2f} ms/page,"
          f" client {r['many'].client_cpu_s / r['many'].count * 1000:.2f} ms/page)")
    print(f"    {r['machine']}")
    for err in r["many"].errors[:2]:
        print(f"    error sample: {err}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--sequential", type=int, default=200, help="requests for the 1-client latency")
    ap.add_argument("--requests", type=int, default=1000, help="requests for the 8-client run")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--mode", choices=("reflex", "standalone"), default="reflex")
    args = ap.parse_args()

    print(f"machine: {describe_machine()}")
    summary = {}
    with CraterServer(mode=args.mode, prepare=lambda d: summary.update(seed(d, args.jobs))) as server:
        print(f"seeded {summary['jobs']:,} jobs ({summary['users']} users, {summary['projects']} projects) "
              f"in {summary['seconds']:.1f} s; server: {args.mode} on {server.url} (up in {server.startup_s:.1f} s)")
        rss0, _ = server.rss_bytes()
        actors = [
            ("admin", server.login()),
            (f"member {MEMBER_USER}", server.login(MEMBER_USER, USER_PASSWORD)),
            (f"project admin {PROJECT_ADMIN_USER}", server.login(PROJECT_ADMIN_USER, USER_PASSWORD)),
        ]
        results = {}
        for who, token in actors:
            print(f"{who}:")
            for label, path in PAGES:
                r = measure(server, token, path, args.sequential, args.requests, args.clients)
                results[(who, label)] = r
                report(label, r, args.clients)
        worst95 = max(pct([x * 1000 for x in r["many"].latencies], 95) for r in results.values())
        worst_rate = min(r["many"].rate for r in results.values())
        print(f"worst case over all pages: p95 {worst95:.1f} ms with {args.clients} clients (target < 50),"
              f" {worst_rate:.0f} pages/s (target >= 400)")
        rss, rows = server.rss_bytes()
        print(f"server RSS: {rss / 2**20:.0f} MiB after serving pages (at start {rss0 / 2**20:.0f} MiB; target < 400 MB"
              f" = 381 MiB); PSS {server.pss_bytes() / 2**20:.0f} MiB")
        for pid, cmd, b in rows:
            print(f"    pid {pid:<7} {b / 2**20:6.0f} MiB  {cmd}")


if __name__ == "__main__":
    main()
