"""The record ``memdesk serve`` keeps of itself under the data directory: its pid, where it answers, its database.

Other ``memdesk`` commands read it to find the server that owns a data directory, wherever it listens (``--host``
and ``--port`` may differ from the settings), and to tell whether it serves the database they were asked about.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from app.pid_files import PidFile, process_alive

SERVER_RECORD_NAME = "memdesk-serve.json"
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


def record_this_server(data_dir: Path, *, url: str, database: str) -> bool:
    """Write the record for this process; False (and nothing written) when another live server holds it."""
    record = server_record(data_dir)
    current = record.read()
    if current is not None and current["pid"] != os.getpid() and process_alive(current["pid"]):
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
