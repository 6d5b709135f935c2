"""``memdesk serve`` in a child process, for tests that must kill it for real (``kill -9``) or time its shutdown.

The child runs ``python -m app.cli serve`` from this checkout (``PYTHONPATH``), in its own working directory (no
stray ``.env``), configured only through ``MEMDESK_*`` variables; its output goes to ``serve.log`` in that
directory, which a failing test prints.
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

import httpx

from tests.support.live_app import free_port
from tests.support.scripted_llm import ScriptedLLMServer

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 60.0
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

    def stop(self, *, timeout_s: float) -> float:
        """SIGTERM (what a service manager sends); returns the seconds until the process was gone."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            raise AssertionError(f"memdesk serve did not stop within {timeout_s} s:\n{self.log()[-4000:]}") from None
        return time.monotonic() - started

    def ensure_stopped(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


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


def start_serve(work_dir: Path, settings: dict[str, str]) -> ServeProcess:
    """Start ``memdesk serve`` with ``settings`` (``MEMDESK_*`` names) and wait until it answers ``/healthz``."""
    work_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    environment = serve_environment(work_dir, port, settings)
    log_path = work_dir / "serve.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve"],
            cwd=work_dir,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    served = ServeProcess(process=process, url=f"http://127.0.0.1:{port}", log_path=log_path)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"memdesk serve exited with {process.returncode}:\n{served.log()[-4000:]}")
        try:
            if httpx.get(f"{served.url}/healthz", timeout=1.0).status_code == 200:
                return served
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    served.ensure_stopped()
    raise AssertionError(f"memdesk serve did not answer within {READY_TIMEOUT_S} s:\n{served.log()[-4000:]}")


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
