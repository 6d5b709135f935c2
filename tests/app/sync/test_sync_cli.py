"""``memdesk sync`` as an operator runs it: a real process on a real SQLite database, long-term memory on the
embedded store, the scripted LLM answering the summary calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func
from sqlmodel import Session, col, select

from app.cli.sync import EXIT_CONVERSATIONS_FAILED, EXIT_SYNC_BUSY
from app.customer_memory.ids import memory_customer_id
from app.db import create_db_engine, migrate
from app.models import Conclusion, Conversation, Customer, SyncRun
from app.sync import exclusive_sync
from memory.store import CustomerMemory
from tests.memory.conftest import hashing_options
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.serve_process import REPOSITORY_ROOT, TEST_SECRET_KEY, start_serve
from tests.support.settings import CHAT_MODEL, SUMMARY_MODEL, TEST_API_KEY
from tests.support.sync_data import promise_notes, seed_promise_conversations

CLI_TIMEOUT_S = 180
ADMIN_TOKEN = "admin-token-for-the-sync-tests-0123456789"


def _promise_notes(request: RecordedRequest) -> ScriptedReply:
    return ScriptedReply(text=promise_notes(str(request.messages[-1].get("content"))))


def _seed(url: str, count: int) -> list[tuple[int, str]]:
    migrate(url)
    return seed_promise_conversations(url, count)


def _settings(data_dir: Path, llm: ScriptedLLMServer) -> dict[str, str]:
    return {
        "MEMDESK_ENVIRONMENT": "test",
        "MEMDESK_SECRET_KEY": TEST_SECRET_KEY,
        "MEMDESK_DATA_DIR": str(data_dir),
        "MEMDESK_LLM_BASE_URL": llm.base_url,
        "MEMDESK_LLM_API_KEY": TEST_API_KEY,
        "MEMDESK_CHAT_MODEL": CHAT_MODEL,
        "MEMDESK_SUMMARY_MODEL_OVERRIDE": SUMMARY_MODEL,
        "MEMDESK_LLM_MAX_RETRIES": "0",
        "MEMDESK_MEMORY_EMBEDDER": "hashing",
    }


def _sync(data_dir: Path, llm: ScriptedLLMServer, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **{key: value for key, value in os.environ.items() if not key.startswith("MEMDESK_")},
        "PYTHONPATH": str(REPOSITORY_ROOT),
        "MEM0_TELEMETRY": "False",
        **_settings(data_dir, llm),
    }
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "sync", *arguments],
        cwd=data_dir.parent,
        env=environment,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )


def _sync_on_a_terminal(data_dir: Path, llm: ScriptedLLMServer) -> tuple[int, str, str]:
    """``memdesk sync`` with its standard error on a pseudo-terminal, as when an operator runs it by hand; the exit
    code, standard output, and what the terminal showed."""
    controller, terminal = os.openpty()
    shown: list[bytes] = []

    def read_terminal() -> None:  # drained as it comes: a full terminal buffer would block the writer
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the terminal side closed
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    environment = {
        **{key: value for key, value in os.environ.items() if not key.startswith("MEMDESK_")},
        "PYTHONPATH": str(REPOSITORY_ROOT),
        "MEM0_TELEMETRY": "False",
        **_settings(data_dir, llm),
    }
    try:
        process = subprocess.run(
            [sys.executable, "-m", "app.cli", "sync"],
            cwd=data_dir.parent,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=terminal,
            text=True,
            timeout=CLI_TIMEOUT_S,
        )
    finally:
        os.close(terminal)
        reader.join(timeout=10)
        os.close(controller)
    return process.returncode, process.stdout, b"".join(shown).decode(errors="replace")


def _record(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The one JSON object ``--json`` prints, and nothing else on standard output."""
    assert result.stdout.count("\n") == 1, result.stdout + result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def _database_state(url: str) -> tuple[int, int, int]:
    """Outbox rows, run records, and conversations with a watermark."""
    engine = create_db_engine(url)
    try:
        with Session(engine) as session:
            conclusions = session.exec(select(func.count()).select_from(Conclusion)).one()
            runs = session.exec(select(func.count()).select_from(SyncRun)).one()
            marked = select(func.count()).where(col(Conversation.synced_through_message_id).is_not(None))
            return int(conclusions), int(runs), int(session.exec(marked).one())
    finally:
        engine.dispose()


