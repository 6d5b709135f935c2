"""Mem0 with an embeddings endpoint that hangs for real (accepts the connection, never answers): real Mem0, the
embedded SQLite store, the ``openai`` embedder pointed at ``EmbeddingEndpoint``.

A hung call holds no lock a later call needs, never blocks a turn for longer than the recall timeout, never grows
the server's threads, loses no conclusion, and never holds up shutdown.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from app.customer_memory.ids import memory_customer_id
from app.customer_memory.outbox import SqlOutboxRepository
from app.customer_memory.service import RECALL_TIMEOUT_S, MemoryService
from app.db import create_db_engine, migrate
from app.models import Conclusion as ConclusionRow
from app.models import Customer, Message, MessageAuthor, MessageRole, OutboxStatus
from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource, content_hash
from memory.config import EmbedderKind, MemoryOptions
from memory.store import CustomerMemory, MemoryStoreBusyError
from tests.memory.embedding_endpoint import EmbeddingEndpoint
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.serve_process import ServeProcess, start_serve
from tests.support.settings import CHAT_MODEL, TEST_API_KEY

PROMISE_TEXT = "Refund of $42.10 for order #W2378156 by 2026-12-02"
QUESTION = "When will my refund for order #W2378156 arrive?"
SHORT_LOCK_TIMEOUT_S = 0.5
SHORT_CALL_TIMEOUT_S = 0.5
HUNG_TURNS = 30
# Threads memdesk may start beyond those it runs with before the hang (anyio starts a worker thread on demand).
MAX_EXTRA_THREADS = 3
SHUTDOWN_LIMIT_S = 5.0
REPLY_TIMEOUT_S = 20.0


def refund_promise(customer_id: str) -> Conclusion:
    due = date.today() + timedelta(days=3)
    return Conclusion(
        customer_id, ConclusionKind.PROMISE, PROMISE_TEXT, ConclusionSource.COMPACTION, due, ("#W2378156",)
    )


def endpoint_options(data_dir: Path, endpoint: EmbeddingEndpoint) -> MemoryOptions:
    return MemoryOptions(
        data_dir=data_dir,
        embedder=EmbedderKind.OPENAI,
        embedding_base_url=endpoint.base_url,
        embedding_api_key="test-embedding-key",
    )


@pytest.fixture
def endpoint() -> Iterator[EmbeddingEndpoint]:
    with EmbeddingEndpoint() as running:
        yield running


@pytest.fixture
def store(tmp_path: Path, endpoint: EmbeddingEndpoint) -> Iterator[CustomerMemory]:
    memory = CustomerMemory(endpoint_options(tmp_path / "memory", endpoint), lock_timeout_s=SHORT_LOCK_TIMEOUT_S)
    yield memory
    endpoint.drop_hung_connections()  # hung calls end: their threads finish before the next test
    memory.close()


def _in_thread(target: object, *args: object) -> tuple[threading.Thread, list[object]]:
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(target(*args))  # type: ignore[operator]
        except Exception as error:
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _wait_for_hung(endpoint: EmbeddingEndpoint, count: int) -> None:
    deadline = time.monotonic() + 5
    while endpoint.hung < count:
        assert time.monotonic() < deadline, "the call never reached the endpoint"
        time.sleep(0.01)


# --- the store: no lock held across an embedding -----------------------------------------------------------------


def test_a_recall_hung_on_the_embedder_does_not_hold_up_the_next_recall(
    store: CustomerMemory, endpoint: EmbeddingEndpoint
) -> None:
    store.remember([refund_promise("7")])
    endpoint.hanging = True
    hung, outcome = _in_thread(store.recall, "7", QUESTION)
    _wait_for_hung(endpoint, 1)

    started = time.monotonic()
    assert [item.text for item in store.list("7")] == [PROMISE_TEXT]  # the store itself is free
    endpoint.hanging = False  # the endpoint recovers; the first request stays hung
    assert [item.text for item in store.recall("7", QUESTION)] == [PROMISE_TEXT]
    assert time.monotonic() - started < SHORT_LOCK_TIMEOUT_S
    assert hung.is_alive() and outcome == []


def test_a_remember_hung_on_the_embedder_makes_the_next_write_fail_fast_not_wait(
    store: CustomerMemory, endpoint: EmbeddingEndpoint
) -> None:
    endpoint.hanging = True
    hung, _ = _in_thread(store.remember, [refund_promise("8")])
    _wait_for_hung(endpoint, 1)
    endpoint.hanging = False

    started = time.monotonic()
    with pytest.raises(MemoryStoreBusyError, match="busy"):
        store.remember([Conclusion("9", ConclusionKind.FACT, "Lives in Lyon", ConclusionSource.COMPACTION)])
    assert time.monotonic() - started < SHORT_LOCK_TIMEOUT_S * 4
    assert store.recall("9", "where does the customer live") == []  # reads do not need the write lock
    assert hung.is_alive()


# --- the service: outbox delivery through the same pool ------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path / 'memdesk.db'}"
    migrate(url)
    engine = create_db_engine(url)
    yield engine
    engine.dispose()


def _queue_promise(db: Engine) -> tuple[int, int]:
    with Session(db) as session:
        customer = Customer(name="Jane")
        session.add(customer)
        session.flush()
        assert customer.id is not None
        memory_id = memory_customer_id(customer.id)
        row = ConclusionRow(
            customer_id=customer.id,
            kind=ConclusionKind.PROMISE,
            text=PROMISE_TEXT,
            identifiers=["#W2378156"],
            source=ConclusionSource.COMPACTION,
            content_hash=content_hash(memory_id, ConclusionKind.PROMISE, PROMISE_TEXT),
        )
        session.add(row)
        session.commit()
        assert row.id is not None
        return customer.id, row.id


def test_outbox_delivery_to_a_hung_embedder_times_out_keeps_the_row_and_delivers_it_after_recovery(
    tmp_path: Path, db: Engine, endpoint: EmbeddingEndpoint
) -> None:
    memory = CustomerMemory(endpoint_options(tmp_path / "memory", endpoint))
    service = MemoryService(
        memory,
        SqlOutboxRepository(db),
        recall_timeout_s=SHORT_CALL_TIMEOUT_S,
        remember_timeout_s=SHORT_CALL_TIMEOUT_S,
    )
    customer_id, row_id = _queue_promise(db)
    endpoint.hanging = True

    async def scenario() -> None:
        report = await service.deliver_now()
        assert (report.delivered, report.failed) == (0, 1)
        assert "DependencyTimeoutError" in report.errors[0]
        assert await service.section(customer_id, QUESTION) == ""  # recall is refused or times out, never blocks

        endpoint.hanging = False
        endpoint.drop_hung_connections()  # the endpoint restarts: the hung call's retry is answered
        deadline = time.monotonic() + 15
        while service.repository.counts().get(OutboxStatus.DELIVERED.value) != 1:
            assert time.monotonic() < deadline, "the row was never delivered after the endpoint recovered"
            await asyncio.sleep(0.5)
            await service.deliver_now()
        assert PROMISE_TEXT in await service.section(customer_id, QUESTION)

    try:
        asyncio.run(scenario())
    finally:
        service.close()
    with Session(db) as session:
        row = session.get(ConclusionRow, row_id)
        assert row is not None and row.attempts >= 1 and "DependencyTimeoutError" in (row.last_error or "")


# --- the server: 30 turns against a hung embedder, recovery, shutdown ----------------------------------------------


def _threads(process: ServeProcess) -> int:
    status = Path(f"/proc/{process.process.pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))


def _bot_replies(db: Engine) -> int:
    with Session(db) as session:
        count = len(
            session.exec(
                select(Message.id).where(Message.role == MessageRole.ASSISTANT, Message.author == MessageAuthor.BOT)
            ).all()
        )
        session.commit()
    return count


class _Chat:
    """One widget conversation on the served app; ``turn`` posts a message and waits for the bot's reply."""

    def __init__(self, served: ServeProcess, db: Engine, llm: ScriptedLLMServer) -> None:
        self.client = httpx.Client(base_url=served.url, timeout=10.0)
        token = self.client.post("/api/widget/sessions", json={}).json()["token"]
        self.client.headers["Authorization"] = f"Bearer {token}"
        self.conversation = self.client.post("/api/widget/conversations", json={}).json()["id"]
        self.db = db
        self.llm = llm

    def turn(self, text: str) -> tuple[float, str]:
        """Seconds until the reply was stored, and the system prompt the LLM got."""
        replies = _bot_replies(self.db)
        started = time.monotonic()
        posted = self.client.post(f"/api/widget/conversations/{self.conversation}/messages", json={"content": text})
        assert posted.status_code == 202, posted.text
        while _bot_replies(self.db) <= replies:
            assert time.monotonic() - started < REPLY_TIMEOUT_S, f"no reply to {text!r}"
            time.sleep(0.02)
        elapsed = time.monotonic() - started
        system = self.llm.chat_requests[-1].messages[-1]["content"]  # the turn context comes last
        return elapsed, system


