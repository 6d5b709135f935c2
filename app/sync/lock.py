"""One sync at a time: a second run while one is going exits with a clear message instead of syncing twice.

On PostgreSQL the lock is a session advisory lock, so several servers on one database never sync together; elsewhere
(SQLite) it is an exclusive ``flock`` on a file beside the database. Both are released by the operating system or
the database when the process dies, so a killed run never blocks the next one.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, text

# An arbitrary constant that names memdesk's sync among the advisory locks of the database.
ADVISORY_LOCK_KEY = 4_261_764_337
LOCK_FILE = "sync.lock"


class SyncAlreadyRunningError(RuntimeError):
    """Another sync holds the lock."""


@contextmanager
def exclusive_sync(db: Engine, data_dir: Path) -> Iterator[None]:
    if db.dialect.name == "postgresql":
        with db.connect() as connection:
            if not connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": ADVISORY_LOCK_KEY}).scalar():
                raise SyncAlreadyRunningError("A conclusion sync is already running against this database.")
            try:
                yield
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": ADVISORY_LOCK_KEY})
                connection.commit()
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / LOCK_FILE, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as error:
            raise SyncAlreadyRunningError(
                f"A conclusion sync is already running on this data directory ({data_dir})."
            ) from error
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
