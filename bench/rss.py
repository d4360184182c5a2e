"""Benchmark: memory (RSS) of the web process tree with 100,000 jobs in the database.

Seeds a fresh data dir like bench/list_jobs.py, starts the real app (``reflex run --env prod``: a granian
supervisor and ``CRATER_WORKERS`` workers, ``--workers``), then serves rounds of job-list traffic - first pages, filters, deep pages,
200-row pages, single jobs and their events (404 for the jobs a member may not read), for an admin, a member and a project
admin - and prints the RSS
of supervisor + all workers together (psutil, job processes excluded) after start-up and after each round, and at the
end their PSS (pages the workers share with the supervisor after the fork counted once).
Target: < 400 MB in total over all processes after serving list pages.

    .venv/bin/python bench/rss.py [--jobs 100000] [--rounds 3] [--mode reflex|standalone] [--workers N]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _load import encode_request, run_load  # noqa: E402
from _seed import MEMBER_USER, PROJECT_ADMIN_USER, USER_PASSWORD, seed  # noqa: E402
from _server import CraterServer, describe_machine  # noqa: E402

PATHS = [
    "/api/v1/jobs", "/api/v1/jobs?phase=Failed&q=resnet", "/api/v1/jobs?q=llama", "/api/v1/jobs?phase=Succeeded",
    "/api/v1/jobs?page_size=200", "/api/v1/jobs?page=400&page_size=50", "/api/v1/jobs?page=4000",
    "/api/v1/jobs/{job}", "/api/v1/jobs/{job}/events",
]


def mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=3000, help="requests per round")
    ap.add_argument("--mode", choices=("reflex", "standalone"), default="reflex")
    ap.add_argument("--workers", type=int, default=None, help="CRATER_WORKERS for the server (default: its own)")
    args = ap.parse_args()

    print(f"machine: {describe_machine()}")
    summary = {}
    env = {"CRATER_WORKERS": str(args.workers)} if args.workers else None
    with CraterServer(mode=args.mode, env=env, prepare=lambda d: summary.update(seed(d, args.jobs))) as server:
        print(f"seeded {summary['jobs']:,} jobs; server: {args.mode} on {server.url} (up in {server.startup_s:.1f} s)")
        rss, rows = server.rss_bytes()
        print(f"after start-up: {mib(rss)}  ({', '.join(f'pid {p} {mib(b)}' for p, _, b in rows)})")
        tokens = [server.login(), server.login(MEMBER_USER, USER_PASSWORD), server.login(PROJECT_ADMIN_USER, USER_PASSWORD)]
        requests = [
            encode_request("GET", path.format(job=1 + (i * 7919) % args.jobs), server.port, token)
            for token in tokens for i, path in enumerate(PATHS)
        ]
        peak = rss
        for r in range(1, args.rounds + 1):
            result = run_load(server.port, requests, args.requests, 8)
            rss, rows = server.rss_bytes()
            peak = max(peak, rss)
            print(f"after round {r} ({result.count} requests, {result.rate:.0f}/s, statuses {result.statuses}): "
                  f"{mib(rss)}  ({', '.join(f'pid {p} {mib(b)}' for p, _, b in rows)})")
        print(f"server RSS, all {len(rows)} processes (supervisor + {len(rows) - 1} worker(s)) together: {mib(rss)} at "
              f"the end, peak {mib(peak)}   (target < 400 MB = {400e6 / 2**20:.0f} MiB in total); PSS in total "
              f"(fork-shared pages counted once): {mib(server.pss_bytes())}")


if __name__ == "__main__":
    main()