def _turns_while_the_embedder_hangs(chat: _Chat, served: ServeProcess, endpoint: EmbeddingEndpoint) -> None:
    threads_before = _threads(served)
    endpoint.hanging = True
    durations, thread_counts = [], []
    for number in range(HUNG_TURNS):
        elapsed, system = chat.turn(f"{QUESTION} (try {number})")
        assert PROMISE_TEXT not in system  # answered, without memory
        durations.append(round(elapsed, 2))
        thread_counts.append(_threads(served))
    print(f"threads before the hang {threads_before}, during {thread_counts}")
    print(f"turn seconds during the hang {durations}; hung embedding requests {endpoint.hung}")
    assert max(thread_counts) <= threads_before + MAX_EXTRA_THREADS


def _turns_after_the_embedder_recovers(chat: _Chat, endpoint: EmbeddingEndpoint) -> None:
    endpoint.hanging = False  # the endpoint answers again; requests already hung stay hung
    recovered_turns: list[float] = []
    while True:
        elapsed, system = chat.turn(QUESTION)
        recovered_turns.append(round(elapsed, 2))
        assert elapsed < RECALL_TIMEOUT_S  # no turn waits for a hung call
        if PROMISE_TEXT in system:
            break
        assert len(recovered_turns) < 200, "memory never came back after the endpoint recovered"
        time.sleep(0.1)
    print(f"turn seconds after recovery, until memory was back {recovered_turns}")


