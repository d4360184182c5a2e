"""Process wrapper for one local job (stdlib only; started by :mod:`crater_app.cluster.local`).

Usage: ``python local_runner.py EXIT_FILE CWD -- ARGV...``. It runs ARGV in CWD (stdout/stderr are inherited:
the backend points them at the job's log), waits, and writes the exit status atomically to EXIT_FILE:
the child's code, or 128+N when it died of signal N (the shell convention), or 127 when ARGV[0] cannot be
executed. It survives the web process: it lives in its own session, so a restarted Crater re-adopts it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys


def _write_exit(path: str, code: int) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(str(code))
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    """Run the job command; return the recorded exit status."""
    exit_file, cwd, sep, *command = argv
    if sep != "--" or not command:
        print("crater runner: usage: local_runner.py EXIT_FILE CWD -- ARGV...", file=sys.stderr)
        return 2
    # A Python-level handler (not SIG_IGN) so that the child gets the default disposition after exec,
    # while this wrapper outlives the group-wide SIGTERM long enough to record the child's status.
    signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        child = subprocess.Popen(command, cwd=cwd)
    except OSError as exc:
        print(f"crater: cannot execute {command[0]!r}: {exc.strerror or exc}", flush=True)
        _write_exit(exit_file, 127 if isinstance(exc, FileNotFoundError) else 126)
        return 127
    while True:
        try:
            code = child.wait()
            break
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            continue
    status = 128 - code if code < 0 else code
    _write_exit(exit_file, status)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
