"""The benchmarks' LLM: the test kit's scripted OpenAI-compatible server in a process of its own, so that its CPU
is counted apart from memdesk's and the load generator's.

``scripted_llm(rule, log_path)`` picks a free port, starts
``python -m benchmarks.harness.scripted_llm --port PORT --rule MODULE:FUNCTION`` through ``tests.support.servers``,
waits until ``/v1/models`` answers, yields it, and stops it afterwards. The child answers every chat request with
the rule's reply (``instant_reply``: the same text at once) until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from tests.support.scripted_llm import ChatRule, RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.servers import StartedProcess, free_port, loopback_url, started_process

REPLY_TEXT = "Thanks for your message. Your order is on its way and should arrive within two business days."
INSTANT_REPLY = "benchmarks.harness.scripted_llm:instant_reply"
STARTUP_TIMEOUT_S = 30.0
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def instant_reply(request: RecordedRequest) -> ScriptedReply:
    return ScriptedReply(text=REPLY_TEXT)


@dataclass(frozen=True)
class ScriptedLLMProcess:
    started: StartedProcess
    base_url: str

    @property
    def pid(self) -> int:
        return self.started.pid


@contextlib.contextmanager
def scripted_llm(rule: str, log_path: Path) -> Iterator[ScriptedLLMProcess]:
    """The scripted LLM answering with ``rule`` (``MODULE:FUNCTION``), running until the block ends."""
    port = free_port()
    command = [sys.executable, "-m", "benchmarks.harness.scripted_llm", "--port", str(port), "--rule", rule]
    url = loopback_url(port)
    with started_process(command, log_path=log_path, url=f"{url}/v1/models", timeout_s=STARTUP_TIMEOUT_S) as started:
        yield ScriptedLLMProcess(started, f"{url}/v1")


def load_rule(reference: str) -> ChatRule:
    module, _, name = reference.partition(":")
    return cast(ChatRule, getattr(importlib.import_module(module), name))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the scripted LLM of the benchmarks, until SIGTERM")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rule", default=INSTANT_REPLY, help="MODULE:FUNCTION answering each chat request")
    args = parser.parse_args(argv)
    rule = load_rule(args.rule)
    # Blocked before the server thread starts, so that thread inherits the mask and only sigwait() sees the signal.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    with ScriptedLLMServer(rule=rule, port=args.port):
        signal.sigwait(STOP_SIGNALS)


if __name__ == "__main__":
    main()
