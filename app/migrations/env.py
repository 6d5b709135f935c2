"""Alembic environment for memdesk.

``target_metadata`` is ``SQLModel.metadata`` with every table registered by importing ``app.models``; the job
queue's tables on PostgreSQL (``app.jobs.schema``) are left out of autogenerate's comparison. SQLite gets
``render_as_batch`` (it cannot ALTER most things in place, so alembic copies the table).

The database comes from, in order: an open connection passed by ``app.db.upgrade`` in
``config.attributes["connection"]``; the ``sqlalchemy.url`` main option; the ``MEMDESK_*`` settings.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection
from sqlmodel import SQLModel

import app.models  # noqa: F401  (registers every table on SQLModel.metadata)
from app.db import CONNECTION_ATTRIBUTE, create_db_engine, is_sqlite_url
from app.jobs.schema import include_name
from app.settings import get_settings

config = context.config
target_metadata = SQLModel.metadata


def _database_url() -> str:
    return config.get_main_option("sqlalchemy.url") or get_settings().resolved_database_url


def _run_on(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_name=include_name,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    """Emit the SQL to stdout instead of running it (``alembic upgrade --sql``)."""
    url = _database_url()
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        render_as_batch=is_sqlite_url(url),
        include_name=include_name,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get(CONNECTION_ATTRIBUTE)
    if isinstance(connection, Connection):
        _run_on(connection)
        return
    engine = create_db_engine(_database_url())
    try:
        with engine.begin() as own_connection:
            _run_on(own_connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
