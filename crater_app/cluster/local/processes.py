"""Process supervision for the local backend: start a job's runner, watch it, signal and kill what is left.

Each workload runs under :mod:`crater_app.cluster.local.runner` (a small stdlib-only wrapper) as the leader of its
own process group and session, so that it survives the web process and one ``killpg`` reaches the whole job. The
runner records the job's exit status in ``<job folder>/exit_code`` (JSON, see :func:`read_exit`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psutil

from crater_app.cluster.local.environment import encode, runner_environment

RUNNER = str(Path(__file__).with_name("runner.py"))
#: Seconds two readings of a process's start time may differ and still be the same process (psutil rounds).
_SAME_START_S = 1.0


@dataclass(frozen=True)
class ExitStatus:
    """What the runner recorded: ``exit_code`` as a shell reports it (``128 + n`` for signal ``n``) and ``signal``
    the signal number that ended the job's main process (``None`` when it exited by itself, even with 137)."""

    exit_code: int
    signal: int | None = None


def runner_argv(folder: Path, cwd: Path, command: list[str], cgroups: list[Path] = (),
                user: tuple[int, int] | None = None, rlimit_data: int | None = None, *, exit_name: str = "exit_code",
                log_name: str = "output.log") -> list[str]:
    """The command line that starts ``command`` under the runner (see its module docstring for the options), with
    its exit file and its log at ``exit_name`` and ``log_name`` in ``folder`` (one replica's: see
    :mod:`crater_app.cluster.local.replicas`).

    The interpreter runs in isolated mode (``-I``: no ``PYTHON*`` variable, no user site, no script folder on
    ``sys.path``) without ``site`` (``-S``; the runner uses the standard library only) and in UTF-8 mode: the runner
    may be root, and nothing of the job's may steer it (:mod:`crater_app.cluster.local.environment`). The job's
    environment comes on the descriptor :func:`spawn` adds (``--env-fd``).
    """
    options: list[str] = []
    for directory in cgroups:
        options += ["--cgroup", str(directory)]
    if user is not None:
        options += ["--user", f"{user[0]}:{user[1]}"]
    if rlimit_data is not None:
        options += ["--rlimit-data", str(rlimit_data)]
    if log_name != "output.log" or exit_name != "exit_code":
        options += ["--log", str(folder / log_name)]
    return [sys.executable, "-I", "-S", "-X", "utf8", RUNNER, str(folder / exit_name), str(cwd), *options, "--",
            *command]


def spawn(argv: list[str], folder: Path, job_env: dict[str, str], log_fd: int
          ) -> tuple[subprocess.Popen, float | None]:
    """Start the runner ``argv`` (:func:`runner_argv`) in a session of its own, in the job's ``folder`` (Crater's,
    not the job's), output to ``log_fd``; ``(process, its start time)``.

    The runner's environment is :func:`~crater_app.cluster.local.environment.runner_environment`; ``job_env`` (the
    environment of the job's program) goes to it as an unlinked temporary file in ``folder`` whose descriptor it
    inherits and names with ``--env-fd``: nobody else can open it, and it is gone when the runner has read it.

    Raises:
        OSError: the runner could not be started. ValueError: text no process can take (NUL, lone surrogates).
    """
    data = encode(job_env)
    with tempfile.TemporaryFile(dir=folder) as env_file:
        env_file.write(data)
        env_file.flush()
        env_file.seek(0)
        fd = env_file.fileno()
        split = argv.index("--")
        proc = subprocess.Popen(
            [*argv[:split], "--env-fd", str(fd), *argv[split:]], cwd=str(folder), env=runner_environment(),
            stdin=subprocess.DEVNULL, stdout=log_fd, stderr=subprocess.STDOUT, start_new_session=True,
            close_fds=True, pass_fds=(fd,),
        )
    try:
        started = psutil.Process(proc.pid).create_time()
    except psutil.NoSuchProcess:  # pragma: no cover - exited within microseconds
        started = None
    return proc, started


def read_exit(path: Path) -> ExitStatus | None:
    """The status in the runner's ``exit_code`` file, or ``None`` when there is none (yet). A file holding only a
    number (written by runners of earlier versions) is an exit code without a signal."""
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
    if isinstance(data, int) and not isinstance(data, bool):
        return ExitStatus(data)
    if isinstance(data, dict) and isinstance(data.get("exit_code"), int):
        sig = data.get("signal")
        return ExitStatus(data["exit_code"], sig if isinstance(sig, int) and not isinstance(sig, bool) else None)
    return None


def log_tail(path: Path, tail_bytes: int) -> str:
    """The last ``tail_bytes`` of the log at ``path``, decoded as UTF-8 (invalid bytes replaced; ``""`` when there is
    no log). When the tail starts inside a line, that partial first line is dropped (unless nothing would be left)."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(0, size - tail_bytes)
            fh.seek(max(0, start - 1))  # one byte more: does the tail start at a line boundary?
            data = fh.read(size - start + (1 if start else 0))
    except FileNotFoundError:
        return ""
    if start:
        before, data = data[:1], data[1:]
        rest = data.split(b"\n", 1)[1] if b"\n" in data else b""
        if before != b"\n" and rest:
            data = rest
    return data.decode("utf-8", "replace")


def signal_group(pid: int | None, sig: int) -> None:
    """Send ``sig`` to the process group led by ``pid`` (nothing when it is gone)."""
    if not pid:
        return
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def alive(pid: int | None, pid_start: float | None) -> bool:
    """Whether the runner ``pid`` (started at ``pid_start``, epoch seconds) still runs and is not a zombie."""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        if pid_start is not None and abs(proc.create_time() - pid_start) > _SAME_START_S:
            return False  # pid reused by another process
        return proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def kill_leftovers(pid: int | None, pid_start: float | None) -> None:
    """SIGKILL what is left of a finished workload's process group (background children, or children
    that ignored SIGTERM while the main process exited), so its devices are really free."""
    if not pid:
        return
    try:
        if pid_start is not None and abs(psutil.Process(pid).create_time() - pid_start) > _SAME_START_S:
            return  # the number now belongs to an unrelated process (and so its group is not ours)
    except psutil.NoSuchProcess:
        pass  # the runner is gone; a live group with its id can only hold the workload's leftovers
    except psutil.AccessDenied:  # pragma: no cover
        return
    signal_group(pid, signal.SIGKILL)


def kill_tree(pid: int | None, pid_start: float | None) -> None:
    """SIGKILL the runner ``pid``, its descendants (also those that left its process group: the runner is a
    child subreaper, so detached ones stay below it) and its process group."""
    if not pid:
        return
    try:
        runner = psutil.Process(pid)
        if pid_start is None or abs(runner.create_time() - pid_start) <= _SAME_START_S:
            for proc in runner.children(recursive=True):
                try:
                    proc.kill()
                except psutil.Error:
                    pass
    except psutil.Error:
        pass
    signal_group(pid, signal.SIGKILL)