def _stop_with_a_recall_hung(chat: _Chat, served: ServeProcess, endpoint: EmbeddingEndpoint) -> None:
    endpoint.hanging = True
    hung_before = endpoint.hung
    # A question not asked before: a repeated one is answered from the query-embedding cache, without the endpoint.
    question = f"{QUESTION} (asked at shutdown)"
    posted = chat.client.post(f"/api/widget/conversations/{chat.conversation}/messages", json={"content": question})
    assert posted.status_code == 202
    _wait_for_hung(endpoint, hung_before + 1)
    chat.client.close()
    stop_s = served.stop(timeout_s=SHUTDOWN_LIMIT_S + 10)
    print(f"stopped in {stop_s:.2f} s with a recall hung")
    assert stop_s < SHUTDOWN_LIMIT_S


def test_a_hung_embedder_costs_turns_their_memory_not_their_answers_threads_or_shutdown(
    tmp_path: Path, endpoint: EmbeddingEndpoint
) -> None:
    seeded = CustomerMemory(endpoint_options(tmp_path / "data", endpoint))
    seeded.remember([refund_promise("1")])  # the first customer of a fresh database has id 1
    seeded.close()
    settings = {
        "MEMDESK_MEMORY_ENABLED": "true",
        "MEMDESK_MEMORY_EMBEDDER": "openai",
        "MEMDESK_MEMORY_EMBEDDING_BASE_URL": endpoint.base_url,
        "MEMDESK_MEMORY_EMBEDDING_API_KEY": "test-embedding-key",
        "MEMDESK_CHAT_MODEL": CHAT_MODEL,
        "MEMDESK_LLM_API_KEY": TEST_API_KEY,
        "MEMDESK_LLM_MAX_RETRIES": "0",
        "MEMDESK_REPLY_DEBOUNCE_S": "0",
        "MEMDESK_VISITOR_MESSAGES_PER_MINUTE": "1000",
    }
    with ScriptedLLMServer() as llm:
        served = start_serve(tmp_path, {**settings, "MEMDESK_LLM_BASE_URL": llm.base_url})
        db = create_db_engine(f"sqlite:///{tmp_path / 'data' / 'memdesk.db'}")
        try:
            chat = _Chat(served, db, llm)
            with Session(db) as session:
                assert session.exec(select(Customer.id)).all() == [1]
            _, system = chat.turn(QUESTION)
            assert PROMISE_TEXT in system  # memory works before the hang
            _turns_while_the_embedder_hangs(chat, served, endpoint)
            _turns_after_the_embedder_recovers(chat, endpoint)
            _stop_with_a_recall_hung(chat, served, endpoint)
        finally:
            served.ensure_stopped()
            db.dispose()
