"""``memdesk serve --workers N`` with real processes: several workers on PostgreSQL behind one port, and the refusals
that keep a single-process setup (SQLite) to one server."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.infra.pid_files import process_alive
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.serve_process import ServeProcess, scripted_llm_settings, serve_until_exit, start_serve

REPLY_TIMEOUT_S = 15.0
# New connections are spread over the workers by the kernel, not in turn: enough tries to meet every worker.
SCRAPES_TO_MEET_EVERY_WORKER = 200
TURNS_TO_MEET_EVERY_WORKER = 40
REFUSAL_TIMEOUT_S = 60.0
WORKERS_GONE_TIMEOUT_S = 15.0
PROCESS_LINE = re.compile(r'^memdesk_process\{pid="(\d+)"\} 1\.0$', re.MULTILINE)
STATEMENT_LINE = re.compile(r'^memdesk_db_statements_total\{kind="(\w+)"\} ([0-9.e+]+)$', re.MULTILINE)
# What a spawned worker must not import before it can answer its supervisor's health ping: seconds of CPU each.
HEAVY_MODULES = ("mem0", "openai", "qdrant_client", "sqlalchemy", "fastapi", "onnxruntime")
TURN_LINE = re.compile(r'^memdesk_turns_total\{outcome="answered"\} ([0-9.e+]+)$', re.MULTILINE)


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server


def two_worker_settings(postgres_server: Any, llm: ScriptedLLMServer) -> dict[str, str]:
    """Two workers on a new database of the test PostgreSQL server."""
    name = f"memdesk_{uuid.uuid4().hex[:12]}"
    postgres_server.psql(f"CREATE DATABASE {name};")
    socket_dir = postgres_server.get_uri().split("host=")[-1]
    return {
        **scripted_llm_settings(llm),
        "MEMDESK_DATABASE_URL": f"postgresql+psycopg://postgres:@/{name}?host={socket_dir}",
        "MEMDESK_WORKERS": "2",
    }


@pytest.fixture(scope="module")
def two_workers(
    postgres_server: Any, llm: ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServeProcess]:
    served = start_serve(tmp_path_factory.mktemp("two-workers"), two_worker_settings(postgres_server, llm))
    try:
        yield served
        assert served.stop(timeout_s=20) < 20, served.log()[-4000:]
    finally:
        served.ensure_stopped()


@dataclass
class Scrape:
    pid: int
    statements: dict[str, float]
    turns: float


def scrape(url: str) -> Scrape:
    """One ``/metrics`` answer, on a new connection (so any worker may take it)."""
    text = httpx.get(f"{url}/metrics", headers={"Connection": "close"}, timeout=5.0).text
    pids = PROCESS_LINE.findall(text)
    assert len(pids) == 1, text[:2000]
    turns = TURN_LINE.findall(text)
    statements = {kind: float(value) for kind, value in STATEMENT_LINE.findall(text)}
    return Scrape(pid=int(pids[0]), statements=statements, turns=float(turns[0]) if turns else 0.0)


def scrape_every_worker(url: str, workers: int) -> dict[int, Scrape]:
    latest: dict[int, Scrape] = {}
    for _ in range(SCRAPES_TO_MEET_EVERY_WORKER):
        answer = scrape(url)
        latest[answer.pid] = answer
        if len(latest) == workers:
            return latest
    raise AssertionError(f"{SCRAPES_TO_MEET_EVERY_WORKER} scrapes met only the workers {sorted(latest)}")


def statements_of_every_worker(url: str, workers: int) -> dict[str, float]:
    totals: dict[str, float] = {}
    for answer in scrape_every_worker(url, workers).values():
        for kind, count in answer.statements.items():
            totals[kind] = totals.get(kind, 0.0) + count
    return totals


def one_turn(url: str) -> str:
    """A visitor's message and the bot's reply, every request on a new connection; the reply's text."""
    with httpx.Client(base_url=url, headers={"Connection": "close"}, timeout=10.0) as client:
        token = client.post("/api/widget/sessions", json={}).json()["token"]
        client.headers["Authorization"] = f"Bearer {token}"
        conversation = client.post("/api/widget/conversations", json={}).json()["id"]
        messages = f"/api/widget/conversations/{conversation}/messages"
        assert client.post(messages, json={"content": "Where is my order?"}).status_code == 202
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while time.monotonic() < deadline:
            replies = [m["content"] for m in client.get(messages).json() if m["role"] == "assistant"]
            if replies:
                return str(replies[0])
            time.sleep(0.05)
    raise AssertionError("no reply within the timeout")


