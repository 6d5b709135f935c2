"""``memdesk serve`` and its local model child, as processes: stopped by SIGTERM and SIGINT, stopped when the server
fails, reclaimed after ``kill -9``, and never mistaken for, or killed in place of, something else on its port.

Each test runs ``memdesk serve`` as a real subprocess (``tests.support.serve_process``) on the embedded defaults, with
the demo model replaced by a stand-in child process (``tests.support.stand_in_model``) so that no test waits for
llama.cpp.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.infra.pid_files import process_alive
from app.llm.local_model import is_local_model_process, port_in_use
from tests.support.serve_process import TEST_SECRET_KEY, start_serve
from tests.support.servers import free_port, loopback_url, started_process
from tests.support.stand_in_model import install_stand_in, started_pids

STOP_LIMIT_S = 30.0
EXIT_LIMIT_S = 60.0


@dataclass
class Setup:
    work_dir: Path
    model_port: int
    pythonpath: str
    pids_path: Path

    @property
    def data_dir(self) -> Path:
        return self.work_dir / "data"

    @property
    def model_pid_file(self) -> Path:
        return self.data_dir / "local-model.pid"

    def settings(self, **extra: str) -> dict[str, str]:
        return {
            "PYTHONPATH": self.pythonpath,
            "STAND_IN_PIDS": str(self.pids_path),
            "MEMDESK_LOCAL_MODEL_PORT": str(self.model_port),
            "MEMDESK_MEMORY_EMBEDDER": "hashing",
            **extra,
        }

    def model_pid(self) -> int:
        pid: int = json.loads(self.model_pid_file.read_text())["pid"]
        return pid

    def children(self) -> list[int]:
        return started_pids(self.pids_path)


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    prepared = Setup(
        work_dir=tmp_path / "serve",
        model_port=free_port(),
        pythonpath=install_stand_in(tmp_path / "stand-in"),
        pids_path=tmp_path / "stand-in-pids.txt",
    )
    yield prepared
    for pid in prepared.children():  # whatever a failing test left behind
        if process_alive(pid):
            os.kill(pid, signal.SIGKILL)


def run_serve_to_exit(setup: Setup, settings: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``memdesk serve`` that is expected to end by itself; its output and exit code."""
    environment = {
        **{key: value for key, value in os.environ.items() if not key.startswith("MEMDESK_")},
        "MEM0_TELEMETRY": "False",
        "MEMDESK_ENVIRONMENT": "test",
        "MEMDESK_SECRET_KEY": TEST_SECRET_KEY,
        "MEMDESK_DATA_DIR": str(setup.data_dir),
        "MEMDESK_ACCESS_LOG": "false",
        **settings,
    }
    setup.work_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "serve"],
        cwd=setup.work_dir,
        env=environment,
        capture_output=True,
        text=True,
        timeout=EXIT_LIMIT_S,
    )


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_ends_serve_and_its_local_model(setup: Setup, stop_signal: signal.Signals) -> None:
    served = start_serve(setup.work_dir, setup.settings())
    try:
        model = setup.model_pid()
        assert is_local_model_process(model) and port_in_use(setup.model_port)
        served.process.send_signal(stop_signal)
        assert served.process.wait(timeout=STOP_LIMIT_S) == 0, served.log()
    finally:
        served.ensure_stopped()
    assert not process_alive(model), f"the local model outlived memdesk serve:\n{served.log()}"
    assert not port_in_use(setup.model_port)
    assert not setup.model_pid_file.exists()
    assert not (setup.data_dir / "memdesk-serve.json").exists()
    assert f"stopping ({stop_signal.name})" in served.log()


