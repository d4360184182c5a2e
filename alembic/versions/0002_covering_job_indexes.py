"""Job list indexes cover the list filters (``phase``, ``name``), so job lists are counted and paged from indexes.

The job list (``services.jobs.list_jobs``) filters by visibility (``user_id``/``project_id``), ``phase`` and a
name substring, pages newest first (``ORDER BY id DESC``) and counts the matches. With only ``(x, id)`` in
the indexes, every counted or skipped row was read from the table (a row carries the JSON spec, ~10x an
index entry): counting the 20,000 ``Failed`` jobs for ``phase=Failed&q=...`` took 16 ms on 100k jobs, now 2.

- ``ix_jobs_phase_id`` and ``ix_jobs_project_id_id`` keep their names and leading columns (so ``ORDER BY id``
  within one phase/project is still served) and gain ``phase``/``name``.
- ``ix_jobs_user_id_id`` stays narrow: SQLite counts all rows (``count(*)``, the admin's first page) on the
  narrowest index, and two integers per entry make that 2x faster than any covering index.
- ``ix_jobs_user_id_phase_id`` (new) serves a user's own jobs filtered by phase and name.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 12:00:00.000000
"""
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

_WIDENED = {
    "ix_jobs_phase_id": (["phase", "id"], ["phase", "id", "name"]),
    "ix_jobs_project_id_id": (["project_id", "id"], ["project_id", "id", "phase", "name"]),
}


def upgrade() -> None:
    for name, (_, columns) in _WIDENED.items():
        op.drop_index(name, table_name="jobs")
        op.create_index(name, "jobs", columns, unique=False)
    op.create_index("ix_jobs_user_id_phase_id", "jobs", ["user_id", "phase", "id", "name"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_jobs_user_id_phase_id", table_name="jobs")
    for name, (columns, _) in _WIDENED.items():
        op.drop_index(name, table_name="jobs")
        op.create_index(name, "jobs", columns, unique=False)
