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
- One server for all browser tests. When they run with other tests and ``CRATER_TEST_REDIS_URL`` is set (CI,
  ``make test``), they run last and the server is built and started right after collection, in the background,
  while the other tests run (its build, ~15-30 s, is mostly the other core's work); otherwise when the first
  browser test needs it.
- Browser: Playwright driving ``/usr/bin/chromium`` (never a downloaded browser).
- Missing Chromium, Redis or a server that does not come up FAIL the tests; they never skip.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tests.helpers import within

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
    """A running Crater server: ``url`` (no trailing slash), its data dir and log file, and the environment it runs
    with (``env``); :meth:`restart` stops it and starts it again on the same port and data dir."""

    url: str
    data_dir: Path
    log_path: Path
    startup_s: float
    server: "ConsoleServer | None" = None

    @property
    def env(self) -> dict[str, str]:
        """The server's environment (as it was last started)."""
        return dict(self.server.current_env if self.server is not None else {})

    def log_tail(self, chars: int = 6000) -> str:
        """The end of the server log (for failure messages)."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def restart(self, **changes: str | None) -> None:
        """Stop the server (its job processes keep running, as in a real restart) and start it again on the same port
        and data dir; ``changes`` set (or, with ``None``, remove) environment variables from then on, e.g.
        ``REFLEX_REDIS_URL=None`` for in-memory console state in one worker, as ``make run`` serves."""
        assert self.server is not None, "a console started by ConsoleServer"
        self.startup_s = self.server.restart(changes)


def sign_in(page, url: str, username: str, password: str, path: str = "/jobs") -> None:
    """Open ``url + path`` signed out (the console sends the browser to /login), sign in as ``username`` and wait
    until the console is back on ``path`` with the user's name in the top bar."""
    from playwright.sync_api import expect

    page.goto(url + path)
    page.wait_for_url(re.compile(r".*/login/?$"))
    page.fill("#username", username)
    page.fill("#password", password)
    page.click("#login-submit")
    page.wait_for_url(re.compile(".*" + re.escape(path) + "/?$"))
    expect(page.locator("#nav-username")).to_have_text(username)


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


def _build_folder() -> Path:
    return Path(tempfile.gettempdir()) / f"crater-e2e-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:10]}"


class ConsoleServer:
    """One Crater console for the run: :meth:`start` locks the build folder (see the module docstring), runs
    ``crater init`` and starts ``reflex run --env prod`` in a background thread; :meth:`wait` returns the
    :class:`Console` once ``/healthz`` answers (``pytest.fail`` with the log's end when it exits or takes more than
    ``CRATER_E2E_STARTUP_TIMEOUT`` s); :meth:`restart` stops and starts the server process alone; :meth:`stop` ends
    its process group and the jobs it started."""

    def __init__(self, redis_url: str, data_dir: Path, remove_data_dir: bool = False) -> None:
        self.redis_url, self.data_dir, self.remove_data_dir = redis_url, data_dir, remove_data_dir
        self.build_dir = _build_folder()
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = data_dir / "server.log"
        self.proc: subprocess.Popen | None = None
        self.failure = ""
        self.started = 0.0
        self._lock = None
        self._thread: threading.Thread | None = None
        self._console: Console | None = None
        self.current_env: dict[str, str] = {}

    def env(self) -> dict[str, str]:
        """The server's environment: this checkout's code, the test Redis, a data dir and virtual GPUs of its own."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CRATER_", "REFLEX_", "GRANIAN_"))}
        env.update({
            "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
            "PYTHONPATH": str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
            "PYTHONUNBUFFERED": "1",
            "PORT": str(self.port),
            "CRATER_DATA_DIR": str(self.data_dir),
            "CRATER_ADMIN_PASSWORD": ADMIN_PASSWORD,
            "CRATER_LOCAL_GPUS": LOCAL_GPUS,
            "CRATER_LOCAL_ISOLATION": "off",  # no OS accounts made on the test machine (tests/service covers isolation)
            "REFLEX_REDIS_URL": self.redis_url,
            "GRANIAN_WORKERS": "2",
            "REFLEX_USE_NPM": "1",
            "REFLEX_TELEMETRY_ENABLED": "false",
            "REFLEX_CHECK_LATEST_VERSION": "0",
        })
        env["NPM_CONFIG_REGISTRY"] = os.environ.get("NPM_CONFIG_REGISTRY") or _npm_registry(env)
        return env

    def start(self) -> "ConsoleServer":
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.build_dir.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.build_dir / ".lock", "w")
        fcntl.flock(self._lock, fcntl.LOCK_EX)  # one run at a time in a build folder
        shutil.copy2(ROOT / "rxconfig.py", self.build_dir / "rxconfig.py")
        for folder in ("reflex.lock", "assets"):
            if (ROOT / folder).is_dir():
                shutil.rmtree(self.build_dir / folder, ignore_errors=True)
                shutil.copytree(ROOT / folder, self.build_dir / folder)
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self._launch, name="crater-e2e-console", daemon=True)
        self._thread.start()
        return self

    def _launch(self) -> None:
        try:
            env = self.current_env = self.env()
            init = subprocess.run([_tool("crater"), "init"], cwd=self.build_dir, env=env, capture_output=True,
                                  text=True, timeout=120)
            if init.returncode != 0:
                self.failure = f"crater init failed ({init.returncode}):\n{init.stdout}\n{init.stderr}"
                return
            self.log_path.write_bytes(b"")
            self._run(env)
        except BaseException as exc:  # noqa: BLE001 - reported by wait()
            self.failure = f"starting the console failed: {type(exc).__name__}: {exc}"

    def _run(self, env: dict[str, str]) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [_tool("reflex"), "run", "--env", "prod", "--loglevel", "info"], cwd=self.build_dir, env=env,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )

    def _wait_healthy(self, since: float) -> float:
        """Wait for ``/healthz``; the seconds since ``since``."""
        assert self.proc is not None
        while not _healthy(self.url):
            if self.proc.poll() is not None:
                pytest.fail(f"reflex run exited with {self.proc.returncode}; log:\n{self._tail()}", pytrace=False)
            if time.monotonic() - since > STARTUP_TIMEOUT_S:
                pytest.fail(f"no /healthz answer within {STARTUP_TIMEOUT_S:.0f} s; log:\n{self._tail()}",
                            pytrace=False)
            time.sleep(0.1)
        return time.monotonic() - since

    def _tail(self, chars: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def _stop_process(self) -> None:
        """End the server's process group (SIGKILL on the parent alone would orphan a granian worker on the port)."""
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

    def restart(self, changes: dict[str, str | None]) -> float:
        """Stop the server process and start it again (same port and data dir) with ``changes`` applied to its
        environment; the seconds until ``/healthz`` answered again."""
        env = dict(self.current_env)
        for name, value in changes.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        self._stop_process()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the port is free once the old worker has exited
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) != 0:
                    break
            time.sleep(0.1)
        self.current_env = env
        started = time.monotonic()
        self._run(env)
        return self._wait_healthy(started)

    def wait(self) -> Console:
        if self._console is not None:
            return self._console
        assert self._thread is not None, "start() first"
        self._thread.join(180)
        server = Console(url=self.url, data_dir=self.data_dir, log_path=self.log_path, startup_s=0.0, server=self)
        if self.failure or self.proc is None:
            pytest.fail(self.failure or "crater init did not finish within 180 s", pytrace=False)
        server.startup_s = self._wait_healthy(self.started)
        print(f"\ncrater console up at {self.url} {server.startup_s:.1f} s after its start "
              f"(build folder {self.build_dir})")
        self._console = server
        return server

    def stop(self) -> None:
        if self._thread is not None:
            self._thread.join(180)
        self._stop_process()
        _kill_jobs(self.data_dir)
        if self.remove_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None


