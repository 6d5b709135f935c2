"""Databases that go away for real, for the tests of what memdesk answers meanwhile.

``sqlite_write_lock(path)`` holds a SQLite database's write lock from another connection (as a backup tool or a
long migration would) until its block ends: past the busy timeout, the app's transactions fail with "database is
locked".

A PostgreSQL server of its own for tests that stop or restart it, so no other test's server goes away:
``OutagePostgres.start(data_dir)`` starts a pgserver instance in ``data_dir`` (on a Unix socket there); ``url()``
creates a fresh database on it; ``restart()`` is ``pg_ctl -m fast restart`` (what an operator runs to apply a
setting: open sessions are ended, the server is gone for a moment); ``stop()`` and ``resume()`` leave it down for as
long as a test needs. ``close()`` stops it for good.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@contextmanager
def sqlite_write_lock(path: str | Path) -> Iterator[None]:
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# pg_ctl waits (-w) at most this long for the server to stop or to accept connections again.
PG_CTL_TIMEOUT_S = 60


@dataclass
class OutagePostgres:
    server: Any  # pgserver's PostgresServer

    @classmethod
    def start(cls, data_dir: Path) -> OutagePostgres:
        import pgserver

        return cls(pgserver.get_server(str(data_dir), cleanup_mode="stop"))

    @property
    def socket_dir(self) -> str:
        return str(self.server.get_uri()).split("host=")[-1]

    def url(self) -> str:
        """A SQLAlchemy URL to a new, empty database on this server."""
        name = f"memdesk_{uuid.uuid4().hex[:12]}"
        self.server.psql(f"CREATE DATABASE {name};")
        return f"postgresql+psycopg://postgres:@/{name}?host={self.socket_dir}"

    def restart(self) -> float:
        """``pg_ctl -m fast restart``; the seconds until the server accepts connections again."""
        started = time.monotonic()
        self._pg_ctl(["-m", "fast", "-l", str(self.server.log), "restart"])
        return time.monotonic() - started

    def stop(self) -> None:
        self._pg_ctl(["-m", "fast", "stop"])

    def resume(self) -> None:
        """Start the stopped server again with the options it had (its socket directory, no TCP listener)."""
        options = ["-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(self.server.log), "start"]
        self._pg_ctl(options)

    def close(self) -> None:
        # pgserver's own clean-up stops the postmaster it started, by pid; after a restart that one is gone and
        # the new one would be left running, so pg_ctl stops whichever runs on the data directory first.
        from pgserver.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.server.pgdata)
        if info is not None and info.is_running():
            self.stop()
        self.server.cleanup()

    def _pg_ctl(self, arguments: list[str]) -> None:
        from pgserver._commands import pg_ctl

        pg_ctl(["-w", "-t", str(PG_CTL_TIMEOUT_S), *arguments], pgdata=self.server.pgdata,
               user=self.server.system_user, timeout=PG_CTL_TIMEOUT_S + 10)  # fmt: skip
