"""Alembic migrations on SQLite and PostgreSQL: empty -> head builds the schema the models describe (autogenerate
finds no difference, so models and migrations cannot drift), and downgrade to base removes it."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import String, inspect, text
from sqlmodel import SQLModel

import crater_app.db.models  # noqa: F401 - registers the tables on SQLModel.metadata
from crater_app.db.engine import make_engine
from crater_app.db.migrate import alembic_config, upgrade

pytestmark = pytest.mark.both_databases  # every migration must run on both dialects

TABLES = {
    "users", "projects", "project_members", "api_tokens", "jobs", "job_events", "operation_logs", "leases",
    "approvals", "notifications", "billing_prices", "point_ledger", "console_sessions", "idempotency_records",
    "active_usage",
}
INDEXES = {
    "jobs": {"ix_jobs_name", "ix_jobs_phase_id", "ix_jobs_user_id_id", "ix_jobs_project_id_id"},
    "job_events": {"ix_job_events_job_id"},
    "users": {"ix_users_username"},
    "projects": {"ix_projects_name"},
    "api_tokens": {"ix_api_tokens_token_hash", "ix_api_tokens_user_id"},
    "project_members": {"ix_project_members_user_id"},
    "operation_logs": {"ix_operation_logs_at", "ix_operation_logs_actor_at", "ix_operation_logs_action_at"},
}


def _project_and_user(conn) -> None:
    """Project 1 ``p`` and user 1 ``u`` (its default project), as an older schema stores them."""
    conn.execute(text("INSERT INTO projects (id, name, display_name, description, created_at) "
                      "VALUES (1, 'p', '', '', CURRENT_TIMESTAMP)"))
    conn.execute(text("INSERT INTO users (id, username, display_name, email, role, status, created_at, "
                      "default_project_id) VALUES (1, 'u', '', '', 'user', 'active', CURRENT_TIMESTAMP, 1)"))


def _tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_empty_to_head(empty_db_url):
    assert _tables(empty_db_url) == set()
    upgrade(empty_db_url)
    engine = make_engine(empty_db_url)
    try:
        insp = inspect(engine)
        assert set(insp.get_table_names()) == TABLES | {"alembic_version"}
        for table, wanted in INDEXES.items():
            assert wanted <= {ix["name"] for ix in insp.get_indexes(table)}, table
        unique = {ix["name"] for ix in insp.get_indexes("users") if ix["unique"]}
        assert "ix_users_username" in unique
        assert insp.get_pk_constraint("project_members")["constrained_columns"] == ["project_id", "user_id"]
        with engine.connect() as conn:
            version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
        head = ScriptDirectory.from_config(alembic_config(empty_db_url)).get_current_head()
        assert version == head
    finally:
        engine.dispose()


def _length_only(diff: object) -> bool:
    """Whether ``diff`` (one autogenerate entry) only changes a string column's declared length: SQLite never enforces
    one, so migration 0005 widens names on PostgreSQL only (see its docstring)."""
    if not (isinstance(diff, list) and len(diff) == 1 and diff[0][0] == "modify_type"):
        return False
    old, new = diff[0][-2], diff[0][-1]
    new = getattr(new, "impl", new)  # sqlmodel's AutoString decorates a String
    return isinstance(old, String) and isinstance(new, String) and old.length != new.length


def test_models_and_migrations_do_not_drift(empty_db_url):
    upgrade(empty_db_url)
    engine = make_engine(empty_db_url)
    try:
        with engine.connect() as conn:
            mc = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": False})
            diff = compare_metadata(mc, SQLModel.metadata)
        if engine.dialect.name == "sqlite":
            diff = [d for d in diff if not _length_only(d)]
    finally:
        engine.dispose()
    assert diff == [], f"models differ from the migrations; generate a revision: {diff}"


def test_upgrade_is_idempotent_and_downgrade_to_base_works(empty_db_url):
    upgrade(empty_db_url)
    upgrade(empty_db_url)  # already at head: nothing to do
    command.downgrade(alembic_config(empty_db_url), "base")
    assert _tables(empty_db_url) <= {"alembic_version"}
    upgrade(empty_db_url)
    assert TABLES <= _tables(empty_db_url)


def test_single_head():
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert len(script.get_heads()) == 1, "branches in alembic/versions must be merged"


def test_0004_gives_existing_rows_the_defaults(empty_db_url):
    """Rows written before migration 0004 (governance) get empty quotas, zero points and batch, not preemptible."""
    upgrade(empty_db_url, "0003")
    engine = make_engine(empty_db_url)
    try:
        with engine.begin() as conn:
            _project_and_user(conn)
            conn.execute(text("INSERT INTO project_members (project_id, user_id, role) VALUES (1, 1, 'member')"))
            conn.execute(text(
                "INSERT INTO jobs (id, uid, name, project_id, user_id, image, command, env, resources, cpu_m, "
                "memory_bytes, gpus, priority, phase, reason, devices, created_at) VALUES (1, 'x', 'j', 1, 1, 'i', "
                "'[]', '{}', '{}', 0, 0, 0, 0, 'Succeeded', '', '[]', CURRENT_TIMESTAMP)"))
        upgrade(empty_db_url)
        with engine.connect() as conn:
            job = conn.execute(text("SELECT kind, preemptible, reclaim_lock, reason_code, charged_points FROM jobs")).one()
            project = conn.execute(text("SELECT capability, member_allowance_points FROM projects")).one()
            user = conn.execute(text("SELECT extra_points, max_sessions FROM users")).one()
            share = conn.execute(text("SELECT share FROM project_members")).scalar_one()
    finally:
        engine.dispose()
    assert (job[0], bool(job[1]), bool(job[2]), job[3], job[4]) == ("batch", False, False, "", 0)
    assert project[0] in ({}, "{}") and project[1] == 0
    assert user == (0, None)
    assert share in ({}, "{}")


def test_0006_counts_the_active_jobs_there_are_and_its_triggers_keep_counting(empty_db_url):
    """``active_usage`` starts from the jobs active when the migration runs (a job being stopped for a preemption
    and a finished one left out), and the triggers move the counts with every later write."""
    upgrade(empty_db_url, "0005")
    engine = make_engine(empty_db_url)
    job = ("INSERT INTO jobs (uid, name, project_id, user_id, image, command, env, resources, cpu_m, memory_bytes, "
           "gpus, priority, phase, reason, devices, created_at, kind, preemptible, reclaim_lock, reason_code, "
           "reason_args, charged_points, attempt, requeue_on_preemption, accelerator_model) VALUES (:uid, 'j', 1, 1, "
           "'i', '[]', '{}', :resources, 0, 0, 1, 0, :phase, '', '[]', CURRENT_TIMESTAMP, 'batch', false, false, "
           ":code, '{}', 0, 1, true, :model)")
    gpu = '{"nvidia.com/gpu": "1"}'

    def counts(conn) -> list[tuple]:
        return sorted(tuple(r) for r in conn.execute(text(
            "SELECT accelerator_model, resources, jobs FROM active_usage ORDER BY accelerator_model")).all())

    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO projects (id, name, display_name, description, created_at) "
                              "VALUES (1, 'p', '', '', CURRENT_TIMESTAMP)"))
            conn.execute(text("INSERT INTO users (id, username, username_key, username_skeleton, display_name, "
                              "email, role, status, created_at, default_project_id) VALUES (1, 'u', 'u', 'u', '', '', "
                              "'user', 'active', CURRENT_TIMESTAMP, 1)"))
            for uid, phase, code, model in (("a", "Running", "", None), ("b", "Queued", "", None),
                                            ("c", "Stopping", "preempted", None), ("d", "Succeeded", "", None),
                                            ("e", "Queued", "", "A100")):
                conn.execute(text(job), {"uid": uid, "resources": gpu, "phase": phase, "code": code, "model": model})
        upgrade(empty_db_url)
        with engine.begin() as conn:
            assert counts(conn) == [("", gpu, 2), ("A100", gpu, 1)]
            conn.execute(text("UPDATE jobs SET phase = 'Running' WHERE uid = 'b'"))  # active to active: no change
            conn.execute(text("UPDATE jobs SET phase = 'Succeeded' WHERE uid = 'a'"))
            conn.execute(text("UPDATE jobs SET reason_code = 'preempted', phase = 'Stopping' WHERE uid = 'b'"))
            assert counts(conn) == [("A100", gpu, 1)]  # a count that falls to 0 leaves no row
            conn.execute(text("UPDATE jobs SET phase = 'Held', reason_code = 'requeued' WHERE uid = 'c'"))
            conn.execute(text("UPDATE jobs SET phase = 'Queued', reason_code = '' WHERE uid = 'c'"))
            conn.execute(text("UPDATE jobs SET accelerator_model = 'A100' WHERE uid = 'c'"))
            assert counts(conn) == [("A100", gpu, 2)]
            conn.execute(text("DELETE FROM jobs WHERE uid = 'e'"))
            assert counts(conn) == [("A100", gpu, 1)]
    finally:
        engine.dispose()


def test_0007_gives_existing_jobs_no_tasks_all_replicas_and_no_options(empty_db_url):
    """Rows written before migration 0007 read as the single-task form: ``tasks`` ``[]``, ``min_available`` NULL
    (all replicas), ``options`` ``{}``."""
    upgrade(empty_db_url, "0006")
    engine = make_engine(empty_db_url)
    try:
        with engine.begin() as conn:
            _project_and_user(conn)
            conn.execute(text(
                "INSERT INTO jobs (id, uid, name, project_id, user_id, image, command, env, resources, cpu_m, "
                "memory_bytes, gpus, priority, phase, reason, devices, created_at) VALUES (1, 'x', 'j', 1, 1, 'i', "
                "'[\"x\"]', '{}', '{}', 0, 0, 0, 0, 'Running', '', '[]', CURRENT_TIMESTAMP)"))
        upgrade(empty_db_url)
        with engine.connect() as conn:
            tasks, min_available, options = conn.execute(text("SELECT tasks, min_available, options FROM jobs")).one()
            usage = conn.execute(text("SELECT jobs FROM active_usage")).scalar_one()  # 0006's triggers kept
    finally:
        engine.dispose()
    assert tasks in ([], "[]") and min_available is None and options in ({}, "{}")
    assert usage == 1


def test_pods_starting_together_migrate_one_after_the_other(empty_db_url):
    """Several Crater processes running ``upgrade`` at once on an empty database (the Helm chart's replicas
    starting together) all end at head without an error: on PostgreSQL they take turns (an advisory lock); SQLite's
    write lock does the same for one file."""
    import subprocess
    import sys

    code = "import sys; from crater_app.db.migrate import upgrade; upgrade(sys.argv[1])"
    procs = [subprocess.Popen([sys.executable, "-c", code, empty_db_url], stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    failures = [err for p in procs if (err := p.communicate(timeout=300)[1]) and p.returncode != 0]
    assert failures == [] and [p.returncode for p in procs] == [0, 0, 0]
    assert _tables(empty_db_url) == TABLES | {"alembic_version"}
