"""Benchmark: API job submissions per second (POST /api/v1/jobs) with 16 concurrent clients, quotas on, beside Slurm.

All 4 (virtual) GPUs are first taken by a long 4-GPU job, so every benchmark job (1 GPU) waits in the
queue: what is measured is the control plane (validate, authorise, admit, write, hand to the backend,
reconcile), not process start-up. The clients submit into a project with a quota (a GPU, CPU and memory
capability that every job fits in, ``--capability``): each submission is admitted by the quota rules - project
row lock, the project's admitted usage, the held queue ahead - as on a platform with quotas (``--no-quota``: the
users' default project, which has none). Target: >= 1,000 submissions/s, p99 < 50 ms, and at least twice Slurm's
rate measured in the same run.

Slurm: when ``sbatch`` is installed and the anchor script exists (``--slurm-anchor``, default
``/work/shared/bench/slurm-anchor``; ``slurm-anchor setup`` once, as root), the anchor's ``rate`` (``--slurm-jobs``
held ``sbatch`` submissions from ``--slurm-clients`` threads against a one-node slurmctld) runs after Crater's
measurement, and both rates and their ratio are printed.

    .venv/bin/python bench/submit.py [--jobs 2000] [--clients 16] [--users 4] [--mode reflex|standalone]
                                     [--capability 100000] [--no-quota] [--no-slurm] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _load import encode_request, run_load  # noqa: E402
from _server import CraterServer, MachineMeter, describe_machine, http_json, pct, wait_phase  # noqa: E402

SLURM_ANCHOR = "/work/shared/bench/slurm-anchor"
QUOTA_PROJECT = "bench-quota"


def slurm_rate(anchor: str, jobs: int, clients: int) -> dict | None:
    """The anchor's ``rate`` figures (``{"sbatch_per_s", "accepted", ...}``), or ``None`` when Slurm is not installed
    here (no ``sbatch`` on PATH, or no anchor script) or the anchor failed (its output is printed)."""
    if not shutil.which("sbatch") or not os.path.exists(anchor):
        print("slurm: not measured (sbatch or the anchor script is not installed here)")
        return None
    out = subprocess.run([anchor, "rate", str(jobs), str(clients)], capture_output=True, text=True, timeout=900)
    for line in reversed(out.stdout.splitlines()):
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, dict) and "sbatch_per_s" in found:
            return found
    print(f"slurm: the anchor failed (exit {out.returncode}): {(out.stdout + out.stderr)[-600:]}")
    return None


def quota_project(server: CraterServer, admin: str, users: list[str], capability: int) -> None:
    """Create :data:`QUOTA_PROJECT` with a capability of ``capability`` GPUs (4 CPUs and 16 GiB each) and make
    ``users`` its members."""
    status, body = http_json("POST", server.url + "/api/v1/projects", {"name": QUOTA_PROJECT}, token=admin)
    assert status == 201, body
    status, body = http_json("PUT", f"{server.url}/api/v1/projects/{QUOTA_PROJECT}/quota", {"capability": {
        "nvidia.com/gpu": str(capability), "cpu": str(4 * capability), "memory": f"{16 * capability}Gi"}}, token=admin)
    assert status == 200, body
    for name in users:
        status, body = http_json("PUT", f"{server.url}/api/v1/projects/{QUOTA_PROJECT}/members/{name}",
                                 {"role": "member"}, token=admin)
        assert status == 200, body


def _start_profiles(server: CraterServer, folder: str) -> list[subprocess.Popen]:
    """py-spy ``record`` (raw collapsed stacks, 250 samples/s, without pausing the process) of every server process,
    until interrupted; started a second early so that the samplers are attached when the load begins."""
    os.makedirs(folder, exist_ok=True)
    spy = os.path.join(os.path.dirname(sys.executable), "py-spy")
    spies = [subprocess.Popen([spy, "record", "-r", "250", "--nonblocking", "--gil", "-f", "raw", "-o", os.path.join(folder, f"{p.pid}.txt"),
                               "-p", str(p.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for p in server.server_processes()]
    time.sleep(1.0)
    return spies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--users", type=int, default=4, help="distinct users the clients sign in as")
    ap.add_argument("--warmup", type=int, default=100, help="submissions before the measured run")
    ap.add_argument("--mode", choices=("reflex", "standalone"), default="reflex")
    ap.add_argument("--capability", type=int, default=100_000, help="GPU capability of the quota project")
    ap.add_argument("--no-quota", action="store_true", help="submit into the default project (no quota)")
    ap.add_argument("--workers", type=int, default=None, help="CRATER_WORKERS for the server (default: its own)")
    ap.add_argument("--profile", metavar="DIR", default=None,
                    help="record each server process with py-spy during the measured run (raw stacks, DIR/<pid>.txt)")
    ap.add_argument("--no-slurm", action="store_true", help="do not run the Slurm anchor")
    ap.add_argument("--slurm-anchor", default=SLURM_ANCHOR)
    ap.add_argument("--slurm-jobs", type=int, default=2000)
    ap.add_argument("--slurm-clients", type=int, default=8)
    args = ap.parse_args()

    print(f"machine: {describe_machine()}")
    env = {"CRATER_WORKERS": str(args.workers)} if args.workers else None
    with CraterServer(mode=args.mode, env=env) as server:
        print(f"server: {args.mode} on {server.url} (up in {server.startup_s:.1f} s), "
              f"{len(server.server_processes())} processes, data {server.data_dir}")
        admin = server.login()
        tokens = []
        names = [f"bench-u{i}" for i in range(args.users)]
        for name in names:
            server.create_user(admin, name, "bench-password-1")
            tokens.append(server.login(name, "bench-password-1"))
        project = {} if args.no_quota else {"project": QUOTA_PROJECT}
        if not args.no_quota:
            quota_project(server, admin, names, args.capability)

        status, blocker = http_json("POST", server.url + "/api/v1/jobs", {
            "name": "occupy-all-gpus", "command": ["sleep", "3600"], "resources": {"nvidia.com/gpu": 4},
        }, token=admin)
        assert status == 201, blocker
        wait_phase(server, admin, blocker["id"], "Running")

        def requests(prefix: str, n: int) -> list[bytes]:
            return [
                encode_request("POST", "/api/v1/jobs", server.port, tokens[i % len(tokens)], {
                    "name": f"{prefix}-{i}", **project, "command": ["python", "train.py", "--epochs", "10"],
                    "resources": {"nvidia.com/gpu": 1, "cpu": "2", "memory": "8Gi"},
                    "env": {"SEED": str(i)},
                })
                for i in range(n)
            ]

        if args.warmup:
            run_load(server.port, requests("warm", args.warmup), args.warmup, args.clients)
        reqs = requests("bench", args.jobs)
        spies = _start_profiles(server, args.profile) if args.profile else []
        cpu0, by_process0 = server.cpu_seconds(), server.cpu_by_process()
        meter = MachineMeter().start()
        result = run_load(server.port, reqs, args.jobs, args.clients)
        by_process = {pid: t - by_process0.get(pid, 0.0) for pid, t in server.cpu_by_process().items()}
        for spy in spies:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
            spy.wait(30)
        server_cpu = server.cpu_seconds() - cpu0
        machine = meter.stop(server_cpu + result.client_cpu_s)

        ms = [x * 1000 for x in result.latencies]
        quota = "no quota" if args.no_quota else f"project {QUOTA_PROJECT} with a {args.capability:,}-GPU capability"
        print(f"submissions: {result.count} with {args.clients} clients as {args.users} users into {quota} "
              f"(after {args.warmup} warm-up), statuses {result.statuses}")
        for err in result.errors:
            print(f"  error sample: {err}")
        print(f"throughput: {result.rate:,.0f} submissions/s over {result.elapsed_s:.2f} s   (target >= 1,000/s)")
        print(f"latency ms: p50 {pct(ms, 50):.1f}  p95 {pct(ms, 95):.1f}  p99 {pct(ms, 99):.1f}  "
              f"max {max(ms):.1f}   (target p99 < 50 ms)")
        print(f"cpu: server {server_cpu:.2f} s ({server_cpu / result.elapsed_s * 100:.0f}% of one core, "
              f"{server_cpu / result.count * 1000:.2f} ms/submission), client {result.client_cpu_s:.2f} s "
              f"({result.client_cpu_s / result.count * 1000:.2f} ms/request)")
        print("cpu by server process (s): " + ", ".join(f"{pid} {t:.2f}" for pid, t in sorted(by_process.items())))
        print(machine)

        # Everything submitted must be queued behind the blocker (the control plane kept up).
        time.sleep(1.0)
        _, page = http_json("GET", server.url + "/api/v1/jobs?phase=Queued&page_size=1", token=admin)
        print(f"queued after the run: {page['total']} (expected {args.jobs + args.warmup})")

    slurm = None if args.no_slurm else slurm_rate(args.slurm_anchor, args.slurm_jobs, args.slurm_clients)
    if slurm:
        print(f"slurm: {slurm['sbatch_per_s']:,.0f} sbatch/s ({slurm['accepted']} of {slurm['submitted']} accepted, "
              f"{slurm['clients']} clients, {slurm['seconds']} s) after Crater's run, same machine")
        print(f"Crater {result.rate:,.0f}/s vs Slurm {slurm['sbatch_per_s']:,.0f}/s = "
              f"{result.rate / slurm['sbatch_per_s']:.2f}x   (target >= 2x)")


if __name__ == "__main__":
    main()
