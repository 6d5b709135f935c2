"""Several server processes on one port (``memdesk serve --workers N``), and when a setup allows them.

Lifecycle: ``serve`` asks ``workers_refusal`` first; with N > 1 it later calls ``run_workers``, which binds the port
once and hands it to uvicorn's supervisor (``uvicorn.supervisors.Multiprocess``). The supervisor spawns N fresh
Python processes; each builds its app with ``app.main.create_worker_app`` from the environment, so every worker has
its own settings, engine, event loop and metrics registry. The kernel hands each new connection to one of them. The
supervisor restarts a worker that dies or stops answering its health pings, stops every worker on SIGINT or SIGTERM
(each shuts down gracefully), and gives up when a worker fails during startup, which ``run_workers`` reports as a
``CommandError``. What must exist once stays with the parent ``serve`` process: the embedded demo model, the
running-server record and the stop-signal handling around them (``app.cli.serve``).

Which setups allow several processes: live events, turn ownership and visitor rate limits are shared through
PostgreSQL only (``app.live.pg_broker``, ``app.turns.ownership``, ``app.ratelimit``); on SQLite they live in one
process's memory. Of the memory stores, pgvector is shared by design and the embedded SQLite store by its file locks
(``memory.sqlite_store``); Qdrant's local mode opens its directory in one process only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from app.cli.common import CommandError
from app.db import is_sqlite_url
from app.infra.logs import logging_config
from app.settings import Settings

WORKER_APP_FACTORY = "app.main:create_worker_app"
# How long the supervisor waits for a worker's answer to its health ping before it kills the worker, and for a
# replacement (SIGHUP) to finish its whole start-up. The answer comes from a thread, not the event loop, which the
# worker starts once Python has re-run the `memdesk` script in the new process (kept light for this, see
# ``app.cli``): about 1.3 s for two workers starting together on two busy cores. Building the app takes longer:
# 30 s measured there, from spawn to "startup complete". A frozen process is noticed later with a long allowance;
# a worker killed or a restart abandoned because the machine is busy would be worse.
WORKER_HEALTHCHECK_TIMEOUT_S = 60


@dataclass(frozen=True)
class SingleProcessData:
    """Why a setup's data may be used by one server process only, and the settings that would lift that."""

    reason: str
    remedy: str


SQLITE_DATABASE = SingleProcessData(
    reason="with a SQLite database, live events, turn scheduling and visitor rate limits are kept in the server "
    "process's memory",
    remedy="Set MEMDESK_DATABASE_URL (or --database-url) to a postgresql+psycopg:// URL to run several.",
)
QDRANT_MEMORY = SingleProcessData(
    reason="MEMDESK_MEMORY_STORE=qdrant (Qdrant's local mode) opens its directory in one process only",
    remedy="Set MEMDESK_MEMORY_STORE=pgvector (or sqlite; `memdesk memory migrate-store` copies the memories), or "
    "MEMDESK_MEMORY_ENABLED=false, to run several.",
)


def single_process_data(settings: Settings) -> SingleProcessData | None:
    """What keeps this setup to one server process, or None when several may share its data."""
    if is_sqlite_url(settings.resolved_database_url):
        return SQLITE_DATABASE
    if settings.memory_enabled and settings.memory_store == "qdrant":
        return QDRANT_MEMORY
    return None


def workers_refusal(settings: Settings, workers: int) -> str | None:
    """The sentence refusing ``workers`` processes on this setup, or None when they may run."""
    limit = single_process_data(settings)
    if workers == 1 or limit is None:
        return None
    return f"--workers {workers} cannot run: {limit.reason}. {limit.remedy} Or run one worker (--workers 1)."


def run_workers(settings: Settings, *, host: str, port: int, workers: int, graceful_shutdown_s: int) -> None:
    """Serve on ``host``:``port`` with ``workers`` processes until a stop signal; returns once every one stopped."""
    import uvicorn  # the server stack is imported only by the command that serves
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    from app.web.http_protocol import UVICORN_CONFIG

    # The workers read their settings from the environment they inherit; a --database-url must reach them too.
    os.environ["MEMDESK_DATABASE_URL"] = settings.resolved_database_url
    config = uvicorn.Config(
        WORKER_APP_FACTORY,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_config=logging_config(settings),
        access_log=settings.access_log,
        timeout_graceful_shutdown=graceful_shutdown_s,
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_TIMEOUT_S,
        **UVICORN_CONFIG,
    )
    socket = config.bind_socket()
    supervisor = Multiprocess(config, sockets=[socket])
    try:
        supervisor.run()
    finally:
        socket.close()
    if any(process.exitcode == STARTUP_FAILURE for process in supervisor.processes):
        raise CommandError("a worker process failed to start (its log lines above say why); every worker stopped.")
