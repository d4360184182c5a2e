"""Isolation on the local backend (as root, as CI runs): each Crater user's jobs run as an OS account of their own
that cannot read Crater's database, secrets, environment, nor another user's logs and folders."""

from __future__ import annotations

import logging
import os
import pwd
import secrets
import shutil
import sqlite3
import stat
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from crater_app.cluster.local import LocalBackend
from crater_app.cluster.local.accounts import DEFAULT_UID_RANGE, tools_available
from crater_app.domain.naming import safe_slug
from tests.conftest import gpu_devices, kill_backend_processes
from tests.helpers import gang, wait_for, workload, with_task

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not tools_available(),
                                reason="isolation needs root and useradd/groupadd")


@pytest.fixture
def isolated():
    """``(build(**options) -> LocalBackend, data_dir)``: backends with isolation on, in a data folder under /tmp (a
    job's account must be able to pass through every folder above its own); accounts removed afterwards."""
    top = Path(tempfile.mkdtemp(prefix="crater-isolation-", dir="/tmp"))
    os.chmod(top, 0o755)
    data = top / "data"
    prefix = f"ct{secrets.token_hex(3)}-"  # accounts of this test only
    made: list[LocalBackend] = []

    def build(**options) -> LocalBackend:
        options.setdefault("cancel_grace_s", 0.3)
        be = LocalBackend(data, devices=gpu_devices(2), isolation="on", account_prefix=prefix, **options)
        made.append(be)
        return be

    yield build, data
    kill_backend_processes(data)
    names = [r[0] for r in sqlite3.connect(data / "local" / "backend.db").execute("SELECT account FROM accounts")]
    for be in made:
        be.close()
    for name in names:
        subprocess.run(["userdel", name], capture_output=True)
        subprocess.run(["groupdel", name], capture_output=True)
    shutil.rmtree(top, ignore_errors=True)


def _run(be: LocalBackend, w):
    be.create(w)
    return wait_for(lambda: (st := be.status(w.uid)) and st.raw_state in ("Succeeded", "Failed", "Cancelled") and st,
                    15, step=be.tick, what=f"{w.uid} finished")


def _as(user: str, command: str, **env):
    return with_task(replace(workload(["sh", "-c", command]), user=user), env=env)


def _ids(be: LocalBackend, user: str) -> tuple[int, int, str]:
    w = _as(user, "id -u; id -g; id -G")
    st = _run(be, w)
    assert st.raw_state == "Succeeded", be.read_logs(w.uid)
    uid, gid, groups = be.read_logs(w.uid).split("\n")[:3]
    return int(uid), int(gid), groups


def test_two_jobs_of_one_user_share_an_account_and_two_users_do_not(isolated):
    build, _ = isolated
    be = build()
    first, second, bob = _ids(be, "alice"), _ids(be, "alice"), _ids(be, "bob")
    assert first == second, "one account per Crater user"
    assert first[0] != bob[0] and first[1] != bob[1]
    for uid, gid, groups in (first, bob):
        assert DEFAULT_UID_RANGE[0] <= uid <= DEFAULT_UID_RANGE[1] and gid == uid
        assert groups == str(gid), "no supplementary groups (none of Crater's)"
        account = pwd.getpwuid(uid)
        assert account.pw_shell.endswith("nologin") and account.pw_dir == "/nonexistent"


