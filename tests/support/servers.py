"""Servers for tests and benchmarks: a free port, waiting until a server answers, a subprocess that is always stopped,
and an ASGI app in a uvicorn thread. Every server that the tests, the benchmarks and the packaging tests start goes
through here.

Lifecycle of a subprocess: ``started_process(command, log_path=..., url=...)`` starts it with its output in
``log_path``, waits until ``url`` answers 200 (``wait_until_answers``: fails at once, with the output, when the
process exits first), yields a ``StartedProcess``, and stops it on the way out whatever happened: the stop signal
(SIGTERM unless told), then SIGKILL when it has not exited in time. ``start_process`` is the same without the
``with``, for a caller that stops the process itself. An app in this process: ``app_in_thread(app)`` binds
127.0.0.1 on a port of its own, serves from a daemon thread, yields the URL once uvicorn has started, and shuts down
afterwards. Failures raise ``ServerDidNotStart`` with the end of the server's output.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

LOOPBACK_HOST = "127.0.0.1"
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
APP_STOP_TIMEOUT_S = 15.0
POLL_INTERVAL_S = 0.05
APP_POLL_INTERVAL_S = 0.01
PROBE_TIMEOUT_S = 1.0
OUTPUT_TAIL_CHARS = 4000


class ServerDidNotStart(RuntimeError):
    """A server exited or stayed silent while it was waited for; the message ends with its output."""


def free_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released), for a server that binds it itself."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK_HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def loopback_url(port: int) -> str:
    return f"http://{LOOPBACK_HOST}:{port}"


@dataclass
class StartedProcess:
    """A server subprocess, its output file and the URL it answers on (None when nothing was waited for)."""

    process: subprocess.Popen[bytes]
    log_path: Path
    url: str | None = None
    command: Sequence[str] = ()

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def output_tail(self) -> str:
        return self.output()[-OUTPUT_TAIL_CHARS:]

    def stop(self, *, stop_signal: signal.Signals = signal.SIGTERM, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """``stop_signal``, then SIGKILL if the process is still there after ``timeout_s``; its exit status."""
        return stop_process(self.process, stop_signal=stop_signal, timeout_s=timeout_s)


def stop_process(
    process: subprocess.Popen[bytes], *, stop_signal: signal.Signals = signal.SIGTERM, timeout_s: float = STOP_TIMEOUT_S
) -> int:
    """Stop ``process`` if it still runs: ``stop_signal``, then SIGKILL after ``timeout_s``; its exit status."""
    if process.poll() is None:
        process.send_signal(stop_signal)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait(timeout=timeout_s)


def wait_until_answers(url: str, *, timeout_s: float = READY_TIMEOUT_S, process: StartedProcess | None = None) -> None:
    """Poll ``GET url`` until it answers 200. With ``process``: fail as soon as it exits, showing its output."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        if process is not None and process.process.poll() is not None:
            raise ServerDidNotStart(
                f"{_name(process)} exited with status {process.process.returncode} before {url} answered"
                f"{_output_section(process)}"
            )
        try:
            response = httpx.get(url, timeout=PROBE_TIMEOUT_S)
        except httpx.HTTPError as error:
            last = repr(error)
        else:
            if response.status_code == 200:
                return
            last = f"status {response.status_code}"
        time.sleep(POLL_INTERVAL_S)
    what = _name(process) if process is not None else "the server"
    raise ServerDidNotStart(
        f"{url} did not answer 200 within {timeout_s:.0f} s ({last}) from {what}"
        f"{_output_section(process) if process is not None else ''}"
    )


def start_process(
    command: Sequence[str],
    *,
    log_path: Path,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout_s: float = READY_TIMEOUT_S,
) -> StartedProcess:
    """Start ``command`` with its standard output and error appended to ``log_path``; when ``url`` is given, return
    once it answers. A process that does not come up is stopped before the error is raised."""
    with log_path.open("ab") as log:
        process = subprocess.Popen(list(command), cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    started = StartedProcess(process=process, log_path=log_path, url=url, command=tuple(command))
    if url is not None:
        try:
            wait_until_answers(url, timeout_s=timeout_s, process=started)
        except BaseException:
            started.stop()
            raise
    return started


@contextlib.contextmanager
def started_process(
    command: Sequence[str],
    *,
    log_path: Path,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout_s: float = READY_TIMEOUT_S,
    stop_signal: signal.Signals = signal.SIGTERM,
    stop_timeout_s: float = STOP_TIMEOUT_S,
) -> Iterator[StartedProcess]:
    """``start_process`` in a ``with``: the process is stopped when the block ends, however it ends."""
    started = start_process(command, log_path=log_path, url=url, env=env, cwd=cwd, timeout_s=timeout_s)
    try:
        yield started
    finally:
        started.stop(stop_signal=stop_signal, timeout_s=stop_timeout_s)


@contextlib.contextmanager
def app_in_thread(app: Any, *, timeout_s: float = READY_TIMEOUT_S, **config: Any) -> Iterator[str]:
    """Serve the ASGI ``app`` with uvicorn (``config``: more ``uvicorn.Config`` options) from a daemon thread on a
    127.0.0.1 port of its own; yields the URL once uvicorn has started, shuts it down afterwards."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((LOOPBACK_HOST, 0))
    server = uvicorn.Server(uvicorn.Config(app, **{"log_level": "warning", "lifespan": "on", **config}))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, name="uvicorn-app", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout_s
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise ServerDidNotStart(f"the app in a uvicorn thread did not start within {timeout_s:.0f} s")
            time.sleep(APP_POLL_INTERVAL_S)
        yield loopback_url(listener.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(timeout=APP_STOP_TIMEOUT_S)
        listener.close()


def _name(process: StartedProcess) -> str:
    if not process.command:
        return f"process {process.pid}"
    program, *arguments = process.command
    return " ".join([Path(program).name, *arguments])


def _output_section(process: StartedProcess) -> str:
    return f"\n--- its output ({process.log_path}) ---\n{process.output_tail()}"
