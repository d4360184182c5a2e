"""Process wrapper for one local job (stdlib only; started by :mod:`crater_app.cluster.local.processes`).

Usage: ``python -I -S runner.py EXIT_FILE CWD [--cgroup DIR]... [--user UID:GID] [--rlimit-data BYTES]
[--env-fd FD] [--log FILE] -- ARGV...``. It runs ARGV in CWD, waits, and writes the exit status atomically to EXIT_FILE as JSON:
``{"exit_code": N, "signal": S}``. ``exit_code`` is what a shell reports: the child's own code, ``128 + S`` when it
died of signal ``S`` (then ``signal`` is ``S``, else ``null``), 126 when it could not be set up or executed, 127
when ARGV[0] does not exist. Only waitpid tells a signal from a program that called ``exit(137)`` itself, so the
runner records both. It survives the web process: it lives in its own session, so a restarted Crater re-adopts it.

- Limits and identity: between fork and exec the job's process (not the runner) joins each ``--cgroup`` directory
  (its pid written to ``cgroup.procs``), gets ``RLIMIT_DATA`` when ``--rlimit-data`` is given (the fallback where no
  memory cgroup can be made), and drops to ``--user`` (supplementary groups cleared, then gid, then uid), in that
  order: joining a cgroup needs the runner's privileges. The runner stays outside the job's cgroups, so its own
  memory is not charged to the job and the OOM killer of the job's cgroup never picks it.
- Environment: the runner's own is fixed and holds nothing of the job's; with ``--env-fd`` it reads the job's
  environment (a JSON object of strings) from descriptor FD, closes it, and gives it to ARGV only, through
  ``execve`` after the privilege drop (:mod:`crater_app.cluster.local.environment` says why). Without it the job
  inherits the runner's environment.
- Output: the runner's stdout is the job's log (the backend points it at ``--log``, by default ``output.log`` next to
  EXIT_FILE; one log per replica of a larger workload). The
  job writes into a pipe that the runner copies to the log, so that the log stays bounded: past
  :data:`LOG_LIMIT_BYTES` the middle is dropped (the first :data:`LOG_HEAD_BYTES` and the last
  :data:`LOG_TAIL_BYTES` are kept, with a line saying how much was dropped). A job printing in a loop would
  otherwise fill the disk that holds Crater's database within minutes.
- Descendants: on Linux the runner is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so a process the job
  detaches (``setsid``, double fork) stays below the runner instead of moving to init. SIGTERM is passed on to
  descendants outside the job's process group (the backend signals that group), and to the job itself when it came
  while the job was being started (between fork and exec it would be lost); when the job's main process has exited
  every descendant left is killed, as the backend does with the process group and the job's cgroup.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX
    resource = None  # type: ignore[assignment]

LOG_LIMIT_BYTES = 256 * 1024 * 1024
LOG_HEAD_BYTES = 8 * 1024 * 1024
LOG_TAIL_BYTES = 32 * 1024 * 1024
PR_SET_CHILD_SUBREAPER = 36


USAGE = ("usage: runner.py EXIT_FILE CWD [--cgroup DIR]... [--user UID:GID] [--rlimit-data BYTES] [--env-fd FD]"
         " [--log FILE] -- ARGV...")


def _write_exit(path: str, code: int, sig: int | None = None) -> None:
    """Write ``{"exit_code": code, "signal": sig}`` to ``path`` atomically (a temporary file, then a rename)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(json.dumps({"exit_code": code, "signal": sig}))
    os.replace(tmp, path)


class Options:
    """The runner's options (the words between CWD and ``--``): the job's ``cgroups`` folders, ``user``
    ``(uid, gid)``, ``rlimit_data`` bytes, ``env_fd``, the descriptor holding the job's environment, and ``log`` the
    path of the log the runner's stdout writes (``None``: ``output.log`` next to the exit file). (A plain class:
    ``dataclasses`` would cost the runner's start-up the import of ``inspect``.)"""

    def __init__(self, cgroups: tuple[str, ...] = (), user: tuple[int, int] | None = None,
                 rlimit_data: int | None = None, env_fd: int | None = None, log: str | None = None) -> None:
        self.cgroups, self.user, self.rlimit_data, self.env_fd = cgroups, user, rlimit_data, env_fd
        self.log = log


