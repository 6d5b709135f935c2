"""``memdesk serve`` in a child process, for tests that must kill it for real (``kill -9``) or time its shutdown.

The child runs ``python -m app.cli serve`` from this checkout (``PYTHONPATH``), in its own working directory (no
stray ``.env``), configured only through ``MEMDESK_*`` variables; its output goes to ``serve.log`` in that
directory, which a failing test prints. ``start_serve`` starts it and waits through ``tests.support.servers``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.servers import READY_TIMEOUT_S, free_port, loopback_url, start_process, stop_process

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
TEST_SECRET_KEY = "test-secret-key-0123456789-abcdefghijklmnop"


@dataclass
class ServeProcess:
    process: subprocess.Popen[bytes]
    url: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill_hard(self) -> None:
        """``kill -9``: no shutdown code runs."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self, *, timeout_s: float, stop_signal: signal.Signals = signal.SIGTERM) -> float:
        """SIGTERM (what a service manager sends; SIGINT is Ctrl-C); returns the seconds until the process was gone."""
        started = time.monotonic()
        self.process.send_signal(stop_signal)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            raise AssertionError(f"memdesk serve did not stop within {timeout_s} s:\n{self.log()[-4000:]}") from None
        return time.monotonic() - started

    def ensure_stopped(self) -> None:
        stop_process(self.process, stop_signal=signal.SIGKILL, timeout_s=10)


def scripted_llm_settings(llm: ScriptedLLMServer) -> dict[str, str]:
    """The settings of a server whose LLM is ``llm``: no retries, no memory, no debounce, no scheduled sync (a test
    adds or overrides what it needs)."""
    return {
        "MEMDESK_LLM_BASE_URL": llm.base_url,
        "MEMDESK_LLM_API_KEY": "test-key",
        "MEMDESK_CHAT_MODEL": "scripted-chat",
        "MEMDESK_LLM_MAX_RETRIES": "0",
        "MEMDESK_MEMORY_ENABLED": "false",
        "MEMDESK_REPLY_DEBOUNCE_S": "0",
        "MEMDESK_SYNC_AT": "",
    }


def serve_environment(work_dir: Path, port: int, settings: dict[str, str]) -> dict[str, str]:
    """The environment of a ``memdesk serve`` child: none of this process's ``MEMDESK_*``, then ``settings``."""
    return {
        **{key: value for key, value in os.environ.items() if not key.startswith("MEMDESK_")},
        "PYTHONPATH": str(REPOSITORY_ROOT),
        "MEM0_TELEMETRY": "False",
        "MEMDESK_ENVIRONMENT": "test",
        "MEMDESK_SECRET_KEY": TEST_SECRET_KEY,
        "MEMDESK_DATA_DIR": str(work_dir / "data"),
        "MEMDESK_PORT": str(port),
        "MEMDESK_ACCESS_LOG": "false",
        **settings,
    }


def serve_until_exit(work_dir: Path, settings: dict[str, str], *, timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run ``memdesk serve`` expecting it to refuse to start: its exit code and output, or a timeout error."""
    work_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "serve"],
        cwd=work_dir,
        env=serve_environment(work_dir, free_port(), settings),
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def start_serve(work_dir: Path, settings: dict[str, str], *, timeout_s: float = READY_TIMEOUT_S) -> ServeProcess:
    """Start ``memdesk serve`` with ``settings`` (``MEMDESK_*`` names) and wait until it answers ``/healthz`` (at
    most ``timeout_s``)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    started = start_process(
        [sys.executable, "-m", "app.cli", "serve"],
        log_path=work_dir / "serve.log",
        url=f"{loopback_url(port)}/healthz",
        env=serve_environment(work_dir, port, settings),
        cwd=work_dir,
        timeout_s=timeout_s,
    )
    return ServeProcess(process=started.process, url=loopback_url(port), log_path=started.log_path)


def start_together(work_dirs: list[Path], settings: dict[str, str], stack: ExitStack) -> list[ServeProcess]:
    """Start one worker per directory at the same moment; each is stopped when ``stack`` closes."""
    with ThreadPoolExecutor(max_workers=len(work_dirs)) as pool:
        starting = [pool.submit(start_serve, work_dir, settings) for work_dir in work_dirs]
        started = [future.result() if future.exception() is None else future.exception() for future in starting]
    for process in started:
        if isinstance(process, ServeProcess):
            stack.callback(process.ensure_stopped)
    for process in started:
        if isinstance(process, BaseException):
            raise process
    return [process for process in started if isinstance(process, ServeProcess)]
