"""OS accounts for jobs: each Crater user's jobs run as an unprivileged account of their own (when Crater is root).

An account is created on demand, the first time one of the user's jobs starts, with the operating system's own
tools (``groupadd``, ``useradd``; never by editing ``/etc/passwd``): a group and a user with one number from the
configured range, no login shell (``nologin``), no home folder (``/nonexistent``, as Debian's ``nobody``; a job's
``HOME`` is its working folder), locked password. The allocation (Crater user -> account name, uid) is kept in the
backend's store (table ``accounts`` in ``local/backend.db``), so a user keeps the same uid for good, and two jobs
of one user share an account while two users never do.

Names: ``<prefix><slug>``, where the slug is the user name's DNS slug (:func:`crater_app.domain.naming.safe_slug`,
kubespawner's scheme, the one every Crater name derived from a user name uses) cut to fit 32 characters with the
prefix (``useradd``'s limit, as ``LOGIN_NAME_MAX`` on Linux). A slug is lower-case ASCII letters, digits and
``-`` and starts with a letter, so with a prefix that is a POSIX name start the account name is a portable POSIX
user name (``[a-z_][a-z0-9_-]*``). A user name that is its own slug keeps it (``alice`` -> ``crater-alice``); any
other gets the letters it can keep plus ``---`` and 8 hex digits of the name's SHA-256 (``Élodie`` ->
``crater-elodie---<hash>``, ``张三`` -> ``crater-x---<hash>``, ``bob_2`` -> ``crater-bob-2---<hash>``), so two
names never share an account. When a name is taken by an account that is not this Crater's for that user, the next
candidates are the same scheme's hashed form and then longer hashes (12, 16 digits) where they fit.

Accounts made before this scheme (``crater-elodie-3f9a1c2b``, ``crater-bob_2``) keep their names: the allocation in
the store is looked up first, and only users without one get a name from this scheme.

Default uid range 60514-61183: the span systemd leaves free between ``systemd-homed`` users (60001-60513) and
``DynamicUser=`` services (61184-65519), above Debian's regular users (``UID_MAX`` 60000); systemd's
``docs/UIDS-GIDS.md``.
"""

from __future__ import annotations

import grp
import hashlib
import pwd
import re
import shutil
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from itertools import chain
from typing import Iterator

from crater_app.domain.errors import InvalidInput
from crater_app.domain.naming import SLUG_HASH_CHARS, safe_slug

DEFAULT_UID_RANGE = (60514, 61183)
DEFAULT_PREFIX = "crater-"
NAME_MAX = 32
PREFIX_MAX = 16
#: the lowest uid Crater accepts for job accounts: below it are the system's own accounts (Debian: 0-999)
UID_FLOOR = 1000
UID_CEILING = 2**31 - 2
_PREFIX = re.compile(r"[a-z_][a-z0-9_-]*")
#: hex digits of the hash in the further name candidates (the first hashed one has the slug's own 8)
_LONGER_HASHES = (12, 16)
#: the highest number :func:`account_names` appends (the default uid range holds 670 accounts)
MAX_NUMBERED = 100_000
#: exit codes of groupadd/useradd (shadow-utils manual pages)
_UID_TAKEN, _NAME_TAKEN, _BUSY = 4, 9, 10
_LOCK_RETRIES = 8


@dataclass(frozen=True)
class Account:
    """One job account: the Crater ``user`` it serves, its OS ``name``, ``uid`` and ``gid`` (the same number)."""

    user: str
    name: str
    uid: int
    gid: int


class AccountError(Exception):
    """An account could not be made: ``code`` (``event.<code>`` in the catalogue) and its ``args``."""

    def __init__(self, code: str, **args: object) -> None:
        super().__init__(code)
        self.code = code
        self.args_ = args


def check_settings(uid_range: tuple[int, int], prefix: str) -> None:
    """Validate the account settings.

    Raises:
        InvalidInput: ``CRATER_LOCAL_UID_MIN``/``CRATER_LOCAL_UID_MAX`` outside 1000..2^31-2 or in the wrong order;
            ``CRATER_LOCAL_ACCOUNT_PREFIX`` not a POSIX name start of at most 16 characters.
    """
    low, high = uid_range
    if not UID_FLOOR <= low <= UID_CEILING:
        raise InvalidInput("local.uid_min", "CRATER_LOCAL_UID_MIN", value=low, min=UID_FLOOR, max=UID_CEILING)
    if not low <= high <= UID_CEILING:
        raise InvalidInput("local.uid_max", "CRATER_LOCAL_UID_MAX", value=high, min=low, max=UID_CEILING)
    if not _PREFIX.fullmatch(prefix) or len(prefix) > PREFIX_MAX:
        raise InvalidInput("local.account_prefix", "CRATER_LOCAL_ACCOUNT_PREFIX", value=prefix, max=PREFIX_MAX)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def account_names(user: str, prefix: str = DEFAULT_PREFIX) -> Iterator[str]:
    """The names to try for ``user``'s account, best first (see the module docstring): ``prefix`` + the user name's
    slug, then the slug's hashed form (when the name kept itself) and longer hashes, for when one is taken by an
    unrelated account (another Crater on the same host makes ``crater-admin`` too), then the slug numbered ``-2``,
    ``-3``, ... up to :data:`MAX_NUMBERED` (more than any uid range holds). Each is at most :data:`NAME_MAX`
    characters."""
    room = NAME_MAX - len(prefix)
    first = safe_slug(user, room)
    yield prefix + first
    for size in (SLUG_HASH_CHARS, *_LONGER_HASHES):
        if room < size + 5:  # safe_slug's own minimum: a separator, the hash and two letters
            break
        name = prefix + safe_slug(user, room, hash_chars=size, always_hash=True)
        if name != prefix + first:
            yield name
    for number in range(2, MAX_NUMBERED + 1):
        tail = f"-{number}"
        yield prefix + safe_slug(user, room - len(tail)) + tail


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    """Run an account tool, again while another tool holds the account files' lock."""
    for attempt in range(_LOCK_RETRIES):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if done.returncode != _BUSY and "lock" not in (done.stderr or "").lower():
            return done
        time.sleep(0.05 * (attempt + 1))
    return done