def parse_options(words: list[str]) -> Options:
    """The :class:`Options` in ``words``.

    Raises:
        ValueError: an unknown option, a missing value, or a value that is not a whole number.
    """
    cgroups: list[str] = []
    found: dict[str, object] = {}
    pending = list(words)
    while pending:
        option = pending.pop(0)
        if not pending:
            raise ValueError(f"{option} needs a value")
        value = pending.pop(0)
        if option == "--cgroup":
            cgroups.append(value)
        elif option == "--user":
            uid, _, gid = value.partition(":")
            found["user"] = (int(uid), int(gid))
        elif option == "--rlimit-data":
            found["rlimit_data"] = int(value)
        elif option == "--env-fd":
            found["env_fd"] = int(value)
        elif option == "--log":
            found["log"] = value
        else:
            raise ValueError(f"unknown option {option}")
    return Options(tuple(cgroups), **found)  # type: ignore[arg-type]


def read_environment(fd: int) -> dict[str, str]:
    """The job's environment from descriptor ``fd`` (read to its end, then closed).

    Raises:
        OSError: ``fd`` cannot be read. ValueError: it does not hold a JSON object of strings.
    """
    chunks = []
    try:
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    env = json.loads(b"".join(chunks).decode("utf-8"))
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ValueError("the job's environment is not a JSON object of strings")
    return env


def _child_setup(cgroups: tuple[str, ...], user: tuple[int, int] | None, rlimit_data: int | None):
    """The function run in the job's process between fork and exec (the runner has one thread then, so this is
    safe): join the cgroups, set RLIMIT_DATA, drop to ``user``. A failure is written to the job's log and the
    process ends with 126, as a shell reports a command that cannot be run."""

    def setup() -> None:
        step = "joining its cgroup"
        try:
            pid = str(os.getpid()).encode()
            for directory in cgroups:
                fd = os.open(os.path.join(directory, "cgroup.procs"), os.O_WRONLY)
                try:
                    os.write(fd, pid)
                finally:
                    os.close(fd)
            if rlimit_data is not None and resource is not None:
                step = "setting its memory limit"
                resource.setrlimit(resource.RLIMIT_DATA, (rlimit_data, rlimit_data))
            if user is not None:
                step = "switching to its OS account"
                os.setgroups([])
                os.setgid(user[1])
                os.setuid(user[0])
        except OSError as exc:
            os.write(2, f"crater: the job could not be started: {step} failed: {exc.strerror or exc}\n".encode())
            os._exit(126)

    return setup


def _become_subreaper() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no prctl: descendants may escape (as before)
        pass