def _memories(data_dir: Path, customers: list[int]) -> dict[int, list[str]]:
    """Each customer's memories as ``text (kind, due date)``, read from the store in this process."""
    store = CustomerMemory(hashing_options(data_dir))
    try:
        return {
            customer: [f"{m.text} ({m.kind}, {m.due_date})" for m in store.list(memory_customer_id(customer))]
            for customer in customers
        }
    finally:
        store.close()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_promises_synced_through_the_cli_reach_memory_once_and_a_rerun_writes_nothing(
    data_dir: Path, scripted_server: ScriptedLLMServer
) -> None:
    url = f"sqlite:///{data_dir / 'memdesk.db'}"
    seeded = _seed(url, 3)
    scripted_server.set_rule(_promise_notes)

    first = _record(_sync(data_dir, scripted_server, "--limit", "1", "--json"))
    assert (first["scanned"], first["summarized"], first["conclusions_written"], first["failed"]) == (1, 1, 1, 0)
    assert first["status"] == "finished" and first["usage"][SUMMARY_MODEL]["prompt_tokens"] > 0
    _, third = seeded[2]
    chosen = _record(_sync(data_dir, scripted_server, "--conversation", third, "--json"))
    assert (chosen["scanned"], chosen["conclusions_written"]) == (1, 1)
    rest = _record(_sync(data_dir, scripted_server, "--json"))
    assert (rest["scanned"], rest["summarized"], rest["conclusions_written"]) == (1, 1, 1)
    assert len(scripted_server.requests) == 3

    memories = _memories(data_dir, [customer for customer, _ in seeded])
    assert all(len(texts) == 1 and f"#W{number:07d}" in texts[0] for number, texts in enumerate(memories.values(), 1))
    assert memories[seeded[0][0]] == ["Full refund for order #W0000001 (promise, 2026-12-05)"]

    rerun = _sync(data_dir, scripted_server, "--json")
    assert rerun.returncode == 0, rerun.stderr
    assert (_record(rerun)["scanned"], _record(rerun)["conclusions_written"]) == (0, 0)
    assert len(scripted_server.requests) == 3, "a rerun called the LLM"
    assert _database_state(url) == (3, 4, 3)
    assert _memories(data_dir, [customer for customer, _ in seeded]) == memories