def test_a_job_cannot_reach_craters_data_another_users_log_or_craters_environment(isolated, monkeypatch):
    build, data = isolated
    data.mkdir(parents=True)
    db = sqlite3.connect(data / "crater.db")
    db.execute("CREATE TABLE users (name TEXT, role TEXT)")
    db.execute("INSERT INTO users VALUES ('alice', 'user')")
    db.commit()
    db.close()
    (data / "secret_key").write_text("00" * 32)
    for path in (data, data / "crater.db", data / "secret_key"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)  # as the usual umask leaves them, until the backend starts
    monkeypatch.setenv("CRATER_SECRET_KEY", "secret-in-craters-environment")
    be = build()

    alice = _as("alice", "echo alice-private-output; echo draft > notes.txt")
    assert _run(be, alice).raw_state == "Succeeded"
    alice_log, alice_work = be.job_dir(alice.uid) / "output.log", be.job_dir(alice.uid) / "work"
    assert "alice-private-output" in alice_log.read_text() and (alice_work / "notes.txt").exists()

    probes = {
        "read-db": f"cat {data / 'crater.db'}", "write-db": f"echo x >> {data / 'crater.db'}",
        "read-secret": f"cat {data / 'secret_key'}", "read-backend": f"cat {data / 'local' / 'backend.db'}",
        "list-data": f"ls {data}", "list-jobs": f"ls {data / 'jobs'}", "plant-file": f"touch {data / 'planted'}",
        "read-log": f"cat {alice_log}", "list-work": f"ls {alice_work}", "read-work": f"cat {alice_work}/notes.txt",
        "read-environ": f"cat /proc/{os.getpid()}/environ",
    }
    script = "; ".join(f"if {cmd} >/dev/null 2>&1; then echo LEAK:{name}; fi" for name, cmd in probes.items())
    bob = _as("bob", script + "; env | grep -c secret-in-craters-environment; echo mine > own.txt; cat own.txt")
    st = _run(be, bob)
    out = be.read_logs(bob.uid)
    assert "LEAK" not in out, out
    assert out.splitlines()[-2:] == ["0", "mine"], "no Crater setting in the job's environment; its own folder works"
    assert st.raw_state == "Succeeded"
    with sqlite3.connect(data / "crater.db") as check:
        assert check.execute("SELECT role FROM users").fetchall() == [("user",)]

    mode = lambda path: stat.S_IMODE(os.lstat(path).st_mode)  # noqa: E731
    assert mode(data) == mode(data / "jobs") == 0o711
    assert mode(data / "crater.db") == mode(data / "secret_key") == 0o600 and mode(data / "local") == 0o700
    assert mode(be.job_dir(alice.uid)) == 0o711 and os.stat(be.job_dir(alice.uid)).st_uid == 0
    assert mode(alice_work) == 0o700 and os.stat(alice_work).st_uid != 0
    assert mode(alice_log) == 0o600 and os.stat(alice_log).st_uid == 0


def test_an_account_keeps_its_uid_across_restarts_and_is_made_again_if_removed(isolated):
    build, _ = isolated
    first = build()
    uid = _ids(first, "alice")[0]
    first.close()
    again = build()
    assert _ids(again, "alice")[0] == uid, "the allocation is kept in the backend's store"
    name = pwd.getpwuid(uid).pw_name
    subprocess.run(["userdel", name], check=True, capture_output=True)
    subprocess.run(["groupdel", name], capture_output=True)
    assert _ids(again, "alice")[0] == uid, "made again with the same name and uid"
    assert pwd.getpwuid(uid).pw_name == name


def test_the_working_dir_belongs_to_the_jobs_account(isolated):
    build, _ = isolated
    be = build()
    w = with_task(_as("alice", "pwd; id -u; touch made-here"), working_dir="sub/dir")
    st = _run(be, w)
    assert st.raw_state == "Succeeded", be.read_logs(w.uid)
    cwd, uid = be.read_logs(w.uid).splitlines()
    work = be.job_dir(w.uid) / "work"
    assert cwd == str(work / "sub" / "dir")
    for folder in (work, work / "sub", work / "sub" / "dir"):
        assert os.stat(folder).st_uid == int(uid)


def test_the_started_status_names_the_account(isolated):
    build, _ = isolated
    be = build()
    w = _as("alice", "sleep 30")
    be.create(w)
    st = wait_for(lambda: (s := be.status(w.uid)) and s.raw_state == "Running" and s, 10, step=be.tick)
    assert st.code == "local.started_isolated" and st.args["trust"] == "os-account"
    account = pwd.getpwnam(st.args["account"])
    assert account.pw_uid == st.args["uid"] and f"as OS user {account.pw_name} (uid {account.pw_uid})" in st.message
    assert be.inventory()[0].isolation == "os-account"
    be.cancel(w.uid, "done")
    assert wait_for(lambda: be.status(w.uid).raw_state == "Cancelled", 10, step=be.tick)


