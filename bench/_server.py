"""Shared bench plumbing: start Crater the way users run it, log in, measure the process tree, stop it.

``CraterServer`` runs ``crater init`` then ``reflex run --env prod`` (single port, granian, one worker) in a
fresh temporary ``CRATER_DATA_DIR``, in its own process group, and stops it with SIGTERM to the group.
``mode="standalone"`` serves only the API (``crater_app.tasks:standalone_api``) with the same server (granian,
one worker) instead, which tells the cost of the Reflex layers from Crater's own code.

Job processes started by the local backend live in their own sessions (they survive the web process by
design); :meth:`CraterServer.stop` ends the ones this server started, by process-group id.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = ROOT / ".venv" / "bin"
ADMIN_PASSWORD = "bench-admin-password-1"
LOCAL_GPUS = "4:NVIDIA-A100-SXM4-80GB"
# Serialises reflex builds of this checkout between bench scripts (they all compile into ROOT/.web).
BUILD_LOCK = Path(tempfile.gettempdir()) / "crater-bench-build.lock"


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _npm_registry() -> str:
    try:
        out = subprocess.run([str(VENV_BIN / "npm"), "config", "get", "registry"], capture_output=True, text=True,
                             timeout=60, env={**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"})
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def base_env(data_dir: Path, port: int, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for ``crater``/``reflex`` commands (docs/reflex-notes.md)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRATER_", "REFLEX_", "GRANIAN_"))}
    env.update({
        "PATH": f"{VENV_BIN}:{env.get('PATH', '')}",
        "VIRTUAL_ENV": str(ROOT / ".venv"),
        # This checkout's code, also when bench/ runs from a copy of the tree (e.g. an older commit).
        "PYTHONPATH": str(ROOT),
        "REFLEX_USE_NPM": "1",
        "REFLEX_TELEMETRY_ENABLED": "false",
        "REFLEX_CHECK_LATEST_VERSION": "0",
        "CRATER_DATA_DIR": str(data_dir),
        "CRATER_ADMIN_PASSWORD": ADMIN_PASSWORD,
        "CRATER_LOCAL_GPUS": LOCAL_GPUS,
        "PORT": str(port),
        "PYTHONUNBUFFERED": "1",
    })
    if extra:
        env.update(extra)
    return env


def http_json(method: str, url: str, body: object | None = None, token: str | None = None,
              timeout: float = 30.0) -> tuple[int, object]:
    """One small blocking request (stdlib, for setup only)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