def test_two_workers_on_postgresql_share_the_port_and_both_answer_turns(
    two_workers: ServeProcess, llm: ScriptedLLMServer
) -> None:
    assert "workers:       2 processes on this port" in two_workers.log()
    for _ in range(TURNS_TO_MEET_EVERY_WORKER):
        assert one_turn(two_workers.url)
        workers = scrape_every_worker(two_workers.url, 2)
        if all(answer.turns > 0 for answer in workers.values()):
            break
    else:
        raise AssertionError(f"turns ran on one worker only: { {pid: a.turns for pid, a in workers.items()} }")
    assert two_workers.process.pid not in workers  # the workers are the supervisor's children, not itself


def test_the_statement_counter_moves_by_a_turns_writes(two_workers: ServeProcess) -> None:
    before = statements_of_every_worker(two_workers.url, 2)
    one_turn(two_workers.url)
    after = statements_of_every_worker(two_workers.url, 2)
    moved = {kind: after[kind] - before.get(kind, 0.0) for kind in after}
    assert moved["insert"] >= 2  # the customer's message and the bot's reply at least
    assert moved["begin"] >= 1 and moved["commit"] >= 1
    assert moved["select"] >= 1


def test_the_workers_of_a_killed_server_stop_and_free_the_port(
    postgres_server: Any, llm: ScriptedLLMServer, tmp_path: Path
) -> None:
    served = start_serve(tmp_path, two_worker_settings(postgres_server, llm))
    try:
        workers = {int(pid) for pid in scrape_every_worker(served.url, 2)}
        served.kill_hard()
        deadline = time.monotonic() + WORKERS_GONE_TIMEOUT_S
        while any(process_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(process_alive(pid) for pid in workers)
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{served.url}/healthz", timeout=2.0)
    finally:
        served.ensure_stopped()


def test_two_workers_on_sqlite_are_refused_with_the_setting_to_change(tmp_path: Path, llm: ScriptedLLMServer) -> None:
    refused = serve_until_exit(
        tmp_path, {**scripted_llm_settings(llm), "MEMDESK_WORKERS": "2"}, timeout_s=REFUSAL_TIMEOUT_S
    )
    assert refused.returncode == 2, refused.stderr
    assert "memdesk serve: --workers 2 cannot run: with a SQLite database" in refused.stderr
    assert "Set MEMDESK_DATABASE_URL" in refused.stderr
    assert not (tmp_path / "data" / "memdesk.db").exists()  # refused before anything was touched


def test_a_second_server_on_the_same_sqlite_data_is_refused_until_the_first_is_killed(
    tmp_path: Path, llm: ScriptedLLMServer
) -> None:
    settings = scripted_llm_settings(llm)
    first = start_serve(tmp_path, settings)
    try:
        refused = serve_until_exit(tmp_path, settings, timeout_s=REFUSAL_TIMEOUT_S)
        assert refused.returncode == 1, refused.stderr
        assert f"memdesk serve (pid {first.process.pid}, {first.url}) already runs on the data directory" in (
            refused.stderr
        )
        assert one_turn(first.url)  # the refused one touched nothing of the first's

        first.kill_hard()  # no clean-up runs: the record stays, the lock goes with the process
        assert (tmp_path / "data" / "memdesk-serve.json").exists()
        second = start_serve(tmp_path, settings)
        try:
            assert one_turn(second.url)
        finally:
            second.stop(timeout_s=20)
    finally:
        first.ensure_stopped()


def test_the_memdesk_script_imports_nothing_heavy_so_a_spawned_worker_answers_its_health_ping_at_once() -> None:
    # Every worker of ``serve --workers N`` starts by re-running the ``memdesk`` script (multiprocessing's spawn), and
    # only then answers the supervisor's ping: what the script's one import pulls in is what that costs.
    probe = f"import sys; from app.cli import main; print(sorted(set({HEAVY_MODULES!r}) & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stdout
