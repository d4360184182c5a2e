"""Browser-test infrastructure: Crater served by ``reflex run --env prod`` and Debian's Chromium.

- Server: ``crater init`` then ``reflex run --env prod`` on a free port, in its own process group, with a
  temporary ``CRATER_DATA_DIR``, ``CRATER_LOCAL_GPUS=4:NVIDIA-A100-SXM4-80GB`` and ``REFLEX_REDIS_URL``
  pointing at the test Redis (the ``redis_url`` fixture of ``tests/conftest.py``: ``CRATER_TEST_REDIS_URL``
  or a throwaway ``redis-server``). With Redis, Reflex keeps console state there and runs several workers;
  ``GRANIAN_WORKERS=2`` keeps that to two on small CI machines.
- Build folder: Reflex compiles the frontend into ``.web`` of the folder it runs in, with the port baked
  into the bundle. So that a test run never rewrites the checkout's own ``.web`` (a developer's
  ``make run``, or a benchmark, may be serving it), the server runs in a separate build folder,
  ``$TMPDIR/crater-e2e-<hash of the checkout path>``, holding copies of ``rxconfig.py``, ``reflex.lock/``
  and ``assets/``; ``PYTHONPATH`` points at the checkout, so the app code is the checkout's. The folder is
  kept between runs (a fresh one costs one ``npm install``, ~20-30 s) and locked while a run uses it.
- Browser: Playwright driving ``/usr/bin/chromium`` (never a downloaded browser).
- Missing Chromium, Redis or a server that does not come up FAIL the tests; they never skip.
"""

from __future__ import annotations

import fcntl
import hashlib
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
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]
ADMIN_PASSWORD = "e2e-admin-password-1"
LOCAL_GPUS = "4:NVIDIA-A100-SXM4-80GB"
STARTUP_TIMEOUT_S = float(os.environ.get("CRATER_E2E_STARTUP_TIMEOUT", "300"))