def _free_uid() -> int:
    for uid in range(DEFAULT_UID_RANGE[1], DEFAULT_UID_RANGE[0], -1):
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    raise AssertionError("no free uid in the default range")  # pragma: no cover


def test_a_full_uid_range_fails_the_job_and_says_why(isolated):
    build, _ = isolated
    uid = _free_uid()
    be = build(uid_range=(uid, uid))
    assert _ids(be, "alice")[0] == uid
    w = _as("bob", "echo never")
    st = _run(be, w)
    assert (st.raw_state, st.reason, st.code, st.args) == ("Failed", "StartError", "local.uid_range_full",
                                                       {"min": uid, "max": uid})
    assert "CRATER_LOCAL_UID_MAX" in st.message and be.read_logs(w.uid) == ""


def _world_readable_folder(top: Path, name: str) -> Path:
    folder = top / name
    folder.mkdir()
    os.chmod(folder, 0o1777)  # like /tmp: any account may write there, as a job of any user could have
    return folder


def test_a_jobs_pythonpath_never_reaches_the_root_runner(isolated):
    """A job's ``env: {PYTHONPATH: ...}`` made the root runner (``python -S``) import a module another user had
    left in a shared folder, as uid 0. The runner now runs in isolated mode with an environment of its own, and
    the job's variables reach only the job's program."""
    build, data = isolated
    planted = _world_readable_folder(data.parent, "planted")
    proof = planted / "proof"
    (planted / "json.py").write_text(  # shadows the standard library's json, which the runner imports
        f"import os\nopen({str(proof)!r}, 'a').write('imported as uid %d\\n' % os.getuid())\n"
        "import sys\ndel sys.modules['json']\nsys.path.remove(os.path.dirname(__file__))\nfrom json import *\n")
    os.chmod(planted / "json.py", 0o644)
    be = build()
    w = _as("alice", "echo \"$PYTHONPATH\"", PYTHONPATH=str(planted))
    st = _run(be, w)
    assert st.raw_state == "Succeeded", be.read_logs(w.uid)
    assert not proof.exists(), proof.read_text()
    assert be.read_logs(w.uid).strip() == str(planted), "the job itself still gets its PYTHONPATH"


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to build the preloaded library")
def test_a_jobs_ld_preload_acts_only_in_the_job_as_its_account(isolated):
    """``LD_PRELOAD`` is honoured by the dynamic loader of a root process that is not set-uid: it must load in the
    job's program (as the job's account, which the job may want) and never in the root runner."""
    build, data = isolated
    planted = _world_readable_folder(data.parent, "preload")
    record = planted / "loaded-by"
    source = planted / "hook.c"
    source.write_text(
        "#include <stdio.h>\n#include <unistd.h>\n"
        "__attribute__((constructor)) static void hook(void) {\n"
        f"  FILE *f = fopen(\"{record}\", \"a\"); if (f) {{ fprintf(f, \"%d\\n\", (int)getuid()); fclose(f); }}\n}}\n")
    library = planted / "hook.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True, capture_output=True)
    os.chmod(library, 0o755)
    be = build()
    w = _as("alice", "id -u", LD_PRELOAD=str(library))
    st = _run(be, w)
    assert st.raw_state == "Succeeded", be.read_logs(w.uid)
    job_uid = be.read_logs(w.uid).split()[-1]
    loaded_by = record.read_text().split()
    assert "0" not in loaded_by, "the job's LD_PRELOAD ran in a root process"
    assert job_uid in loaded_by and job_uid != "0", "it still reaches the job's own processes"