def tools_available() -> bool:
    """Whether ``groupadd`` and ``useradd`` are installed."""
    return bool(shutil.which("groupadd") and shutil.which("useradd"))


def _nologin() -> str:
    return next((p for p in ("/usr/sbin/nologin", "/sbin/nologin") if shutil.which(p)), "/bin/false")


def _create_os_account(name: str, uid: int, comment: str) -> str:
    """Create group and user ``name`` with ``uid``; ``"ok"``, ``"uid-taken"`` or ``"name-taken"``.

    Raises:
        AccountError: any other failure (``local.account_tool``, with the tool's message).
    """
    done = _run(["groupadd", "--gid", str(uid), name])
    if done.returncode in (_UID_TAKEN, _NAME_TAKEN):
        return "uid-taken" if done.returncode == _UID_TAKEN else "name-taken"
    if done.returncode != 0:
        raise AccountError("local.account_tool", tool="groupadd", error=(done.stderr or "").strip()[:300])
    done = _run(["useradd", "--uid", str(uid), "--gid", str(uid), "--no-create-home", "--home-dir", "/nonexistent",
                 "--shell", _nologin(), "--comment", comment, "--no-log-init", name])
    if done.returncode == 0:
        return "ok"
    _run(["groupdel", name])
    if done.returncode in (_UID_TAKEN, _NAME_TAKEN):
        return "uid-taken" if done.returncode == _UID_TAKEN else "name-taken"
    raise AccountError("local.account_tool", tool="useradd", error=(done.stderr or "").strip()[:300])


def _in_use(uid: int) -> bool:
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(uid)
            return True
        except KeyError:
            continue
    return False


class Accounts:
    """Allocates job accounts (see the module docstring).

    Args:
        instance: what tells this Crater from another on the same machine (its data folder): an account made by
            one is never taken over by the other.
        uid_range: ``(lowest, highest)`` uid (inclusive). prefix: the start of every account name.
    """

    def __init__(self, instance: str, uid_range: tuple[int, int] = DEFAULT_UID_RANGE,
                 prefix: str = DEFAULT_PREFIX) -> None:
        check_settings(uid_range, prefix)
        self.instance = instance
        self.uid_range = uid_range
        self.prefix = prefix

    def comment(self, user: str) -> str:
        """The comment (GECOS) field of ``user``'s account: it marks the account as this Crater's, for ``user``."""
        return f"Crater job account {_digest(self.instance, user)[:24]}"

    def for_user(self, conn: sqlite3.Connection, user: str) -> Account:
        """``user``'s account, made now if needed; call inside a write transaction of the backend's store.

        Raises:
            AccountError: ``local.uid_range_full`` (every uid of the range is taken), ``local.account_tool``.
        """
        row = conn.execute("SELECT account, uid, gid FROM accounts WHERE user = ?", (user,)).fetchone()
        if row is not None:
            account = Account(user, row[0], row[1], row[2])
            try:
                pwd.getpwnam(account.name)
            except KeyError:  # removed by an administrator: the same name and number again
                if _create_os_account(account.name, account.uid, self.comment(user)) != "ok":
                    raise AccountError("local.account_lost", account=account.name, uid=account.uid) from None
            return account
        account = self._find_or_create(conn, user)
        conn.execute("INSERT INTO accounts (user, account, uid, gid, created_at) VALUES (?, ?, ?, ?, ?)",
                     (user, account.name, account.uid, account.gid, time.time()))
        return account

    def _find_or_create(self, conn: sqlite3.Connection, user: str) -> Account:
        comment = self.comment(user)
        low, high = self.uid_range
        candidates = account_names(user, self.prefix)
        # The names in use up to the first free one: one of them is this user's account when it was made before its
        # allocation was committed (it took the first name free then). Names after the first free one are only
        # looked at when creating fails for that one: there are more than 100,000 of them.
        for name in candidates:
            try:
                found = pwd.getpwnam(name)
            except KeyError:
                first_free = name
                break
            if found.pw_gecos == comment and low <= found.pw_uid <= high:
                return Account(user, name, found.pw_uid, found.pw_gid)  # made before its allocation was committed
        else:
            raise AccountError("local.account_names_taken", user=user)
        taken = {r[0] for r in conn.execute("SELECT uid FROM accounts")}
        for name in chain([first_free], candidates):
            for uid in range(low, high + 1):
                if uid in taken or _in_use(uid):
                    continue
                result = _create_os_account(name, uid, comment)
                if result == "ok":
                    return Account(user, name, uid, uid)
                if result == "name-taken":
                    break  # another process took the name meanwhile: the next name
                taken.add(uid)  # "uid-taken": someone took it meanwhile
            else:
                raise AccountError("local.uid_range_full", min=low, max=high)
        raise AccountError("local.account_names_taken", user=user)
