"""Where the job queue lives in the application's PostgreSQL database: its tables, its schema and its connection.

The queue is procrastinate's (``app.jobs.queue``). Its tables (``procrastinate_*``) are created by the memdesk migration
``0009_job_queue`` from the SQL file procrastinate ships, so a database is ready for the queue once ``memdesk
migrate`` (or a server's start) has run, under the same advisory lock as every other migration. They are not
SQLModel tables: ``is_job_queue_table`` keeps them out of alembic's comparison of the models with the database.

Nothing here imports procrastinate or psycopg at import time: both come with the ``postgres`` extra, and a SQLite
install loads this module through the migrations.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from sqlalchemy import Connection, Engine, text

JOB_QUEUE_TABLE_PREFIX = "procrastinate_"
# A table of the queue's schema: when it exists, the schema was applied already (by this migration or by hand).
SENTINEL_TABLE = "procrastinate_jobs"


# Tables, columns and indexes that migrations keep beside the models, which cannot declare them: the transcript's
# full-text index (0012_message_search), and the knowledge chunks' full-text index and embeddings (0014_knowledge):
# FTS5 tables with their shadow tables on SQLite, expression and vector indexes on PostgreSQL, a vector column whose
# type differs by database; PostgreSQL's stored tsvector of each chunk (0018) and SQLite's trigger-kept chunk count
# (0019), which exist on one database only.
UNMODELLED_TABLE_PREFIXES = (
    "messages_search",
    "knowledge_chunks_search",
    "knowledge_vectors",
    "knowledge_chunk_counts",
)
UNMODELLED_INDEXES = frozenset({"ix_messages_search", "ix_knowledge_chunks_search", "ix_knowledge_vectors_embedding"})
UNMODELLED_COLUMNS = frozenset({("knowledge_chunks", "search_document")})


def is_job_queue_table(name: str | None) -> bool:
    return name is not None and name.startswith(JOB_QUEUE_TABLE_PREFIX)


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Alembic's ``include_name`` hook: compare every table but the job queue's, and leave out the search indexes
    and the embeddings that migrations keep beside the models."""
    if type_ == "table" and name is not None and name.startswith(UNMODELLED_TABLE_PREFIXES):
        return False
    if type_ == "index" and name in UNMODELLED_INDEXES:
        return False
    if type_ == "column" and (parent_names.get("table_name"), name) in UNMODELLED_COLUMNS:
        return False
    return not (type_ == "table" and is_job_queue_table(name))


def job_queue_schema_sql() -> str:
    """The whole schema of the installed procrastinate version, as it ships it."""
    try:
        return (resources.files("procrastinate.sql") / "schema.sql").read_text(encoding="utf-8")
    except ModuleNotFoundError as error:
        raise RuntimeError(
            "PostgreSQL needs the job queue library: pip install 'memdesk[postgres]', then run the command again."
        ) from error


def job_queue_schema_exists(connection: Connection) -> bool:
    found = connection.execute(text("SELECT to_regclass(:name)"), {"name": SENTINEL_TABLE}).scalar()
    return found is not None


def apply_job_queue_schema(connection: Connection) -> None:
    """Create the queue's tables and functions in the connection's transaction, unless they exist."""
    if job_queue_schema_exists(connection):
        return
    driver = connection.connection.driver_connection
    assert driver is not None
    # Straight to psycopg without parameters, the only way it sends several statements (functions with $$ bodies
    # and literal % signs included) in one go; it is the same connection, so the same transaction.
    driver.execute(job_queue_schema_sql())


def psycopg_conninfo(db: Engine) -> str:
    """The libpq connection string of ``db``'s URL (host, socket directory, user, password, database, options)."""
    from psycopg import pq
    from psycopg.conninfo import make_conninfo

    arguments, options = db.dialect.create_connect_args(db.url)
    # The dialect adds options of its own (an adaptation context) beside libpq's keywords.
    keywords = {option.keyword.decode() for option in pq.Conninfo.get_defaults()}
    return make_conninfo(*arguments, **{key: value for key, value in options.items() if key in keywords})