def _descendants() -> list[int]:
    """Pids of this process's live descendants (from ``/proc``; empty where there is none)."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:  # pragma: no cover - not Linux
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
        if len(fields) > 1 and fields[0] != b"Z":
            parents.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [os.getpid()]
    while todo:
        for child in parents.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill_descendants() -> None:
    """SIGKILL every descendant (a few rounds: one may fork while the others are killed) and reap them."""
    for _ in range(20):
        left = _descendants()
        if not left:
            return
        _signal_all(left, signal.SIGKILL)
        _reap()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            continue
        except OSError:  # e.g. the disk is full: drop the output, keep the job running
            return


class _Log:
    """Copies the job's output pipe to the log (fd 1), keeping the file under :data:`LOG_LIMIT_BYTES`."""

    def __init__(self, path: str) -> None:
        self.path, self.limit, self.head, self.tail = path, LOG_LIMIT_BYTES, LOG_HEAD_BYTES, LOG_TAIL_BYTES
        try:
            self.trimmable = os.path.samestat(os.fstat(1), os.stat(path))  # only ever truncate the log we write
            self.size = os.fstat(1).st_size
        except OSError:
            self.trimmable, self.size = False, 0
        self.head_end: int | None = None
        self.marker_len = 0  # length of the "dropped" line written by the last trim
        self.dropped = 0

    def pump(self, fd: int) -> None:
        """Copy ``fd`` to the log until end of file."""
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except InterruptedError:  # pragma: no cover - PEP 475 retries for us
                continue
            except OSError:  # pragma: no cover
                return
            if not data:
                return
            if self.trimmable and self.size + len(data) > self.limit:
                self._trim()
            _write_all(1, data)
            self.size += len(data)

    def _trim(self) -> None:
        """Cut the log to its head, a line saying how much was dropped, and its last ``tail`` bytes."""
        try:
            with open(self.path, "rb") as fh:
                if self.head_end is None:  # the head ends at the last line break within the first `head` bytes
                    first = fh.read(self.head)
                    cut = first.rfind(b"\n")
                    self.head_end = cut + 1 if cut >= 0 else len(first)
                size = fh.seek(0, os.SEEK_END)
                start = max(self.head_end + self.marker_len, size - self.tail)  # the last marker goes too
                fh.seek(start)
                kept = fh.read()
        except OSError:  # pragma: no cover
            return
        if b"\n" in kept[:-1]:  # let the kept part start at a line
            skip = kept.index(b"\n") + 1
            start, kept = start + skip, kept[skip:]
        self.dropped += start - self.head_end - self.marker_len
        marker = (f"\n[crater: {self.dropped} bytes of output dropped here; a job log keeps its first "
                  f"{self.head} and last {self.tail} bytes]\n").encode()
        os.ftruncate(1, self.head_end)  # fd 1 is opened for appending: the next writes go to the new end
        _write_all(1, marker + kept)
        self.marker_len = len(marker)
        self.size = self.head_end + len(marker) + len(kept)


def main(argv: list[str]) -> int:
    """Run the job command; return the recorded exit status (shell style)."""
    try:
        exit_file, cwd, *rest = argv
        split = rest.index("--")
        options = parse_options(rest[:split])
        command = rest[split + 1:]
    except ValueError as exc:
        print(f"crater runner: {exc}; {USAGE}", file=sys.stderr)
        return 2
    if not command:
        print(f"crater runner: {USAGE}", file=sys.stderr)
        return 2
    env = None
    if options.env_fd is not None:
        try:
            env = read_environment(options.env_fd)
        except (OSError, ValueError) as exc:
            print(f"crater: the job could not be started: its environment could not be read: {exc}", flush=True)
            _write_exit(exit_file, 126)
            return 126
    _become_subreaper()
    own_group = os.getpgrp()
    terminated = threading.Event()

    def on_term(*_: object) -> None:
        # The backend signals the job's process group; pass it on to descendants that left the group (setsid).
        # A Python-level handler (not SIG_IGN), so that the child gets the default disposition after exec, while
        # this wrapper outlives the group-wide SIGTERM long enough to record the child's status.
        terminated.set()
        outside = []
        for pid in _descendants():
            try:
                if os.getpgid(pid) != own_group:
                    outside.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
        _signal_all(outside, signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_term)
    read_fd, write_fd = os.pipe()
    try:
        child = subprocess.Popen(command, cwd=cwd, env=env, stdout=write_fd, stderr=write_fd,
                                 preexec_fn=_child_setup(options.cgroups, options.user, options.rlimit_data))
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        print(f"crater: cannot execute {command[0]!r}: {exc.strerror or exc}", flush=True)
        _write_exit(exit_file, 127 if isinstance(exc, FileNotFoundError) else 126)
        return 127
    os.close(write_fd)  # the job (and what it starts) holds the only write ends: EOF when they are all gone
    if terminated.is_set():
        # A stop that came while the child was being started: between fork and exec the child still had this
        # handler, so the group's SIGTERM did not end it. Now that it runs the job, it gets its own.
        child.send_signal(signal.SIGTERM)
    log = _Log(options.log or os.path.join(os.path.dirname(exit_file), "output.log"))
    pump = threading.Thread(target=log.pump, args=(read_fd,), daemon=True)
    pump.start()
    while True:
        try:
            code = child.wait()
            break
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            continue
    _kill_descendants()
    pump.join(timeout=5.0)  # the rest of the output (no descendant holds the pipe any more)
    status, sig = (128 - code, -code) if code < 0 else (code, None)
    _write_exit(exit_file, status, sig)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
