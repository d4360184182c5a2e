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
from dataclasses import dataclass
from pathlib import Path

import psutil

RUNNER = str(Path(__file__).with_name("runner.py"))
#: Variables of the web process that a job must not inherit: credentials (any name holding one of these words)...
_SECRET_MARKERS = ("PASSWORD", "PASSWD", "SECRET", "TOKEN", "CREDENTIAL", "PRIVATE_KEY", "API_KEY", "ACCESS_KEY",
                   "DATABASE_URL", "_DSN")
#: ...and, when the job runs under an OS account of its own, the session of Crater's user (its agent sockets, its
#: runtime folder, its home and name), which the job's account has no business reaching.
_SESSION_VARIABLES = ("SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "KRB5CCNAME", "XDG_RUNTIME_DIR",
                      "DBUS_SESSION_BUS_ADDRESS", "XAUTHORITY", "MAIL", "SUDO_USER", "SUDO_UID", "SUDO_GID",
                      "SUDO_COMMAND", "OLDPWD", "PWD")
#: Seconds two readings of a process's start time may differ and still be the same process (psutil rounds).
_SAME_START_S = 1.0


@dataclass(frozen=True)
class ExitStatus:
    """What the runner recorded: ``exit_code`` as a shell reports it (``128 + n`` for signal ``n``) and ``signal``
    the signal number that ended the job's main process (``None`` when it exited by itself, even with 137)."""

    exit_code: int
    signal: int | None = None


def job_environment(base: dict[str, str], spec_env: dict[str, str], uid: str, devices: tuple[int, ...],
                    account: str | None = None, home: Path | None = None) -> dict[str, str]:
    """Environment of a job process: ``base`` without ``CRATER_*`` and secret-looking variables, then the
    spec's ``env``, then ``CRATER_JOB_UID``, ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (indices as NVML/nvidia-smi
    number them), ``CUDA_VISIBLE_DEVICES`` and ``NVIDIA_VISIBLE_DEVICES`` set to exactly ``devices``
    (``""``/``void`` when none, so a CPU job sees no GPU).

    With ``account`` (the job runs as that OS user), the session variables of Crater's own user are dropped too,
    and ``HOME`` is ``home`` (the job's working folder: the account has no other home), ``USER``/``LOGNAME`` the
    account's name.
    """
    env = {
        k: v for k, v in base.items()
        if not k.startswith("CRATER_") and not any(m in k.upper() for m in _SECRET_MARKERS)
        and not (account is not None and k in _SESSION_VARIABLES)
    }
    if account is not None:
        env["USER"] = env["LOGNAME"] = account
        if home is not None:
            env["HOME"] = str(home)
    env.update(spec_env)
    visible = ",".join(str(d) for d in devices)
    env["CRATER_JOB_UID"] = uid
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    env["CUDA_VISIBLE_DEVICES"] = visible
    env["NVIDIA_VISIBLE_DEVICES"] = visible or "void"
    return env


def runner_argv(folder: Path, cwd: Path, command: list[str], cgroups: list[Path] = (),
                user: tuple[int, int] | None = None, rlimit_data: int | None = None) -> list[str]:
    """The command line that starts ``command`` under the runner (see its module docstring for the options)."""
    options: list[str] = []
    for directory in cgroups:
        options += ["--cgroup", str(directory)]
    if user is not None:
        options += ["--user", f"{user[0]}:{user[1]}"]
    if rlimit_data is not None:
        options += ["--rlimit-data", str(rlimit_data)]
    return [sys.executable, "-S", RUNNER, str(folder / "exit_code"), str(cwd), *options, "--", *command]


def spawn(argv: list[str], cwd: Path, env: dict[str, str], log_fd: int) -> tuple[subprocess.Popen, float | None]:
    """Start the runner ``argv`` in a session of its own, output to ``log_fd``; ``(process, its start time)``.

    Raises:
        OSError: the runner could not be started. ValueError: text no process can take (NUL, lone surrogates).
    """
    proc = subprocess.Popen(
        argv, cwd=str(cwd), env=env, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=subprocess.STDOUT,
        start_new_session=True, close_fds=True,
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
