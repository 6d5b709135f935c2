"""``memdesk serve`` for the benchmarks: its environment, its command (optionally under py-spy) and the process,
started through ``tests.support.servers`` and stopped with SIGINT, which uvicorn and a profiler wrapping it both
handle cleanly.

``memdesk_serve(command, env=..., log_path=..., url=...)`` yields the running server once ``/healthz`` answers; when
the block fails, the end of the server's log goes to standard error before the error propagates.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.support.servers import StartedProcess, started_process

STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
SECRET_KEY = "benchmark-secret-key-0123456789abcdef"
CHAT_MODEL = "bench-chat"
LOG_TAIL_CHARS = 3000


def memdesk_environment(data_dir: str, llm_base_url: str, **settings: str) -> dict[str, str]:
    """This process's environment with what every benchmark server runs on (a test environment on ``data_dir``,
    the scripted LLM, no debounce, no access log), then ``settings`` (``MEMDESK_*`` names)."""
    return {
        **os.environ,
        "MEMDESK_ENVIRONMENT": "test",
        "MEMDESK_DATA_DIR": data_dir,
        "MEMDESK_LLM_BASE_URL": llm_base_url,
        "MEMDESK_CHAT_MODEL": CHAT_MODEL,
        "MEMDESK_REPLY_DEBOUNCE_S": "0",
        "MEMDESK_ACCESS_LOG": "false",
        "MEMDESK_SECRET_KEY": SECRET_KEY,
        **settings,
    }


def serve_command(port: int, *, workers: int | None = None) -> list[str]:
    command = [sys.executable, "-m", "app.cli", "serve", "--port", str(port)]
    return command if workers is None else [*command, "--workers", str(workers)]


def profiled(command: list[str], output: Path | str, *, subprocesses: bool = False) -> list[str]:
    """``command`` recorded by py-spy into ``output`` (raw format); with ``subprocesses``, its children too."""
    spy = shutil.which("py-spy")
    if spy is None:
        raise RuntimeError("profiling needs py-spy on PATH (pip install py-spy, outside the project's environment)")
    options = ["--subprocesses"] if subprocesses else []
    return [spy, "record", *options, "-f", "raw", "-o", str(output), "--", *command]


@contextlib.contextmanager
def memdesk_serve(
    command: list[str],
    *,
    env: Mapping[str, str],
    log_path: Path,
    url: str,
    stop_timeout_s: float = STOP_TIMEOUT_S,
) -> Iterator[StartedProcess]:
    """The server of ``command``, answering at ``url``, until the block ends."""
    with started_process(
        command,
        log_path=log_path,
        url=f"{url}/healthz",
        env=env,
        timeout_s=STARTUP_TIMEOUT_S,
        stop_signal=signal.SIGINT,
        stop_timeout_s=stop_timeout_s,
    ) as server:
        try:
            yield server
        except Exception:
            print(server.output()[-LOG_TAIL_CHARS:], file=sys.stderr)
            raise
