"""Who a job runs as on the local backend, and the folders and file modes that keep it away from Crater's data.

Trust models (``CRATER_LOCAL_ISOLATION``: ``auto``, the default, ``on`` or ``off``):

- ``os-account``: Crater runs as root; each Crater user's jobs run as an unprivileged OS account of their own
  (:mod:`crater_app.cluster.local.accounts`). The data folder is traverse-only for others (0711: a job can reach its
  own working folder but list nothing), Crater's database, secret key and backend store are 0600/0700 and owned by
  root, each job's folder is root's (0711) with its ``output.log`` and ``exit_code`` 0600, and its ``work/`` is
  0700 and owned by the job's account. A job cannot read Crater's database, another user's logs or working
  folders, nor Crater's environment (``/proc/<pid>/environ`` is readable only by the process's own user).
- ``not-root``: Crater does not run as root, so it cannot switch users: jobs run as Crater's own OS user and can
  read (and change) whatever Crater can - its database, other users' job folders. Fit for one person's workstation.
- ``no-tools``: Crater runs as root but ``useradd``/``groupadd`` are missing (``auto`` only): as ``not-root``.
- ``off``: isolation turned off by configuration: as ``not-root`` (as root, jobs run as root).

Every job's ``Started`` status says which model it runs under.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from crater_app.domain.errors import InvalidInput

MODES = ("auto", "on", "off")
ISOLATED, NOT_ROOT, NO_TOOLS, OFF = "os-account", "not-root", "no-tools", "off"
TRUST_MODELS = (ISOLATED, NOT_ROOT, NO_TOOLS, OFF)
#: the mode of folders a job must pass through to reach its working folder (search, no listing)
TRAVERSE_ONLY = 0o711
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def check_mode(value: str, field: str) -> str:
    """``value`` when it is ``auto``, ``on`` or ``off``.

    Raises:
        InvalidInput: ``local.mode`` naming ``field`` (``CRATER_LOCAL_ISOLATION``, ``CRATER_LOCAL_CGROUPS``).
    """
    if value not in MODES:
        raise InvalidInput("local.mode", field, setting=field, value=value, allowed=list(MODES))
    return value


def trust_model(mode: str, euid: int, tools: bool) -> str:
    """The trust model for isolation ``mode`` when Crater runs with effective uid ``euid`` and the account tools
    are (``tools``) or are not installed.

    Raises:
        InvalidInput: ``local.mode`` for an unknown mode; ``local.isolation_unavailable`` when ``mode`` is ``on``
            and Crater is not root or lacks the tools (``reason`` says which).
    """
    check_mode(mode, "CRATER_LOCAL_ISOLATION")
    if mode == "off":
        return OFF
    if euid == 0 and tools:
        return ISOLATED
    reason = NOT_ROOT if euid != 0 else NO_TOOLS
    if mode == "on":
        raise InvalidInput("local.isolation_unavailable", "CRATER_LOCAL_ISOLATION", reason=reason)
    return reason


def _clear_group_and_other(path: Path, keep: int = 0) -> None:
    """Remove the group and other permission bits of ``path`` (never following a link), keeping ``keep``."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return
    mode = stat.S_IMODE(info.st_mode)
    wanted = (mode & 0o7700) | keep
    if wanted != mode:
        os.chmod(path, wanted)


def harden_data_dir(data_dir: Path, jobs_dir: Path, state_dir: Path) -> None:
    """Set the modes of the ``os-account`` model (see the module docstring): ``data_dir`` and ``jobs_dir`` 0711,
    every other entry of ``data_dir`` (the database and its WAL files, ``secret_key``, ``state_dir``...) and
    everything in ``state_dir`` without group/other bits. SQLite gives the WAL files it creates later the mode of
    the database file, so they stay closed too. Called at start and again on adoption."""
    for folder in (data_dir, jobs_dir):
        info = os.lstat(folder)
        if stat.S_IMODE(info.st_mode) != TRAVERSE_ONLY:
            os.chmod(folder, TRAVERSE_ONLY)
    for entry in os.scandir(data_dir):
        path = Path(entry.path)
        if path != jobs_dir:
            _clear_group_and_other(path)
    for entry in os.scandir(state_dir):
        _clear_group_and_other(Path(entry.path))


def closed_ancestors(data_dir: Path) -> list[Path]:
    """The folders above ``data_dir`` (an absolute, resolved path; from ``/`` down) that other accounts cannot
    traverse (no ``o+x``). Under ``os-account`` a job's account is one of those others: with any such folder above
    the data folder, no absolute path into the job's folder resolves for the job - its rendezvous host files
    (``CRATER_HOSTS_DIR``, ``CRATER_MPI_HOSTFILE``), ``$HOME`` (its ``work/``), paths written in its command. A
    folder that cannot be read (``OSError``) counts as closed."""
    closed = []
    for folder in reversed(data_dir.parents):
        try:
            mode = os.stat(folder).st_mode
        except OSError:
            closed.append(folder)
            continue
        if not mode & stat.S_IXOTH:
            closed.append(folder)
    return closed


def make_dirs(top: Path, relative: str | None, owner: tuple[int, int] | None) -> Path:
    """Create ``top/relative`` folder by folder (mode 0700, each given to ``owner`` = ``(uid, gid)`` when set) and
    return it. Each step opens the folder it made without following links (``O_NOFOLLOW``), so a link planted in a
    working folder (by an earlier attempt of the job) cannot send Crater's privileges elsewhere.

    Raises:
        ValueError: ``relative`` is absolute or has ``..``. OSError: a name too long, a file in the way...
    """
    parts = [p for p in (relative or "").replace("\\", "/").split("/") if p not in ("", ".")]
    if (relative or "").startswith("/") or ".." in parts:
        raise ValueError("working_dir must stay inside the job's folder")
    fd = os.open(top, _DIR_FLAGS)
    try:
        if owner is not None:
            os.fchown(fd, *owner)
            os.fchmod(fd, 0o700)
        for part in parts:
            try:
                os.mkdir(part, 0o700, dir_fd=fd)
            except FileExistsError:
                pass
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
            if owner is not None:
                os.fchown(fd, *owner)
    finally:
        os.close(fd)
    return top.joinpath(*parts)


def prepare_job_folder(folder: Path, working_dir: str | None, owner: tuple[int, int] | None) -> Path:
    """Create a job's folder and its ``work/`` (see the module docstring for the modes when ``owner`` is the job's
    account); return the working folder (``work/<working_dir>``).

    Raises:
        ValueError, OSError: as :func:`make_dirs`.
    """
    folder.mkdir(parents=True, exist_ok=True)
    work = folder / "work"
    if owner is not None:
        os.chmod(folder, TRAVERSE_ONLY)  # root's; the job passes through it to work/
        try:
            os.mkdir(work, 0o700)
        except FileExistsError:
            pass
    else:
        work.mkdir(exist_ok=True)
    return make_dirs(work, working_dir, owner)


def open_log(folder: Path, name: str = "output.log") -> int:
    """Open the log ``name`` in the job's folder for appending (created 0600, never through a link; its own folder
    made 0700 when missing); the file descriptor."""
    path = folder / name
    if path.parent != folder:
        path.parent.mkdir(mode=0o700, exist_ok=True)
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
