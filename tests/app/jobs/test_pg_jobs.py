"""Background work on PostgreSQL: the outbox delivered exactly once by racing deliverers, the job queue's locks, and
two real ``memdesk serve`` processes sharing the queue (one delivery per row, one daily sync per day)."""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from sqlalchemy import Engine, text
from sqlmodel import Session, col, func, select

from app.customer_memory.outbox import CLAIM_LEASE_S, SqlOutboxRepository, enqueue_key_decisions
from app.db import create_db_engine, migrate
from app.jobs.queue import DELIVER_OUTBOX, JobQueue
from app.models import Conclusion as ConclusionRow
from app.models import OutboxStatus, SyncRun, SyncRunStatus
from compression import KeyDecision
from memory.conclusions import Conclusion
from memory.config import EmbedderKind, MemoryOptions, VectorStoreKind
from memory.outbox import ConclusionOutbox
from memory.store import CustomerMemory
from tests.memory.conftest import hashing_options
from tests.support.rows import add_customer_conversation, outbox_rows
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.serve_process import ServeProcess, scripted_llm_settings, start_together

ROWS = 300
CUSTOMERS = 10
WAIT_S = 30.0
SYNC_TIMEZONE = "Europe/Paris"
QUEUE_AHEAD_S = 8.0


def queue_conclusions(db: Engine, rows: int = ROWS, customers: int = CUSTOMERS) -> list[int]:
    """``rows`` pending outbox rows spread over ``customers`` new customers; returns the customers' ids."""
    ids = []
    with Session(db) as session:
        for customer in range(customers):
            customer_id, conversation_id = add_customer_conversation(session, name=f"Customer {customer}")
            decisions = [
                KeyDecision("decision", f"Replacement approved for order #W{customer:02d}{n:05d}")
                for n in range(rows // customers)
            ]
            enqueue_key_decisions(
                session, customer_id=customer_id, conversation_id=conversation_id, decisions=decisions,
                message_range=None,
            )  # fmt: skip
            ids.append(customer_id)
        session.commit()
    return ids


class RecordingMemory:
    """The real ``CustomerMemory``, recording every conclusion it is asked to remember."""

    def __init__(self, store: CustomerMemory) -> None:
        self.store = store
        self.asked: list[str] = []
        self._lock = threading.Lock()

    def remember(self, conclusions: Sequence[Conclusion]) -> list[str]:
        with self._lock:
            self.asked.extend(conclusion.text for conclusion in conclusions)
        return self.store.remember(conclusions)


@pytest.fixture
def pg_db(postgres_url: str) -> Iterator[Engine]:
    migrate(postgres_url)
    engine = create_db_engine(postgres_url)
    yield engine
    engine.dispose()


# --- the outbox on PostgreSQL ---------------------------------------------------------------------------------------


def test_two_deliverers_racing_over_the_outbox_deliver_every_row_exactly_once(pg_db: Engine, tmp_path: Path) -> None:
    customers = queue_conclusions(pg_db)
    store = CustomerMemory(hashing_options(tmp_path / "memory"))
    try:
        memory = RecordingMemory(store)
        start = threading.Barrier(2)

        def deliver_everything() -> int:
            outbox = ConclusionOutbox(SqlOutboxRepository(pg_db), memory)
            start.wait()
            delivered = 0
            while (report := outbox.deliver_due(limit=25)).delivered:
                delivered += report.delivered
            return delivered

        with ThreadPoolExecutor(max_workers=2) as pool:
            counts = list(pool.map(lambda _: deliver_everything(), range(2)))

        assert sum(counts) == ROWS and all(counts), counts  # both took rows, and no row was taken twice
        assert len(memory.asked) == ROWS and Counter(memory.asked).most_common(1)[0][1] == 1
        rows = outbox_rows(pg_db)
        assert {row.status for row in rows} == {OutboxStatus.DELIVERED}
        assert len({row.memory_id for row in rows}) == ROWS
        assert sum(len(store.list(str(customer))) for customer in customers) == ROWS
    finally:
        store.close()


def test_rows_claimed_by_a_deliverer_that_died_come_back_when_their_lease_ends(pg_db: Engine) -> None:
    queue_conclusions(pg_db, rows=3, customers=1)
    repository = SqlOutboxRepository(pg_db)
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    claimed = repository.claim_due(now, 10)
    assert len(claimed) == 3  # ... and then the claimer is killed: no acknowledgement ever comes
    assert repository.claim_due(now + timedelta(seconds=CLAIM_LEASE_S - 1), 10) == []
    again = repository.claim_due(now + timedelta(seconds=CLAIM_LEASE_S + 1), 10)
    assert [pending.row_id for pending in again] == [pending.row_id for pending in claimed]
    assert {pending.attempts for pending in again} == {0}, "a lease is not a failed attempt"


# --- the job queue in this process ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_burst_of_delivery_requests_queues_one_job_and_rounds_never_overlap(pg_db: Engine) -> None:
    running = 0
    most_at_once = 0
    rounds = 0
    first_round = asyncio.Event()
    release = asyncio.Event()

    async def deliver() -> int:  # stands in for MemoryService.deliver_all, and holds its round open
        nonlocal running, most_at_once, rounds
        running += 1
        rounds += 1
        most_at_once = max(most_at_once, running)
        first_round.set()
        await release.wait()
        running -= 1
        return 0

    queue = JobQueue(pg_db, deliver=deliver)
    queue.start()
    try:
        queue.request_delivery()
        await asyncio.wait_for(first_round.wait(), WAIT_S)
        for _ in range(20):  # compactions queueing conclusions while the first round runs
            queue.request_delivery()
        await asyncio.sleep(1.0)
        assert await asyncio.to_thread(delivery_jobs, pg_db) == {"doing": 1, "todo": 1}
        release.set()
        deadline = time.monotonic() + WAIT_S
        while await asyncio.to_thread(delivery_jobs, pg_db):
            assert time.monotonic() < deadline, "the queued delivery job never ran"
            await asyncio.sleep(0.2)
        assert rounds >= 2 and most_at_once == 1
    finally:
        release.set()
        await queue.close()


def delivery_jobs(db: Engine) -> dict[str, int]:
    """Delivery jobs not finished yet, by status (finished ones are deleted)."""
    with db.connect() as connection:
        rows = connection.execute(
            text("SELECT status, count(*) FROM procrastinate_jobs WHERE task_name = :name GROUP BY status"),
            {"name": DELIVER_OUTBOX},
        ).all()
    return {str(status): int(count) for status, count in rows}


# --- two real servers -----------------------------------------------------------------------------------------------


@dataclass
class Cluster:
    db: Engine
    workers: list[ServeProcess]
    memory: MemoryOptions
    sync_at: datetime  # the daily sync's time today, in SYNC_TIMEZONE


def next_minute_with_room(*, room_s: float = 40.0) -> datetime:
    """The start of a minute at least ``room_s`` from now, in the sync's timezone: time to start two servers and
    queue the rows before it."""
    now = datetime.now(ZoneInfo(SYNC_TIMEZONE))
    return (now + timedelta(seconds=room_s + 60)).replace(second=0, microsecond=0)


@pytest.fixture(scope="module")
def cluster(postgres_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    name = f"memdesk_{uuid.uuid4().hex[:12]}"
    postgres_server.psql(f"CREATE DATABASE {name};")
    socket_dir = postgres_server.get_uri().split("host=")[-1]
    url = f"postgresql+psycopg://postgres:@/{name}?host={socket_dir}"
    migrate(url)
    sync_at = next_minute_with_room()
    memory = MemoryOptions(
        data_dir=tmp_path_factory.mktemp("memory"),
        embedder=EmbedderKind.HASHING,
        vector_store=VectorStoreKind.PGVECTOR,
        pgvector_url=url.replace("postgresql+psycopg://", "postgresql://"),
    )
    with ScriptedLLMServer() as llm, ExitStack() as stack:
        settings = {
            **scripted_llm_settings(llm),
            "MEMDESK_DATABASE_URL": url,
            "MEMDESK_MEMORY_ENABLED": "true",
            "MEMDESK_MEMORY_EMBEDDER": "hashing",
            "MEMDESK_MEMORY_STORE": "pgvector",
            "MEMDESK_MEMORY_PGVECTOR_URL": memory.pgvector_url or "",
            "MEMDESK_SYNC_AT": sync_at.strftime("%H:%M"),
            "MEMDESK_TIMEZONE": SYNC_TIMEZONE,
        }
        # Started together, as behind a load balancer.
        workers = start_together([tmp_path_factory.mktemp(f"worker-{n}") for n in "ab"], settings, stack)
        db = create_db_engine(url)
        stack.callback(db.dispose)
        yield Cluster(db, workers, memory, sync_at)
        for process in workers:
            assert process.stop(timeout_s=20) < 20, process.log()[-4000:]


def deliveries(worker: ServeProcess) -> int:
    """How many conclusions this server has acknowledged as delivered since it started (its /metrics)."""
    metrics = httpx.get(f"{worker.url}/metrics", timeout=5.0).text
    found = re.search(r'^memdesk_outbox_deliveries_total\{result="delivered"\} ([0-9.]+)$', metrics, re.MULTILINE)
    return int(float(found.group(1))) if found else 0


def wait_until(condition: Callable[[], bool], *, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)


def sync_runs(db: Engine) -> list[SyncRun]:
    with Session(db) as session:
        return list(session.exec(select(SyncRun)).all())


def test_the_daily_sync_and_the_retry_round_race_on_two_workers_and_each_row_is_delivered_once(
    cluster: Cluster,
) -> None:
    seconds_left = (cluster.sync_at - datetime.now(ZoneInfo(SYNC_TIMEZONE))).total_seconds()
    assert seconds_left > QUEUE_AHEAD_S, "the servers took too long to start; the sync's minute has passed"
    # Queued just before the sync's minute, after the previous retry round: that minute's tick starts the daily sync
    # and the retry round together, one on each worker, and both deliver.
    time.sleep(seconds_left - QUEUE_AHEAD_S)
    customers = queue_conclusions(cluster.db)
    seconds_left = (cluster.sync_at - datetime.now(ZoneInfo(SYNC_TIMEZONE))).total_seconds()

    def all_delivered() -> bool:
        with Session(cluster.db) as session:
            statement = select(func.count()).where(col(ConclusionRow.status) != OutboxStatus.DELIVERED)
            return session.exec(statement.select_from(ConclusionRow)).one() == 0

    wait_until(all_delivered, timeout_s=seconds_left + 90, what="every outbox row delivered")
    wait_until(lambda: len(sync_runs(cluster.db)) == 1, timeout_s=WAIT_S, what="the sync run's record")

    per_worker = [deliveries(worker) for worker in cluster.workers]
    assert sum(per_worker) == ROWS, per_worker  # every acknowledgement once, over both servers
    rows = outbox_rows(cluster.db)
    assert len({row.memory_id for row in rows}) == ROWS
    store = CustomerMemory(cluster.memory)
    try:
        assert sum(len(store.list(str(customer))) for customer in customers) == ROWS
    finally:
        store.close()


def test_the_daily_sync_runs_once_across_both_workers(cluster: Cluster) -> None:
    wait_until(
        lambda: any(run.status == SyncRunStatus.FINISHED for run in sync_runs(cluster.db)),
        timeout_s=max(0.0, (cluster.sync_at - datetime.now(ZoneInfo(SYNC_TIMEZONE))).total_seconds()) + 90,
        what="the daily sync",
    )
    time.sleep(3.0)  # room for a second run, were there one
    (run,) = sync_runs(cluster.db)
    assert run.status == SyncRunStatus.FINISHED
    logs = [worker.log() for worker in cluster.workers]
    assert sum(log.count("Conclusion sync (job)") for log in logs) == 1
    assert not any("conclusion sync skipped" in log for log in logs)
    with cluster.db.connect() as connection:
        ticks = connection.execute(
            text("SELECT count(*) FROM procrastinate_periodic_defers WHERE task_name = 'memdesk.conclusion_sync'")
        ).scalar()
    assert ticks == 1
    health = [httpx.get(f"{worker.url}/healthz", timeout=5.0).json() for worker in cluster.workers]
    ran_on = [entry["sync"]["last_run"] for entry in health]
    assert ran_on.count(None) <= 1  # the server that ran it knows at once; the other within a minute
    assert all(entry["sync"]["next_run"].startswith((cluster.sync_at + timedelta(days=1)).date().isoformat())
               for entry in health)  # fmt: skip