@dataclass
class Console:
    """A running Crater server: ``url`` (no trailing slash), its data dir and log file; ``restart()`` stops it and
    starts it again on the same port and data dir (the process, its environment and build folder are kept here)."""

    url: str
    data_dir: Path
    log_path: Path
    startup_s: float
    proc: subprocess.Popen | None = None
    env: dict[str, str] | None = None
    build_dir: Path | None = None

    def log_tail(self, chars: int = 6000) -> str:
        """The end of the server log (for failure messages)."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server: its whole process group (SIGKILL on the parent alone would orphan a granian worker
        on the port); job processes it started keep running, as in a real restart."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)
        self.proc = None

    def start(self, env: dict[str, str] | None = None) -> None:
        """Start ``reflex run --env prod`` (with ``env``, default the last one) and wait for ``/healthz``."""
        self.env = dict(env if env is not None else self.env or {})
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [_tool("reflex"), "run", "--env", "prod", "--loglevel", "info"], cwd=self.build_dir, env=self.env,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        while not _healthy(self.url):
            if self.proc.poll() is not None:
                pytest.fail(f"reflex run exited with {self.proc.returncode}; log:\n{self.log_tail()}", pytrace=False)
            if time.monotonic() - started > STARTUP_TIMEOUT_S:
                pytest.fail(f"no /healthz answer within {STARTUP_TIMEOUT_S:.0f} s; log:\n{self.log_tail()}",
                            pytrace=False)
            time.sleep(0.25)
        self.startup_s = time.monotonic() - started

    def restart(self, **changes: str | None) -> None:
        """Stop the server and start it again on the same port and data dir; ``changes`` set (or, with ``None``,
        remove) environment variables from then on, e.g. ``REFLEX_REDIS_URL=None`` for in-memory console state
        in one worker, as ``make run`` serves."""
        env = dict(self.env or {})
        for name, value in changes.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        self.stop()
        port = int(self.url.rsplit(":", 1)[1])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the port is free once the old worker has exited
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) != 0:
                    break
            time.sleep(0.1)
        self.start(env)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=2) as resp:
            return resp.status == 200
    except (OSError, urllib.error.URLError):
        return False


def _tool(name: str) -> str:
    path = VENV_BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if not found:
        pytest.fail(f"'{name}' is not installed (expected next to {sys.executable})", pytrace=False)
    return found


def _npm_registry(env: dict[str, str]) -> str:
    try:
        out = subprocess.run([_tool("npm"), "config", "get", "registry"], capture_output=True, text=True,
                             timeout=60, env=env)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _kill_jobs(data_dir: Path) -> None:
    """SIGKILL the process groups of job processes the local backend started under ``data_dir``."""
    prefix = str(data_dir.resolve())
    for proc in psutil.process_iter(["pid", "cwd"]):
        cwd = proc.info.get("cwd") or ""
        if cwd == prefix or cwd.startswith(prefix + os.sep):
            try:
                os.killpg(os.getpgid(proc.info["pid"]), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Debian's Chromium; the browser test fails without it."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)", pytrace=False)
    return CHROMIUM


@pytest.fixture(scope="session")
def build_dir():
    """A build folder for ``reflex run`` outside the checkout (see the module docstring), locked for the run."""
    digest = hashlib.sha1(str(ROOT).encode()).hexdigest()[:10]
    path = Path(tempfile.gettempdir()) / f"crater-e2e-{digest}"
    path.mkdir(parents=True, exist_ok=True)
    lock = open(path / ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        shutil.copy2(ROOT / "rxconfig.py", path / "rxconfig.py")
        for folder in ("reflex.lock", "assets"):
            if (ROOT / folder).is_dir():
                shutil.rmtree(path / folder, ignore_errors=True)
                shutil.copytree(ROOT / folder, path / folder)
        yield path
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()


@pytest.fixture(scope="session")
def console(redis_url, build_dir, tmp_path_factory) -> Console:
    """Crater on a free port (``reflex run --env prod``, Redis state manager), stopped after the session."""
    data_dir = tmp_path_factory.mktemp("crater-e2e-data")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRATER_", "REFLEX_", "GRANIAN_"))}
    env.update({
        "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
        "PYTHONUNBUFFERED": "1",
        "PORT": str(port),
        "CRATER_DATA_DIR": str(data_dir),
        "CRATER_ADMIN_PASSWORD": ADMIN_PASSWORD,
        "CRATER_LOCAL_GPUS": LOCAL_GPUS,
        "REFLEX_REDIS_URL": redis_url,
        "GRANIAN_WORKERS": "2",
        "REFLEX_USE_NPM": "1",
        "REFLEX_TELEMETRY_ENABLED": "false",
        "REFLEX_CHECK_LATEST_VERSION": "0",
    })
    env["NPM_CONFIG_REGISTRY"] = os.environ.get("NPM_CONFIG_REGISTRY") or _npm_registry(env)
    init = subprocess.run([_tool("crater"), "init"], cwd=build_dir, env=env, capture_output=True, text=True,
                          timeout=120)
    if init.returncode != 0:
        pytest.fail(f"crater init failed ({init.returncode}):\n{init.stdout}\n{init.stderr}", pytrace=False)
    log_path = data_dir / "server.log"
    log_path.write_bytes(b"")
    url = f"http://127.0.0.1:{port}"
    server = Console(url=url, data_dir=data_dir, log_path=log_path, startup_s=0.0, build_dir=build_dir)
    try:
        server.start(env)
        print(f"\ncrater console up at {url} in {server.startup_s:.1f} s (build folder {build_dir})")
        yield server
    finally:
        server.stop()
        _kill_jobs(data_dir)


@pytest.fixture(scope="session")
def browser(chromium_path):
    """Chromium through Playwright (headless)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser, console):
    """A fresh browser context and page (1360×900), closed after the test. Assertions wait up to 15 s (Playwright's
    default is 5 s): after a full page load the console first reconnects its websocket and hydrates its state,
    which on a 2-core machine running the suite has taken over 5 s now and then."""
    from playwright.sync_api import expect

    expect.set_options(timeout=15_000)
    context = browser.new_context(viewport={"width": 1360, "height": 900}, locale="en-US")
    context.set_default_timeout(20_000)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.page_errors = errors  # type: ignore[attr-defined]
    try:
        yield tab
    finally:
        context.close()
