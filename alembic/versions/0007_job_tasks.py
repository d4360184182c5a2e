"""Jobs with tasks: ``jobs.tasks``, ``jobs.min_available`` and ``jobs.options``.

- ``tasks`` (JSON list, ``[]`` for rows written before): the job's normalized tasks, each ``{name, replicas, image,
  command, args, env, working_dir, resources (per replica, a Kubernetes resource list), ports: [{name, port,
  protocol}], ends_job}``; ``[]`` means the single task of the row's own ``image``/``command``/``env``/
  ``working_dir``/``resources``. The row's ``resources``, ``cpu_m``, ``memory_bytes`` and ``gpus`` stay the totals
  over all replicas (what admission, quotas, usage and billing count).
- ``min_available`` (integer, NULL: all replicas): the gang.
- ``options`` (JSON object, ``{}`` for rows written before): ``restart_policy``, ``max_retry``, ``volumes``,
  ``shm_size_bytes``, ``node_selector``, ``ttl_after_finished_s`` (absent: the default).

Columns are added in place (``recreate='never'``): recreating ``jobs`` on SQLite would drop migration 0006's
triggers.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 16:10:00.000000
"""
from alembic import op
import sqlalchemy as sa

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None, recreate='never') as batch_op:
        batch_op.add_column(sa.Column('tasks', sa.JSON(), nullable=False, server_default=sa.text("'[]'")))
        batch_op.add_column(sa.Column('min_available', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('options', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None, recreate='never') as batch_op:
        batch_op.drop_column('options')
        batch_op.drop_column('min_available')
        batch_op.drop_column('tasks')
