"""Projects get an optional expiry (``projects.expires_at``, UTC); the operation log gets indexes for its filters.

- ``projects.expires_at``: nullable timestamp; ``NULL`` means the project never expires (every existing row).
- ``ix_operation_logs_actor_at`` and ``ix_operation_logs_action_at``: the admin page filters by actor or action
  and reads newest first, so each filter is served from an index instead of a scan of the whole log.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 09:00:00.000000
"""
from alembic import op
import sqlalchemy as sa

import crater_app.db.types

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.add_column(sa.Column('expires_at', crater_app.db.types.UTCDateTime(timezone=True), nullable=True))
    op.create_index('ix_operation_logs_actor_at', 'operation_logs', ['actor', 'at'], unique=False)
    op.create_index('ix_operation_logs_action_at', 'operation_logs', ['action', 'at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_operation_logs_action_at', table_name='operation_logs')
    op.drop_index('ix_operation_logs_actor_at', table_name='operation_logs')
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.drop_column('expires_at')