_EARLY = pytest.StashKey[ConsoleServer]()


def pytest_itemcollected(item: pytest.Item) -> None:
    """Every test in this folder is a browser test (``-m "not e2e"``, as ``make test-fast`` runs, leaves them out)."""
    if Path(__file__).parent in Path(item.path).parents and item.get_closest_marker("e2e") is None:
        item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(trylast=True)  # after -k/-m deselected what will not run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """When browser tests and others run together, the browser tests go last and the console starts building now,
    on the other core while the others run (with ``CRATER_TEST_REDIS_URL`` set; else when the first browser test
    needs it)."""
    if config.option.collectonly:
        return
    browser_tests = [item for item in items if item.get_closest_marker("e2e") is not None]
    if browser_tests and len(browser_tests) < len(items):
        items[:] = [item for item in items if item.get_closest_marker("e2e") is None] + browser_tests
        redis_url = os.environ.get("CRATER_TEST_REDIS_URL", "").strip()
        if redis_url:
            data_dir = Path(tempfile.mkdtemp(prefix="crater-e2e-data-"))
            config.stash[_EARLY] = ConsoleServer(redis_url, data_dir, remove_data_dir=True).start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop a console started early that no browser test ended up using (e.g. after ``-x``)."""
    early = session.config.stash.get(_EARLY, None)
    if early is not None:
        early.stop()


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Debian's Chromium; the browser test fails without it."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)", pytrace=False)
    return CHROMIUM


@pytest.fixture(scope="session")
def console(request, tmp_path_factory) -> Console:
    """Crater on a free port (``reflex run --env prod``, Redis state manager), stopped after the session: the one
    started while the other tests ran, or one started now."""
    server = request.config.stash.get(_EARLY, None)
    if server is None:
        server = ConsoleServer(request.getfixturevalue("redis_url"), tmp_path_factory.mktemp("crater-e2e-data"))
        server.start()
    try:
        yield server.wait()
    finally:
        server.stop()


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
    """A fresh browser context and page (1360×900), closed after the test. Assertions wait up to ``within(5)`` s
    (15 s; Playwright's default is 5 s) and actions up to ``within(7)`` s (tests.helpers.within): after a full page
    load the console first reconnects its websocket and hydrates its state, which on a 2-core machine running the
    suite has taken over 5 s now and then, and longer with two suites at once."""
    from playwright.sync_api import expect

    expect.set_options(timeout=within(5) * 1000)
    context = browser.new_context(viewport={"width": 1360, "height": 900}, locale="en-US")
    context.set_default_timeout(within(7) * 1000)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.page_errors = errors  # type: ignore[attr-defined]
    try:
        yield tab
    finally:
        context.close()