class CraterServer:
    """A Crater server on a free port with its own data dir (context manager).

    Args:
        mode: ``"reflex"`` (the real app, ``reflex run --env prod``) or ``"standalone"`` (API only, granian).
        prepare: called with the data dir after ``crater init`` and before the server starts (e.g. bulk rows).
        env: extra environment variables for the server.
        keep: keep the data dir afterwards (its path is printed).
    """

    def __init__(self, mode: str = "reflex", prepare=None, env: dict[str, str] | None = None, keep: bool = False,
                 data_dir: Path | None = None) -> None:
        if mode not in ("reflex", "standalone"):
            raise ValueError("mode must be 'reflex' or 'standalone'")
        self.mode = mode
        self.prepare = prepare
        self.extra_env = env or {}
        self.keep = keep
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="crater-bench-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir / "server.log"
        self.startup_s = 0.0
        self._job_pgids: set[int] = set()

    # -- lifecycle ---------------------------------------------------------------------------------
    def __enter__(self) -> "CraterServer":
        try:
            self.start()
        except BaseException:
            self.stop()  # no server or data dir left behind (the error carries the log's tail)
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout_s: float = 300.0) -> None:
        env = base_env(self.data_dir, self.port, self.extra_env)
        subprocess.run([str(VENV_BIN / "crater"), "init"], cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if self.prepare is not None:
            self.prepare(self.data_dir)
        if self.mode == "reflex":
            env["NPM_CONFIG_REGISTRY"] = env.get("NPM_CONFIG_REGISTRY") or _npm_registry()
            cmd = [str(VENV_BIN / "reflex"), "run", "--env", "prod", "--loglevel", os.environ.get("BENCH_LOGLEVEL", "warning")]
        else:
            cmd = [str(VENV_BIN / "granian"), "--interface", "asgi", "--host", "127.0.0.1", "--port", str(self.port),
                   "--workers", self.extra_env.get("CRATER_WORKERS", "1"), "--log-level", "warning", "--factory", "crater_app.tasks:standalone_api"]
        t0 = time.perf_counter()
        lock = open(BUILD_LOCK, "w")
        fcntl.flock(lock, fcntl.LOCK_EX)  # only while building/starting: .web is shared by the checkout
        try:
            log = open(self.log_path, "wb")
            self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
            deadline = time.monotonic() + timeout_s
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited with {self.proc.returncode}; log:\n{self.log_tail()}")
                try:
                    status, _ = http_json("GET", self.url + "/healthz", timeout=2)
                    if status == 200:
                        break
                except (OSError, urllib.error.URLError):
                    pass
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"server did not answer /healthz in {timeout_s} s; log:\n{self.log_tail()}")
                time.sleep(0.1)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
        self.startup_s = time.perf_counter() - t0

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self._job_pgids |= {os.getpgid(p.pid) for p in self.job_processes() if _exists(p)}
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        # A worker outliving the supervisor would keep the port: make sure the group is gone.
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pgid in self._job_pgids:  # job process groups this server started
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._job_pgids.clear()
        if self._own_dir and not self.keep:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        elif self.keep:
            print(f"(data dir kept: {self.data_dir})")

    # -- process tree --------------------------------------------------------------------------------
    def _tree(self) -> list[psutil.Process]:
        if self.proc is None:
            return []
        try:
            root = psutil.Process(self.proc.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def server_processes(self) -> list[psutil.Process]:
        """Supervisor + worker(s): the tree in the server's session (job processes have their own)."""
        sid = os.getsid(self.proc.pid)
        out = []
        for p in self._tree():
            try:
                if os.getsid(p.pid) == sid:
                    out.append(p)
            except ProcessLookupError:
                pass
        return out

    def job_processes(self) -> list[psutil.Process]:
        """Job process groups started by the local backend (their own sessions)."""
        sid = os.getsid(self.proc.pid)
        out = []
        for p in self._tree():
            try:
                if os.getsid(p.pid) != sid:
                    out.append(p)
            except ProcessLookupError:
                pass
        return out

    def rss_bytes(self) -> tuple[int, list[tuple[int, str, int]]]:
        """Total RSS of supervisor + worker(s) and ``(pid, name, rss)`` for each."""
        rows = []
        for p in self.server_processes():
            try:
                rows.append((p.pid, " ".join(p.cmdline()[:3])[-60:], p.memory_info().rss))
            except psutil.NoSuchProcess:
                pass
        return sum(r[2] for r in rows), rows

    def pss_bytes(self) -> int:
        """Total PSS of supervisor + worker(s): pages shared after the fork are counted once, not twice."""
        total = 0
        for p in self.server_processes():
            try:
                total += p.memory_full_info().pss
            except (psutil.NoSuchProcess, psutil.AccessDenied, AttributeError):
                return 0
        return total

    def cpu_seconds(self) -> float:
        """User+system CPU seconds used so far by supervisor + worker(s)."""
        return sum(self.cpu_by_process().values())

    def cpu_by_process(self) -> dict[int, float]:
        """pid -> user+system CPU seconds used so far, for supervisor and each worker."""
        out = {}
        for p in self.server_processes():
            try:
                t = p.cpu_times()
                out[p.pid] = t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return out

    # -- API helpers ----------------------------------------------------------------------------------
    def login(self, username: str = "admin", password: str = ADMIN_PASSWORD) -> str:
        for _ in range(5):  # a 5xx is retried (and reported) so that a flaky server still gets measured
            status, body = http_json("POST", self.url + "/api/v1/auth/token",
                                     {"username": username, "password": password})
            if status == 200:
                return body["access_token"]
            print(f"(login as {username}: HTTP {status}, retrying)")
            time.sleep(0.2)
        raise RuntimeError(f"login failed: {status} {body}")

    def create_user(self, admin_token: str, username: str, password: str, role: str = "user") -> None:
        status, body = http_json("POST", self.url + "/api/v1/users",
                                 {"username": username, "password": password, "role": role}, token=admin_token)
        if status != 201:
            raise RuntimeError(f"create user failed: {status} {body}")


def _exists(p: psutil.Process) -> bool:
    try:
        return p.is_running()
    except psutil.NoSuchProcess:
        return False


def describe_machine() -> str:
    """One line about the box and how busy it is (other people share it)."""
    load = os.getloadavg()
    return (f"{psutil.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
            f"load {load[0]:.2f}/{load[1]:.2f}, Python {sys.version.split()[0]}")


class MachineMeter:
    """CPU time used on the whole machine between :meth:`start` and :meth:`stop` (other people's processes
    share these 2 cores: a figure measured while they were busy is not comparable)."""

    def start(self) -> "MachineMeter":
        self._t0, self._cpu0 = time.monotonic(), psutil.cpu_times()
        return self

    def stop(self, own_cpu_s: float) -> str:
        wall = time.monotonic() - self._t0
        now = psutil.cpu_times()
        busy = sum(getattr(now, f) - getattr(self._cpu0, f) for f in ("user", "system", "nice", "irq", "softirq"))
        others = max(0.0, busy - own_cpu_s)
        return (f"machine: {busy / wall * 100:.0f}% of one core busy in all, of which others "
                f"{others / wall * 100:.0f}% (outside this benchmark's server and client)")


def pct(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values`` by nearest rank."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(q / 100 * len(s) + 0.5)) - 1))
    return s[k]


def wait_phase(server: "CraterServer", token: str, job_id: int, phase: str, timeout_s: float = 60) -> None:
    """Poll ``GET /api/v1/jobs/{job_id}`` until the job is in ``phase``; RuntimeError after ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    job: dict = {}
    while time.monotonic() < deadline:
        _, job = http_json("GET", f"{server.url}/api/v1/jobs/{job_id}", token=token)
        if job.get("phase") == phase:
            return
        time.sleep(0.05)
    raise RuntimeError(f"job {job_id} did not reach {phase}: {job}")