def test_a_stop_signal_while_the_local_model_loads_leaves_no_child(setup: Setup) -> None:
    setup.work_dir.mkdir(parents=True)
    log_path = setup.work_dir / "serve.log"
    environment = {
        **{key: value for key, value in os.environ.items() if not key.startswith("MEMDESK_")},
        "MEM0_TELEMETRY": "False",
        "MEMDESK_ENVIRONMENT": "test",
        "MEMDESK_SECRET_KEY": TEST_SECRET_KEY,
        "MEMDESK_DATA_DIR": str(setup.data_dir),
        **setup.settings(STAND_IN_STARTUP_DELAY_S="60"),
    }
    command = [sys.executable, "-m", "app.cli", "serve"]
    with started_process(command, log_path=log_path, env=environment, cwd=setup.work_dir) as serving:
        deadline = time.monotonic() + EXIT_LIMIT_S
        while not setup.children() and time.monotonic() < deadline:
            time.sleep(0.1)
        (child,) = setup.children()
        serving.process.send_signal(signal.SIGTERM)
        assert serving.process.wait(timeout=STOP_LIMIT_S) == 0, serving.output()
    assert not process_alive(child), log_path.read_text()
    assert not setup.model_pid_file.exists()


def test_a_server_that_fails_to_start_stops_its_local_model(setup: Setup) -> None:
    with socket.socket() as taken:  # the server's own port is taken: uvicorn cannot bind and gives up
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = run_serve_to_exit(setup, setup.settings(MEMDESK_PORT=str(taken.getsockname()[1])))
    assert result.returncode != 0 and "address already in use" in result.stderr, result.stdout + result.stderr
    (child,) = setup.children()
    assert not process_alive(child), "the local model outlived the failed server"
    assert not setup.model_pid_file.exists()


def test_a_local_model_left_by_a_killed_server_is_stopped_at_the_next_start(setup: Setup) -> None:
    first = start_serve(setup.work_dir, setup.settings())
    orphan = setup.model_pid()
    first.kill_hard()
    assert process_alive(orphan) and port_in_use(setup.model_port), "kill -9 should leave the model running"

    second = start_serve(setup.work_dir, setup.settings())
    try:
        assert not process_alive(orphan)
        replacement = setup.model_pid()
        assert replacement != orphan and is_local_model_process(replacement)
        assert f"Stopping the demo model (pid {orphan}, port {setup.model_port})" in second.log()
        second.stop(timeout_s=STOP_LIMIT_S)
    finally:
        second.ensure_stopped()
    assert not process_alive(replacement)


def test_the_local_model_of_a_server_still_running_is_left_alone(setup: Setup) -> None:
    first = start_serve(setup.work_dir, setup.settings())
    try:
        model = setup.model_pid()
        result = run_serve_to_exit(setup, setup.settings(MEMDESK_PORT=str(free_port())))
        assert result.returncode == 1
        # On SQLite the data directory's server lock refuses it before the model is looked at.
        assert f"memdesk serve (pid {first.process.pid}, {first.url}) already runs on the data directory" in (
            result.stderr
        )
        assert process_alive(model) and setup.model_pid() == model
        first.stop(timeout_s=STOP_LIMIT_S)
    finally:
        first.ensure_stopped()


def test_a_model_server_this_data_directory_did_not_start_is_reported_and_left_running(setup: Setup) -> None:
    with started_process(
        [sys.executable, "-m", "llama_cpp.server", "--port", str(setup.model_port), "--model_alias", "other-model"],
        log_path=setup.work_dir.parent / "foreign-model.log",
        url=f"{loopback_url(setup.model_port)}/v1/models",
        env={**os.environ, "PYTHONPATH": setup.pythonpath},
        timeout_s=STOP_LIMIT_S,
    ) as foreign:
        result = run_serve_to_exit(setup, setup.settings())
        assert result.returncode == 1
        assert (
            f"Port {setup.model_port} for the demo model is already taken by a model server (serving other-model) "
            "that this data directory did not start"
        ) in result.stderr
        assert "MEMDESK_LOCAL_MODEL_PORT" in result.stderr
        assert foreign.process.poll() is None, "memdesk must not stop a process it did not start"


def test_a_port_held_by_another_program_is_reported(setup: Setup) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", setup.model_port))
        taken.listen()
        result = run_serve_to_exit(setup, setup.settings())
    assert result.returncode == 1
    assert f"Port {setup.model_port} for the demo model is already taken by another program" in result.stderr
    assert setup.children() == [], "no model may start on a taken port"
