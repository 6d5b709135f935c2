"""``memdesk serve``: the support desk under uvicorn, with the embedded demo model as a child when no LLM is set.

Stopping: uvicorn handles SIGTERM and SIGINT itself while it serves (graceful shutdown), then raises the signal
again once it has restored the handlers it found. Those handlers are ``_request_stop``, installed before the local
model starts: it turns the signal into ``StopRequested``, which unwinds ``serve`` through its ``finally`` so the
model child is stopped and the server's record removed. Without it, Python's default SIGTERM action would end the
process on the spot and leave the child running on its port. A crash (an exception out of uvicorn, or uvicorn
exiting because it cannot bind) takes the same ``finally``. With several workers, uvicorn's supervisor takes the
signals over while it runs (SIGINT and SIGTERM stop every worker gracefully, SIGHUP replaces them one by one) and then
returns, into the same ``finally``. Only ``kill -9`` skips it; the model's pid file lets the next start stop what it
left behind (``app.llm.local_model``), and the kernel stops the workers of a killed supervisor
(``app.main.create_worker_app``).

Several processes (``--workers N``, ``app.cli.serve_workers``) need a setup whose data they can share; a setup kept
to one process (a SQLite database, Qdrant's local mode) also refuses a second ``serve`` on the same data directory
through the lock of ``app.cli.running_server.sole_server``, held until this process ends.

Output: every line ``serve`` writes, the banner included, is a log record in ``MEMDESK_LOG_FORMAT`` on standard error
(``app.infra.logs``), and uvicorn gets the same configuration, so a log collector reading JSON lines never meets a line
it cannot parse.
"""

from __future__ import annotations

import logging
import signal
from contextlib import ExitStack
from dataclasses import dataclass
from types import FrameType
from typing import Annotated

import typer

from app.cli.common import (
    CommandError,
    DatabaseUrlOption,
    SettingsConflict,
    database_errors_explained,
    load_settings,
    printable_url,
)
from app.cli.running_server import (
    AnotherServerRunning,
    forget_this_server,
    local_url,
    record_this_server,
    sole_server,
)
from app.cli.serve_workers import SingleProcessData, run_workers, single_process_data, workers_refusal
from app.db import migrate
from app.infra.logs import configure_logging, logging_config
from app.llm.local_model import REAL_ENDPOINT_HINT, LocalModelError, LocalModelServer
from app.playbooks.library import folder_playbooks
from app.playbooks.schema import PlaybookError
from app.settings import MAX_WORKERS, Settings

logger = logging.getLogger(__name__)

# Open event streams never end by themselves: past this, uvicorn closes them so a stop takes seconds, not forever.
GRACEFUL_SHUTDOWN_S = 1
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
LOCAL_MODEL_LOG = "local-model.log"
LOCAL_MODEL_PID_FILE = "local-model.pid"

HostOption = Annotated[
    str | None,
    typer.Option(help="interface to listen on (default: MEMDESK_HOST, 127.0.0.1)", show_default=False),
]
PortOption = Annotated[
    int | None,
    typer.Option(help="port to listen on (default: MEMDESK_PORT, 8000)", show_default=False, min=1, max=65535),
]

WorkersOption = Annotated[
    int | None,
    typer.Option(
        help="server processes on the port (default: MEMDESK_WORKERS, 1); more than one needs PostgreSQL",
        show_default=False,
        min=1,
        max=MAX_WORKERS,
    ),
]


class StopRequested(BaseException):
    """A stop signal outside uvicorn's own handling. A BaseException, like KeyboardInterrupt, so that no
    ``except Exception`` on the way catches it."""


def _request_stop(signal_number: int, frame: FrameType | None) -> None:
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)  # a second signal must not cut the clean-up short
    raise StopRequested(signal.Signals(signal_number).name)


@dataclass(frozen=True)
class Listener:
    host: str
    port: int

    @property
    def url(self) -> str:
        return local_url(self.host, self.port)


