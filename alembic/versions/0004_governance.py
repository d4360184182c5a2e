"""Governance schema: quotas, per-user limits, held jobs, approvals, notifications, billing, OIDC identities.

- ``projects``: ``guarantee``/``deserved``/``capability`` resource lists (JSON) and ``member_allowance_points``.
- ``project_members.share``: the member's share of the project's capability (JSON resource list).
- ``users``: limits (``max_sessions``, ``max_accelerators_per_job``, ``max_runtime_s``), ``extra_points`` and the
  OIDC identity (``oidc_issuer``, ``oidc_subject``, unique together).
- ``jobs``: ``kind``, ``preemptible``, ``reclaim_lock``, ``reason_code``/``reason_args`` (why it waits, for
  translation), ``admitted_at``, ``charged_points``/``charged_until``; index ``(phase, project_id, user_id)``.
- New tables ``approvals``, ``notifications``, ``billing_prices``, ``point_ledger``.
Existing rows get the defaults (empty lists, zero points, batch, not preemptible).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 14:01:34.710663
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel
import crater_app.db.types


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('billing_prices',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('resource', sqlmodel.sql.sqltypes.AutoString(length=253), nullable=False),
    sa.Column('model', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('points_per_hour', sa.Float(), nullable=False),
    sa.Column('updated_at', crater_app.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('resource', 'model', name='uq_billing_prices_resource_model')
    )
    op.create_table('notifications',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('at', crater_app.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('args', sa.JSON(), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('read_at', crater_app.db.types.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.create_index('ix_notifications_user_id_id', ['user_id', 'id'], unique=False)

    op.create_table('approvals',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('requester_id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=True),
    sa.Column('job_id', sa.Integer(), nullable=True),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('auto', sa.Boolean(), nullable=False),
    sa.Column('decided_by', sa.Integer(), nullable=True),
    sa.Column('decision_note', sa.Text(), nullable=False),
    sa.Column('created_at', crater_app.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('decided_at', crater_app.db.types.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['decided_by'], ['users.id'], ),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ),
    sa.ForeignKeyConstraint(['requester_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('approvals', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_approvals_job_id'), ['job_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_approvals_project_id'), ['project_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_approvals_requester_id'), ['requester_id'], unique=False)
        batch_op.create_index('ix_approvals_status_id', ['status', 'id'], unique=False)

    op.create_table('point_ledger',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('at', crater_app.db.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=True),
    sa.Column('job_id', sa.Integer(), nullable=True),
    sa.Column('period', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('points', sa.Float(), nullable=False),
    sa.Column('note', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('point_ledger', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_point_ledger_job_id'), ['job_id'], unique=False)
        batch_op.create_index('ix_point_ledger_user_period', ['user_id', 'period', 'project_id'], unique=False)

    with op.batch_alter_table('jobs', schema=None, recreate='never') as batch_op:
        batch_op.add_column(sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False, server_default='batch'))
        batch_op.add_column(sa.Column('preemptible', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column('reclaim_lock', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column('reason_code', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('reason_args', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))
        batch_op.add_column(sa.Column('admitted_at', crater_app.db.types.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('charged_points', sa.Float(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('charged_until', crater_app.db.types.UTCDateTime(timezone=True), nullable=True))
        batch_op.create_index('ix_jobs_phase_project_user', ['phase', 'project_id', 'user_id'], unique=False)

    with op.batch_alter_table('project_members', schema=None, recreate='never') as batch_op:
        batch_op.add_column(sa.Column('share', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))

    with op.batch_alter_table('projects', schema=None, recreate='never') as batch_op:
        batch_op.add_column(sa.Column('guarantee', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))
        batch_op.add_column(sa.Column('deserved', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))
        batch_op.add_column(sa.Column('capability', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))
        batch_op.add_column(sa.Column('member_allowance_points', sa.Float(), nullable=False, server_default='0'))

    with op.batch_alter_table('users', schema=None, recreate='never') as batch_op:
        batch_op.add_column(sa.Column('max_sessions', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('max_accelerators_per_job', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('max_runtime_s', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('extra_points', sa.Float(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('oidc_issuer', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True))
        batch_op.add_column(sa.Column('oidc_subject', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True))
        batch_op.create_index('uq_users_oidc_identity', ['oidc_issuer', 'oidc_subject'], unique=True)



def downgrade() -> None:
    with op.batch_alter_table('users', schema=None, recreate='never') as batch_op:
        batch_op.drop_index('uq_users_oidc_identity')
        batch_op.drop_column('oidc_subject')
        batch_op.drop_column('oidc_issuer')
        batch_op.drop_column('extra_points')
        batch_op.drop_column('max_runtime_s')
        batch_op.drop_column('max_accelerators_per_job')
        batch_op.drop_column('max_sessions')

    with op.batch_alter_table('projects', schema=None, recreate='never') as batch_op:
        batch_op.drop_column('member_allowance_points')
        batch_op.drop_column('capability')
        batch_op.drop_column('deserved')
        batch_op.drop_column('guarantee')

    with op.batch_alter_table('project_members', schema=None, recreate='never') as batch_op:
        batch_op.drop_column('share')

    with op.batch_alter_table('jobs', schema=None, recreate='never') as batch_op:
        batch_op.drop_index('ix_jobs_phase_project_user')
        batch_op.drop_column('charged_until')
        batch_op.drop_column('charged_points')
        batch_op.drop_column('admitted_at')
        batch_op.drop_column('reason_args')
        batch_op.drop_column('reason_code')
        batch_op.drop_column('reclaim_lock')
        batch_op.drop_column('preemptible')
        batch_op.drop_column('kind')

    with op.batch_alter_table('point_ledger', schema=None) as batch_op:
        batch_op.drop_index('ix_point_ledger_user_period')
        batch_op.drop_index(batch_op.f('ix_point_ledger_job_id'))

    op.drop_table('point_ledger')
    with op.batch_alter_table('approvals', schema=None) as batch_op:
        batch_op.drop_index('ix_approvals_status_id')
        batch_op.drop_index(batch_op.f('ix_approvals_requester_id'))
        batch_op.drop_index(batch_op.f('ix_approvals_project_id'))
        batch_op.drop_index(batch_op.f('ix_approvals_job_id'))

    op.drop_table('approvals')
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.drop_index('ix_notifications_user_id_id')

    op.drop_table('notifications')
    op.drop_table('billing_prices')
