"""Active usage kept by the database: table ``active_usage`` and triggers on ``jobs`` that keep it; the job name in
``ix_jobs_phase_project_user``.

``active_usage`` counts, per project, user, kind, preemptible flag, accelerator model (``""`` for none) and request
(the ``resources`` JSON text), the jobs that hold their request: phase ``Queued``, ``Running`` or ``Stopping``, and
``reason_code`` not ``preempted`` (a job being stopped for a preemption gave its room to the job it was stopped for).
Admission reads a project's usage from it in a few rows (``db.queries.admission.read_admitted``) instead of grouping
every active job while it holds the write lock. Triggers after INSERT, DELETE and UPDATE on ``jobs`` keep it: every
write to ``jobs``, whatever code or tool makes it, moves the counts with it. The table is filled from the jobs that
are active when the migration runs.

``ix_jobs_phase_project_user`` gains ``name`` as its last column: the count of a filtered job list of a project admin
(phase, their own or their projects' jobs, a name pattern) is then answered from that index alone, instead of
reading every job of the phase for its name (6.5 ms -> 2.1 ms with 100,000 jobs, ``bench/list_jobs.py``).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 14:15:00.000000
"""
from alembic import op
import sqlalchemy as sa

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

_KEY = "project_id, user_id, kind, preemptible, accelerator_model, resources"
_ACTIVE = "('Queued', 'Running', 'Stopping')"
_SQLITE_TEXT = "{row}.resources"  # SQLite keeps JSON as its text
_PG_TEXT = "{row}.resources::text"


def _is_active(row: str) -> str:
    return f"{row}.phase IN {_ACTIVE} AND {row}.reason_code <> 'preempted'"


def _match(row: str, text: str) -> str:
    return (f"project_id = {row}.project_id AND user_id = {row}.user_id AND kind = {row}.kind"
            f" AND preemptible = {row}.preemptible AND accelerator_model = COALESCE({row}.accelerator_model, '')"
            f" AND resources = {text.format(row=row)}")


def _add(row: str, text: str, where: str) -> str:
    # SQLite: an INSERT ... SELECT needs its WHERE before ON CONFLICT (else "ON" would be read as a join).
    return (f"INSERT INTO active_usage ({_KEY}, jobs) SELECT {row}.project_id, {row}.user_id, {row}.kind,"
            f" {row}.preemptible, COALESCE({row}.accelerator_model, ''), {text.format(row=row)}, 1 WHERE {where}"
            f" ON CONFLICT ({_KEY}) DO UPDATE SET jobs = active_usage.jobs + 1")


def _remove(row: str, text: str) -> list[str]:
    return [f"UPDATE active_usage SET jobs = jobs - 1 WHERE {_match(row, text)}",
            f"DELETE FROM active_usage WHERE {_match(row, text)} AND jobs <= 0"]


def _sqlite_triggers() -> list[str]:
    t = _SQLITE_TEXT
    moved = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in _KEY.split(", "))  # the key changed
    return [
        f"CREATE TRIGGER jobs_active_usage_insert AFTER INSERT ON jobs WHEN {_is_active('NEW')} BEGIN"
        f" {_add('NEW', t, 'true')}; END",
        f"CREATE TRIGGER jobs_active_usage_delete AFTER DELETE ON jobs WHEN {_is_active('OLD')} BEGIN"
        f" {'; '.join(_remove('OLD', t))}; END",
        f"CREATE TRIGGER jobs_active_usage_leave AFTER UPDATE ON jobs WHEN {_is_active('OLD')}"
        f" AND (NOT ({_is_active('NEW')}) OR {moved}) BEGIN {'; '.join(_remove('OLD', t))}; END",
        f"CREATE TRIGGER jobs_active_usage_enter AFTER UPDATE ON jobs WHEN {_is_active('NEW')}"
        f" AND (NOT ({_is_active('OLD')}) OR {moved}) BEGIN {_add('NEW', t, 'true')}; END",
    ]


def _postgresql_triggers() -> list[str]:
    t = _PG_TEXT
    same = " AND ".join(f"OLD.{c} IS NOT DISTINCT FROM NEW.{c}" for c in _KEY.split(", ") if c != "resources")
    same += " AND OLD.resources::text = NEW.resources::text"
    return [
        f"""CREATE FUNCTION crater_jobs_active_usage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  was boolean := TG_OP <> 'INSERT' AND {_is_active('OLD')};
  now_active boolean := TG_OP <> 'DELETE' AND {_is_active('NEW')};
BEGIN
  IF TG_OP = 'UPDATE' AND was = now_active AND {same} THEN
    RETURN NULL;
  END IF;
  IF was THEN
    {'; '.join(_remove('OLD', t))};
  END IF;
  IF now_active THEN
    {_add('NEW', t, 'true')};
  END IF;
  RETURN NULL;
END $$""",
        "CREATE TRIGGER jobs_active_usage AFTER INSERT OR UPDATE OR DELETE ON jobs FOR EACH ROW"
        " EXECUTE FUNCTION crater_jobs_active_usage()",
    ]


def upgrade() -> None:
    op.create_table(
        'active_usage',
        sa.Column('project_id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('preemptible', sa.Boolean(), nullable=False),
        sa.Column('accelerator_model', sa.String(length=128), nullable=False),
        sa.Column('resources', sa.Text(), nullable=False),
        sa.Column('jobs', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('project_id', 'user_id', 'kind', 'preemptible', 'accelerator_model', 'resources'),
    )
    sqlite = op.get_bind().dialect.name == "sqlite"
    text = (_SQLITE_TEXT if sqlite else _PG_TEXT).format(row="jobs")
    op.execute(f"INSERT INTO active_usage ({_KEY}, jobs) SELECT project_id, user_id, kind, preemptible,"
               f" COALESCE(accelerator_model, ''), {text}, count(*) FROM jobs WHERE {_is_active('jobs')}"
               f" GROUP BY project_id, user_id, kind, preemptible, COALESCE(accelerator_model, ''), {text}")
    for statement in _sqlite_triggers() if sqlite else _postgresql_triggers():
        op.execute(statement)
    op.drop_index('ix_jobs_phase_project_user', table_name='jobs')
    op.create_index('ix_jobs_phase_project_user', 'jobs', ['phase', 'project_id', 'user_id', 'name'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_jobs_phase_project_user', table_name='jobs')
    op.create_index('ix_jobs_phase_project_user', 'jobs', ['phase', 'project_id', 'user_id'], unique=False)
    if op.get_bind().dialect.name == "sqlite":
        for name in ("insert", "delete", "leave", "enter"):
            op.execute(f"DROP TRIGGER IF EXISTS jobs_active_usage_{name}")
    else:
        op.execute("DROP TRIGGER IF EXISTS jobs_active_usage ON jobs")
        op.execute("DROP FUNCTION IF EXISTS crater_jobs_active_usage()")
    op.drop_table('active_usage')
