"""Backbone schema: console sessions, idempotent POSTs, messages as codes, requeued jobs, wider names.

- New table ``console_sessions``: the console's server-side sign-in (secret hashed; expiry, idle timeout, user
  agent, IP, revocation), shared by every tab, worker and replica.
- New table ``idempotency_records``: the first answer to a ``POST`` with an ``Idempotency-Key`` (24 h).
- ``job_events`` and ``operation_logs`` gain ``code`` + ``args`` (the message as a catalogue code and its
  arguments, rendered in the reader's language); existing rows keep their English text with an empty code.
  ``approvals`` gains ``decision_code`` + ``decision_args`` the same way, for the notes Crater writes itself
  (a request closed because its target is gone, approved by the auto rule), and ``reason_code`` + ``reason_args``
  for the requests Crater writes itself (a job above the accelerator threshold).
- ``jobs`` gains ``attempt`` (1 for existing rows), ``requeue_on_preemption`` (true), ``stop_requested_at`` and
  ``exit_signal``.
- ``jobs.reason_code`` widens to 64 characters, as ``job_events.code``: a job's reason is the code of its last
  backend status (``local.started_isolated_with_devices``), which did not fit 32.
- ``users.username`` and ``operation_logs.actor`` widen to 64 characters (names are Unicode now), and
  ``users.username_key`` (the NFKC case-folded name, unique) is filled from the existing names, which were
  lower-case DNS-1123 labels and so are their own keys; ``users.username_skeleton`` (what the name looks like,
  indexed, not unique: a new name confusable with an existing one is refused) likewise, ASCII names being their own
  skeleton. SQLite ignores declared lengths, so the widening is PostgreSQL-only (recreating ``users`` on SQLite
  would trip its foreign keys).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 10:17:43.282013
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel
import crater_app.db.types


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def _widen(table: str, column: str, old: int, new: int) -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    with op.batch_alter_table(table, schema=None) as batch_op:
        batch_op.alter_column(column, existing_type=sa.VARCHAR(length=old),
                              type_=sqlmodel.sql.sqltypes.AutoString(length=new), existing_nullable=False)


def upgrade() -> None:
    op.create_table('console_sessions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('id_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('created_at', crater_app.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('last_seen_at', crater_app.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', crater_app.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('idle_timeout_s', sa.Integer(), nullable=False),
    sa.Column('user_agent', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.Column('ip', sqlmodel.sql.sqltypes.AutoString(length=45), nullable=False),
    sa.Column('revoked_at', crater_app.db.types.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('id_hash')
    )
    with op.batch_alter_table('console_sessions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_console_sessions_user_id'), ['user_id'], unique=False)

    op.create_table('idempotency_records',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.Column('method', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('path', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.Column('body_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('status_code', sa.Integer(), nullable=True),
    sa.Column('content_type', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('response', sa.Text(), nullable=False),
    sa.Column('created_at', crater_app.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', crater_app.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('user_id', 'key', name='uq_idempotency_records_user_key')
    )
    with op.batch_alter_table('idempotency_records', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_idempotency_records_expires_at'), ['expires_at'], unique=False)

    with op.batch_alter_table('job_events', schema=None, recreate='never') as batch_op:
        batch_op.add_column(sa.Column('code', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('args', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))

    with op.batch_alter_table('jobs', schema=None, recreate='never') as batch_op:
        batch_op.add_column(sa.Column('attempt', sa.Integer(), nullable=False, server_default='1'))
        batch_op.add_column(sa.Column('requeue_on_preemption', sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column('stop_requested_at', crater_app.db.types.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('exit_signal', sa.Integer(), nullable=True))

    with op.batch_alter_table('operation_logs', schema=None, recreate='never') as batch_op:
        batch_op.add_column(sa.Column('code', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('args', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))
    _widen('operation_logs', 'actor', 63, 64)
    _widen('jobs', 'reason_code', 32, 64)

    with op.batch_alter_table('approvals', schema=None, recreate='never') as batch_op:
        batch_op.add_column(sa.Column('decision_code', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False,
                                      server_default=''))
        batch_op.add_column(sa.Column('decision_args', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))
        batch_op.add_column(sa.Column('reason_code', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False,
                                      server_default=''))
        batch_op.add_column(sa.Column('reason_args', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))

    with op.batch_alter_table('users', schema=None, recreate='never') as batch_op:
        batch_op.add_column(sa.Column('username_key', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False,
                                      server_default=''))
    op.execute("UPDATE users SET username_key = lower(username)")
    with op.batch_alter_table('users', schema=None, recreate='never') as batch_op:
        batch_op.add_column(sa.Column('username_skeleton', sqlmodel.sql.sqltypes.AutoString(length=256),
                                      nullable=True))
    op.execute("UPDATE users SET username_skeleton = lower(username)")  # ASCII names are their own skeleton
    _widen('users', 'username', 63, 64)
    with op.batch_alter_table('users', schema=None, recreate='never') as batch_op:
        batch_op.create_index('uq_users_username_key', ['username_key'], unique=True)
        batch_op.create_index('ix_users_username_skeleton', ['username_skeleton'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('users', schema=None, recreate='never') as batch_op:
        batch_op.drop_index('ix_users_username_skeleton')
        batch_op.drop_index('uq_users_username_key')
        batch_op.drop_column('username_skeleton')
        batch_op.drop_column('username_key')
    _widen('users', 'username', 64, 63)
    with op.batch_alter_table('approvals', schema=None, recreate='never') as batch_op:
        batch_op.drop_column('reason_args')
        batch_op.drop_column('reason_code')
        batch_op.drop_column('decision_args')
        batch_op.drop_column('decision_code')
    _widen('operation_logs', 'actor', 64, 63)
    _widen('jobs', 'reason_code', 64, 32)
    with op.batch_alter_table('operation_logs', schema=None, recreate='never') as batch_op:
        batch_op.drop_column('args')
        batch_op.drop_column('code')

    with op.batch_alter_table('jobs', schema=None, recreate='never') as batch_op:
        batch_op.drop_column('exit_signal')
        batch_op.drop_column('stop_requested_at')
        batch_op.drop_column('requeue_on_preemption')
        batch_op.drop_column('attempt')

    with op.batch_alter_table('job_events', schema=None, recreate='never') as batch_op:
        batch_op.drop_column('args')
        batch_op.drop_column('code')

    with op.batch_alter_table('idempotency_records', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_idempotency_records_expires_at'))
    op.drop_table('idempotency_records')
    with op.batch_alter_table('console_sessions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_console_sessions_user_id'))
    op.drop_table('console_sessions')
