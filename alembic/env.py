"""Alembic environment: the URL comes from ``config.attributes['url']`` or Crater's settings."""

from alembic import context
from sqlmodel import SQLModel

import crater_app.db.models  # noqa: F401 - registers the tables
from crater_app.db.engine import make_engine
from crater_app.settings import get_settings

#: the PostgreSQL advisory lock key migrations hold ("crater" in ASCII)
MIGRATION_LOCK = 0x637261746572
config = context.config
url = config.attributes.get("url") or get_settings().resolved_database_url
target_metadata = SQLModel.metadata

if context.is_offline_mode():
    context.configure(url=url, target_metadata=target_metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    engine = make_engine(url)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            if connection.dialect.name == "postgresql":
                # Several Crater pods starting at once (the Helm chart's replicas) migrate one after the other: the
                # others wait here, then find the database at head and do nothing. Released at commit.
                connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
            context.run_migrations()
    engine.dispose()
