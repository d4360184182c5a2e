"""Alembic environment: the URL comes from ``config.attributes['url']`` or Crater's settings."""

from alembic import context
from sqlmodel import SQLModel

import crater_app.db.models  # noqa: F401 - registers the tables
from crater_app.db.engine import make_engine
from crater_app.settings import get_settings

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
            context.run_migrations()
    engine.dispose()