def test_a_dry_run_reports_what_it_would_do_and_writes_nothing(
    data_dir: Path, scripted_server: ScriptedLLMServer
) -> None:
    url = f"sqlite:///{data_dir / 'memdesk.db'}"
    seeded = _seed(url, 2)
    scripted_server.set_rule(_promise_notes)

    result = _sync(data_dir, scripted_server, "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    planned = _record(result)
    assert planned["dry_run"] is True and (planned["scanned"], planned["summarized"]) == (2, 2)
    assert planned["to_summarize"] == [conversation for _, conversation in seeded]
    as_table = _sync(data_dir, scripted_server, "--dry-run")
    assert as_table.returncode == 0, as_table.stderr
    assert as_table.stdout.startswith("Conclusion sync, dry run: nothing was written.\n")
    assert f"would summarize {seeded[0][1]}" in as_table.stdout
    assert scripted_server.requests == []
    assert _database_state(url) == (0, 0, 0)


def test_a_failing_summary_model_fails_the_run_and_the_conversations_wait_for_the_next(
    data_dir: Path, scripted_server: ScriptedLLMServer
) -> None:
    url = f"sqlite:///{data_dir / 'memdesk.db'}"
    seeded = _seed(url, 2)
    scripted_server.set_rule(lambda request: ScriptedReply.http_error(503))

    result = _sync(data_dir, scripted_server, "--json")
    assert result.returncode == EXIT_CONVERSATIONS_FAILED, result.stderr
    record = _record(result)
    assert (record["scanned"], record["failed"], record["conclusions_written"]) == (2, 2, 0)
    assert sorted(error["conversation_id"] for error in record["errors"]) == sorted(c for _, c in seeded)
    as_table = _sync(data_dir, scripted_server)
    assert as_table.returncode == EXIT_CONVERSATIONS_FAILED
    assert "Failed conversations" in as_table.stdout and seeded[0][1] in as_table.stdout
    assert _database_state(url) == (0, 2, 0), "no watermark moved: the next run retries both"

    scripted_server.set_rule(_promise_notes)
    recovered = _sync(data_dir, scripted_server, "--json")
    assert recovered.returncode == 0 and _record(recovered)["conclusions_written"] == 2


def test_on_a_terminal_progress_shows_on_standard_error_and_the_table_on_standard_output(
    data_dir: Path, scripted_server: ScriptedLLMServer
) -> None:
    _seed(f"sqlite:///{data_dir / 'memdesk.db'}", 2)
    scripted_server.set_rule(_promise_notes)
    code, table, terminal = _sync_on_a_terminal(data_dir, scripted_server)
    assert code == 0, terminal
    assert "2 conversations: 2 summarized, 0 skipped, 0 failed" in terminal
    assert table.startswith("Conclusion sync 1 (finished).\n")
    assert "conclusions written" in table and "conversations:" not in table
    assert SUMMARY_MODEL in table, "the summary calls' tokens and cost by model"


def test_a_sync_while_another_runs_exits_75_and_does_nothing(
    data_dir: Path, scripted_server: ScriptedLLMServer
) -> None:
    url = f"sqlite:///{data_dir / 'memdesk.db'}"
    _seed(url, 1)
    engine = create_db_engine(url)
    try:
        with exclusive_sync(engine, data_dir):
            result = _sync(data_dir, scripted_server, "--json")
    finally:
        engine.dispose()
    assert result.returncode == EXIT_SYNC_BUSY == 75
    assert result.stdout == ""
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("memdesk sync: A conclusion sync is already running on this data directory")
    assert message.endswith("Nothing was done; run it again once that run has finished.")
    assert _database_state(url) == (0, 0, 0)


def test_sync_runs_beside_a_server_on_the_same_data_directory(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    data_dir = tmp_path / "data"
    url = f"sqlite:///{data_dir / 'memdesk.db'}"
    ((customer, _),) = _seed(url, 1)
    scripted_server.set_rule(_promise_notes)
    settings = {**_settings(data_dir, scripted_server), "MEMDESK_ADMIN_TOKEN": ADMIN_TOKEN, "MEMDESK_SYNC_AT": ""}
    served = start_serve(tmp_path, settings)
    try:
        result = _sync(data_dir, scripted_server, "--json")
        assert result.returncode == 0, result.stderr
        assert _record(result)["conclusions_written"] == 1
        export = httpx.get(
            f"{served.url}/api/admin/customers/{_public_id(url, customer)}/export",
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
            timeout=30.0,
        )
        assert export.status_code == 200, export.text
        texts = [memory["remembered"] for memory in export.json()["memories"]]
        assert texts == ["Full refund for order #W0000001"], "the server reads what the sync wrote"
        served.stop(timeout_s=30)
    finally:
        served.ensure_stopped()


def _public_id(url: str, customer: int) -> str:
    engine = create_db_engine(url)
    try:
        with Session(engine) as session:
            found = session.get(Customer, customer)
            assert found is not None
            return found.public_id
    finally:
        engine.dispose()
