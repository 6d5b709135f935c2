"""The record ``memdesk serve`` keeps of itself under the data directory: its pid, where it answers, its database.

Other ``memdesk`` commands read it to find the server that owns a data directory, wherever it listens (``--host``
and ``--port`` may differ from the settings), and to tell whether it serves the database they were asked about.

A server whose data lives in one process's memory (``sole_server``: a SQLite database, Qdrant's local mode) also holds
an OS file lock on ``SERVER_LOCK_NAME`` for its whole life, so a second one on the same data directory is refused.
The operating system drops the lock with its process, however the process ends (``kill -9`` included), so a crashed
server never leaves a refusal behind; the record beside it only names who holds the lock.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from app.infra.pid_files import PidFile, process_alive

SERVER_RECORD_NAME = "memdesk-serve.json"
SERVER_LOCK_NAME = "memdesk-serve.lock"
# A server listening on every interface is reached locally through the loopback address of the same family.
LOOPBACK_FOR_WILDCARD = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}


@dataclass(frozen=True)
class RunningServer:
    pid: int
    url: str  # where this machine reaches it, e.g. http://127.0.0.1:8000
    database: str  # its database URL, password hidden


def server_record(data_dir: Path) -> PidFile:
    return PidFile(data_dir / SERVER_RECORD_NAME)


def local_url(host: str, port: int) -> str:
    """The URL a client on this machine uses for a server listening on ``host``:``port``."""
    reachable = LOOPBACK_FOR_WILDCARD.get(host, host)
    try:
        is_ipv6 = ipaddress.ip_address(reachable).version == 6
    except ValueError:
        is_ipv6 = False  # a host name
    return f"http://[{reachable}]:{port}" if is_ipv6 else f"http://{reachable}:{port}"


class AnotherServerRunning(Exception):
    """The data directory's server lock is held by another process, ``holder`` when its record names it."""

    def __init__(self, data_dir: Path, holder: RunningServer | None) -> None:
        super().__init__(f"another memdesk serve holds {data_dir / SERVER_LOCK_NAME}")
        self.data_dir = data_dir
        self.holder = holder


@contextmanager
def sole_server(data_dir: Path) -> Iterator[None]:
    """Hold the data directory's server lock while the block runs; ``AnotherServerRunning`` when it is taken."""
    data_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(data_dir / SERVER_LOCK_NAME)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise AnotherServerRunning(data_dir, running_server(data_dir)) from None
    try:
        yield
    finally:
        lock.release()


def record_this_server(data_dir: Path, *, url: str, database: str, sole: bool = False) -> bool:
    """Write the record for this process; False (and nothing written) when another live server holds it. ``sole``:
    this process holds the server lock, so whatever the record says is left over (its pid may be reused by now)."""
    record = server_record(data_dir)
    current = record.read()
    if not sole and current is not None and current["pid"] != os.getpid() and process_alive(current["pid"]):
        return False
    record.write({"pid": os.getpid(), "url": url, "database": database})
    return True


def forget_this_server(data_dir: Path) -> None:
    server_record(data_dir).remove_if_names(os.getpid())


def running_server(data_dir: Path) -> RunningServer | None:
    """The server recorded for ``data_dir``, if its process still runs."""
    record = server_record(data_dir).read()
    if record is None or not process_alive(record["pid"]):
        return None
    url, database = record.get("url"), record.get("database")
    if not isinstance(url, str) or not isinstance(database, str):
        return None
    return RunningServer(pid=record["pid"], url=url, database=database)