def test_credentials_in_craters_environment_never_reach_an_isolated_job(isolated, monkeypatch):
    """The console's state store password (``REFLEX_REDIS_URL``), a proxy's, a password file: an allowlist, not
    a blocklist, decides what a job inherits."""
    for name, value in {"REFLEX_REDIS_URL": "redis://:state-store-pw@127.0.0.1:6379/0",
                        "REDIS_URL": "redis://:cache-pw@cache:6379/0", "HTTPS_PROXY": "http://u:proxy-pw@proxy:3128",
                        "PGPASSFILE": "/root/.pgpass-pw", "TZ": "Asia/Shanghai"}.items():
        monkeypatch.setenv(name, value)
    build, _ = isolated
    be = build()
    w = _as("alice", "env")
    assert _run(be, w).raw_state == "Succeeded"
    env = dict(line.split("=", 1) for line in be.read_logs(w.uid).splitlines() if "=" in line)
    assert not [k for k, v in env.items() if "pw" in v], env
    assert env["TZ"] == "Asia/Shanghai" and env["HOME"] == str(be.job_dir(w.uid) / "work")
    assert env["USER"] == env["LOGNAME"] == pwd.getpwnam(env["USER"]).pw_name != "root"


def test_an_account_named_by_an_earlier_scheme_keeps_its_name(isolated):
    """Account names now come from the user name's slug; a user whose account was made under the earlier scheme
    (``<prefix>elodie-<8 hex>``) keeps it: the allocation in the store is what counts."""
    build, data = isolated
    be = build()
    _ids(be, "bob")  # makes the store and the fixture's prefix known
    prefix = be.accounts.prefix
    old_name, uid = f"{prefix}elodie-3f9a1c2b", _free_uid()
    with be._store.tx() as conn:
        conn.execute("INSERT INTO accounts (user, account, uid, gid, created_at) VALUES (?, ?, ?, ?, 0)",
                     ("Élodie", old_name, uid, uid))
    w = _as("Élodie", "id -un; id -u")
    st = _run(be, w)
    assert st.raw_state == "Succeeded", be.read_logs(w.uid)
    assert be.read_logs(w.uid).split() == [old_name, str(uid)]
    new = _as("Zoé", "id -un")
    assert _run(be, new).raw_state == "Succeeded"
    assert be.read_logs(new.uid).split() == [f"{prefix}{safe_slug('Zoé', 32 - len(prefix))}"]


def test_the_replicas_of_a_gang_run_as_their_users_account_and_read_their_host_files(isolated):
    build, _ = isolated
    be = build()
    w = replace(gang(("worker", 2, "id -u; cat $CRATER_HOSTS_DIR/worker.host; echo", 0)), user="alice")
    st = _run(be, w)
    assert st.raw_state == "Succeeded", [be.read_logs(w.uid, task="worker", replica=i) for i in (0, 1)]
    logs = [be.read_logs(w.uid, task="worker", replica=i).split() for i in (0, 1)]
    assert logs[0][0] == logs[1][0] and int(logs[0][0]) not in (0, os.geteuid()), "the user's own account"
    assert [log[1:] for log in logs] == [["127.0.0.1", "127.0.0.1"]] * 2
    assert stat.S_IMODE((be.job_dir(w.uid) / "logs").stat().st_mode) == 0o700, "the logs are root's"


def test_a_data_folder_under_a_closed_folder_is_warned_about_at_start(isolated, caplog):
    """A job's account cannot pass through a 0700 folder (mktemp -d's) above the data folder: Crater says which
    folder and what breaks (the MPI hostfile, absolute paths into the job folder); a traversable path says nothing."""
    build, data = isolated
    with caplog.at_level(logging.WARNING, logger="crater_app.cluster.local.backend"):
        build()
    assert not [r for r in caplog.records if "cannot be traversed" in r.getMessage()]
    caplog.clear()
    top = data.parent
    os.chmod(top, 0o700)
    try:
        with caplog.at_level(logging.WARNING, logger="crater_app.cluster.local.backend"):
            build()
    finally:
        os.chmod(top, 0o755)
    [warning] = [r.getMessage() for r in caplog.records if "cannot be traversed" in r.getMessage()]
    assert str(top) in warning and "CRATER_MPI_HOSTFILE" in warning and str(data) in warning