def serve_command(
    host: HostOption = None,
    port: PortOption = None,
    workers: WorkersOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Run the support desk (and the demo model when no LLM is set)."""
    settings = load_settings(database_url)
    configure_logging(settings)
    listener = Listener(host or settings.host, port or settings.port)
    worker_count = workers or settings.workers
    refusal = workers_refusal(settings, worker_count)
    if refusal is not None:
        raise SettingsConflict(refusal)
    _check_playbooks(settings)
    with ExitStack() as stack:
        sole = _hold_data_dir(settings, stack)
        with database_errors_explained():
            migrate(settings.resolved_database_url)
        _serve(settings, listener, workers=worker_count, sole=sole)


def _check_playbooks(settings: Settings) -> None:
    """A team's playbook file with errors stops the start here, with its line and reason, not in a traceback."""
    if settings.playbooks == "off" or settings.playbooks_dir is None:
        return
    try:
        folder_playbooks(settings.playbooks_dir)
    except PlaybookError as error:
        raise CommandError(f"MEMDESK_PLAYBOOKS_DIR: {error}") from None


def _hold_data_dir(settings: Settings, stack: ExitStack) -> bool:
    """Take the data directory's server lock (until ``stack`` closes) when the setup allows one server only; True
    when taken."""
    limit = single_process_data(settings)
    if limit is None:
        return False
    try:
        stack.enter_context(sole_server(settings.data_dir))
    except AnotherServerRunning as taken:
        raise CommandError(_already_running(taken, limit)) from None
    return True


def _already_running(taken: AnotherServerRunning, limit: SingleProcessData) -> str:
    holder = taken.holder
    who = f"memdesk serve (pid {holder.pid}, {holder.url})" if holder else "another memdesk serve (still starting)"
    return (
        f"{who} already runs on the data directory {taken.data_dir.resolve()}, and only one may: {limit.reason}. "
        f"Stop that one first, or give this one another MEMDESK_DATA_DIR. {limit.remedy}"
    )


def _serve(settings: Settings, listener: Listener, *, workers: int, sole: bool) -> None:
    handlers = {number: signal.signal(number, _request_stop) for number in STOP_SIGNALS}
    local: LocalModelServer | None = None
    try:
        local = start_local_model(settings) if settings.uses_embedded_llm else None
        database = printable_url(settings.resolved_database_url)
        if not record_this_server(settings.data_dir, url=listener.url, database=database, sole=sole):
            logger.info("Another memdesk serve runs from %s; commands that look for a server find that one.",
                        settings.data_dir)  # fmt: skip
        _log_banner(settings, listener, local, workers)
        if workers == 1:
            _run_uvicorn(settings, listener)
        else:
            run_workers(
                settings,
                host=listener.host,
                port=listener.port,
                workers=workers,
                graceful_shutdown_s=GRACEFUL_SHUTDOWN_S,
            )
    except StopRequested as stop:
        logger.info("memdesk serve stopping (%s).", stop)
    finally:
        if local is not None:
            local.stop()
        forget_this_server(settings.data_dir)
        for number, handler in handlers.items():
            signal.signal(number, handler)


def start_local_model(settings: Settings) -> LocalModelServer:
    """The embedded demo model as a child process, started and ready (``memdesk eval run`` starts it too)."""
    local = LocalModelServer(
        port=settings.local_model_port,
        threads=settings.local_model_threads,
        context_length=settings.context_length,
        log_path=settings.data_dir / LOCAL_MODEL_LOG,
        pid_path=settings.data_dir / LOCAL_MODEL_PID_FILE,
    )
    logger.info("Starting the embedded demo model on %s …", local.base_url)
    try:
        return local.start()
    except LocalModelError as error:
        raise CommandError(str(error)) from error


def _log_banner(settings: Settings, listener: Listener, local: LocalModelServer | None, workers: int) -> None:
    base = listener.url
    lines = [
        f"memdesk is running at {base}",
        f"  demo shop:     {base}/demo   <- open this to chat through the widget",
        f"  staff console: {base}/console   (first account: memdesk staff add EMAIL --name NAME --role admin)",
        f"  API docs:      {base}/docs",
        f"  health:        {base}/healthz",
        f"  widget API:    {base}/api/widget/",
        f"  database:      {printable_url(settings.resolved_database_url)}",
    ]
    if workers > 1:
        lines.append(f"  workers:       {workers} processes on this port")
    if local is not None:
        lines += [f"  LLM:           embedded SmolLM2-135M-Instruct at {local.base_url}", "", REAL_ENDPOINT_HINT]
    else:
        lines.append(f"  LLM:           {settings.chat_model} at {settings.llm_base_url}")
    logger.info("\n".join(lines))


def _run_uvicorn(settings: Settings, listener: Listener) -> None:
    import uvicorn  # the server stack is imported only by the command that serves

    from app.main import create_app
    from app.web.http_protocol import UVICORN_CONFIG

    uvicorn.run(
        create_app(settings),
        host=listener.host,
        port=listener.port,
        log_config=logging_config(settings),
        access_log=settings.access_log,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        **UVICORN_CONFIG,
    )
