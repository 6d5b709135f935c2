"""Database engine, sessions and schema migrations.

Lifecycle: the application factory (or a CLI command) builds one engine with ``create_db_engine(url)``, runs
``migrate(url)`` once at startup, and stores the engine on ``app.state.db``; request handlers receive a
``Session`` through the ``get_session`` dependency (tests override it with ``app.dependency_overrides``).

SQLite is the embedded default: every connection switches on WAL (readers never block the writer), foreign keys,
a busy timeout and secure delete (zeroed deleted rows; ``truncate_wal`` then empties the log, so an erasure reaches
the disk), and transactions begin explicitly so that migrations are atomic and SAVEPOINTs work. Any other
SQLAlchemy URL (PostgreSQL in production) is used as given. Its pool pings a connection before lending it
(SQLAlchemy's ``pool_pre_ping``) and recycles connections after ``POOL_RECYCLE_S``: after a database restart, every
pooled connection is dead, and without the ping the first request on each would fail (reads and writes alike); with
it, the pool replaces a dead connection before anything is sent on it, so nothing needs retrying by hand (a write
retried after its outcome was lost could be stored twice). A connect that fails, or a connection that breaks
mid-request (the database shutting down), still fails that one step: ``is_database_unavailable`` tells such an
error from a bug, and the web layer answers it with 503 and ``Retry-After`` (``app.web.errors``).

``autocommit_step(session)`` starts a session's next step without a transaction on PostgreSQL: a read, or a single
statement, then needs no BEGIN and COMMIT round trips. SQLite keeps its explicit transactions (their write lock is
what orders writers).
Migrations are plain alembic scripts under ``app/migrations``; there is no ``alembic.ini``: ``alembic_config``
builds the configuration in code. On PostgreSQL, where several server processes may start at once, a migration
runs under a transaction-level advisory lock: the first process migrates, the others wait for its commit and then
find the database at the newest revision.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.pool import StaticPool
from sqlmodel import Session
from starlette.requests import HTTPConnection

from memory.sqlite_wal import SECURE_DELETE
from memory.sqlite_wal import truncate_wal as truncate_sqlite_wal

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 5_000
# Alembic passes an open connection to env.py under this key of ``Config.attributes``.
CONNECTION_ATTRIBUTE = "connection"
# An arbitrary constant that names memdesk's migrations among the advisory locks of a PostgreSQL database.
MIGRATION_LOCK_KEY = 4_261_764_338
# Below the idle timeouts of common proxies and firewalls between the app and its database.
POOL_RECYCLE_S = 1_800
# SQLite's result codes for "another connection holds the lock" (SQLITE_BUSY, SQLITE_LOCKED), which it returns once
# the busy timeout has passed: the database is there but cannot take this step now. Other SQLite operational errors
# (no such table, a syntax error) are bugs, not unavailability.
SQLITE_BUSY_CODES = frozenset({5, 6})


def is_sqlite_url(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def _is_sqlite_memory(url: str) -> bool:
    database = make_url(url).database
    return database in (None, "", ":memory:") or (database or "").startswith("file::memory:")


def _set_sqlite_pragmas(dbapi_connection: Any, connection_record: Any) -> None:
    # Let SQLAlchemy, not the sqlite3 module, decide where transactions start (see _begin_sqlite_transaction).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        # Durable at every checkpoint and much faster than FULL; the WAL protects against corruption.
        cursor.execute("PRAGMA synchronous=NORMAL")
        # Deleted rows are zeroed, so an erased customer's text leaves the file (``truncate_wal`` then removes the
        # older page versions from the write-ahead log).
        cursor.execute(SECURE_DELETE)
    finally:
        cursor.close()


def _begin_sqlite_transaction(connection: Connection) -> None:
    # Python's sqlite3 module only opens a transaction before DML, so DDL (migrations) and SAVEPOINTs would run
    # outside of one; emitting BEGIN ourselves makes both transactional (SQLAlchemy's documented pysqlite recipe).
    # IMMEDIATE takes the write lock up front: a deferred transaction that reads and then writes fails at once with
    # "database is locked" when another connection committed in between (the busy timeout does not apply to that
    # upgrade), whereas IMMEDIATE simply waits its turn. In WAL mode readers are never blocked by it.
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def create_db_engine(url: str, *, echo: bool = False) -> Engine:
    """An engine for ``url``; for a SQLite file, its parent directory is created if missing."""
    if not is_sqlite_url(url):
        return create_engine(url, echo=echo, pool_recycle=POOL_RECYCLE_S, pool_pre_ping=True)

    connect_args: dict[str, Any] = {"check_same_thread": False}
    if _is_sqlite_memory(url):
        # One shared connection, otherwise every pooled connection would see its own empty database.
        engine = create_engine(url, echo=echo, connect_args=connect_args, poolclass=StaticPool)
    else:
        database = make_url(url).database
        if database:
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, echo=echo, connect_args=connect_args)
    event.listen(engine, "connect", _set_sqlite_pragmas)
    event.listen(engine, "begin", _begin_sqlite_transaction)
    return engine


def truncate_wal(engine: Engine) -> bool:
    """Copy a SQLite database's write-ahead log into the database file and empty the log, so that pages an erasure
    overwrote (``secure_delete``) leave no older copy behind in ``-wal``. True when done, or nothing to do (not a
    SQLite file); False when another connection was still reading an older snapshot after the busy timeout: the
    log then empties at a later checkpoint."""
    if not is_sqlite_url(str(engine.url)) or _is_sqlite_memory(str(engine.url)):
        return True
    connection = engine.raw_connection()
    try:
        # The driver connection is in autocommit mode (_set_sqlite_pragmas): a checkpoint cannot run in a transaction.
        driver = connection.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        return truncate_sqlite_wal(driver)
    finally:
        connection.close()


def is_database_unavailable(error: BaseException) -> bool:
    """Whether ``error`` says the database cannot be reached or cannot take the step now (worth retrying later),
    rather than that the statement is wrong: a connection refused or broken, a server shutting down or out of
    connections, a statement cancelled by a timeout, SQLite busy past its timeout, or no pooled connection free."""
    if isinstance(error, PoolTimeoutError):
        return True
    if not isinstance(error, DBAPIError):
        return False
    if error.connection_invalidated:
        return True
    if not isinstance(error, OperationalError):
        return False
    code = getattr(error.orig, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in SQLITE_BUSY_CODES  # extended codes keep the primary code in their low byte
    # psycopg files connection failures (SQLSTATE class 08), server shutdown (57P) and lack of resources (53) here.
    return True


def autocommit_step(session: Session) -> None:
    """On PostgreSQL, run the session's next step (up to its commit) without a transaction: for reads, and for
    one statement whose own atomicity suffices. Nothing happens on SQLite, or when the session already is inside a
    transaction (its pending work stays atomic)."""
    if session.in_transaction() or session.new or session.dirty or session.deleted:
        return
    if session.get_bind().dialect.name == "postgresql":
        session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})


def get_session(connection: HTTPConnection) -> Iterator[Session]:
    """FastAPI dependency: one session per request (or websocket) on ``app.state.db``."""
    engine: Engine | None = getattr(connection.app.state, "db", None)
    if engine is None:
        raise RuntimeError(
            "No database engine on app.state.db; the application factory must set it "
            "(app.state.db = create_db_engine(settings.resolved_database_url)) before serving requests."
        )
    # Rows stay readable after commit without a new query (and so without a new SQLite write transaction).
    with Session(engine, expire_on_commit=False) as session:
        yield session


def alembic_config(*, output_buffer: TextIO | None = None) -> Config:
    """The alembic configuration for ``app/migrations``, built in code (there is no alembic.ini).

    ``output_buffer`` receives the SQL of offline (``sql=True``) runs.
    """
    config = Config(output_buffer=output_buffer)
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def migrate(url: str, *, revision: str = "head") -> None:
    """Upgrade the database at ``url`` to ``revision`` (default: the newest); a no-op when already there."""
    engine = create_db_engine(url)
    try:
        upgrade(engine, revision=revision)
    finally:
        engine.dispose()


def upgrade(engine: Engine, *, revision: str = "head") -> None:
    """Like ``migrate`` but on an existing engine (tests, or an app that already built one)."""
    _run_migrations(engine, lambda config: command.upgrade(config, revision))


def downgrade(engine: Engine, *, revision: str) -> None:
    """Downgrade the database to ``revision`` (``"base"`` removes every table)."""
    _run_migrations(engine, lambda config: command.downgrade(config, revision))


def _run_migrations(engine: Engine, run: Callable[[Config], None]) -> None:
    """Run alembic on one connection in one transaction.

    On SQLite, some migrations rebuild a table (copy, drop, rename); with foreign keys on, dropping the old table
    would cascade into every table that references it. SQLite's own procedure for schema changes is followed:
    foreign keys off (only possible outside a transaction), the change, a foreign-key check, foreign keys on.
    SQLite's ``BEGIN IMMEDIATE`` already serialises two processes; on PostgreSQL the transaction first takes the
    migration advisory lock, held until it commits. Alembic reads the current revision after that, each statement
    with a fresh snapshot, so a process that waited sees what the other one migrated.
    """
    config = alembic_config()
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            _sqlite_foreign_keys(connection, enabled=False)
        try:
            with connection.begin():
                if connection.dialect.name == "postgresql":
                    connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
                config.attributes[CONNECTION_ATTRIBUTE] = connection
                run(config)
                if sqlite and connection.exec_driver_sql("PRAGMA foreign_key_check").first() is not None:
                    raise RuntimeError("The migration left rows that break a foreign key; it was rolled back.")
        finally:
            if sqlite:
                _sqlite_foreign_keys(connection, enabled=True)


def _sqlite_foreign_keys(connection: Connection, *, enabled: bool) -> None:
    # On the driver connection itself: it is in autocommit mode (see _set_sqlite_pragmas), so this runs outside any
    # transaction, the only place where SQLite honours it.
    driver = connection.connection.driver_connection
    assert driver is not None
    driver.execute(f"PRAGMA foreign_keys={'ON' if enabled else 'OFF'}")


def current_revision(engine: Engine) -> str | None:
    """The alembic revision the database is at, or None for an empty (never migrated) database."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
