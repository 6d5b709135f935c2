"""The conclusions outbox: key decisions reach Mem0 exactly once, through failures and crashes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlmodel import Session

from app.customer_memory.outbox import SqlOutboxRepository, enqueue_key_decisions
from app.db import create_db_engine, migrate
from app.models import OutboxStatus
from compression import KeyDecision
from memory.conclusions import Conclusion
from memory.outbox import ConclusionOutbox, backoff_s
from memory.store import CustomerMemory
from tests.memory.conftest import hashing_options
from tests.support.rows import add_customer_conversation, outbox_rows

DECISIONS = [
    KeyDecision("promise", "Refund of $42.10 for order #W2378156 by 2026-12-02", date(2026, 12, 2), ("#W2378156",)),
    KeyDecision("preference", "Prefers SMS over email"),
    KeyDecision("decision", "Replacement approved for the cracked kettle", None, ("#W2378156",)),
]


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path / 'memdesk.db'}"
    migrate(url)
    engine = create_db_engine(url)
    yield engine
    engine.dispose()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CustomerMemory]:
    memory = CustomerMemory(hashing_options(tmp_path / "memory"))
    yield memory
    memory.close()


def _queue(db: Engine) -> int:
    with Session(db) as session:
        customer_id, conversation_id = add_customer_conversation(session)
        enqueue_key_decisions(
            session, customer_id=customer_id, conversation_id=conversation_id, decisions=DECISIONS, message_range=None
        )
        # Queuing the same decisions again (a second compaction repeating them) adds nothing.
        enqueue_key_decisions(
            session, customer_id=customer_id, conversation_id=conversation_id, decisions=DECISIONS, message_range=None
        )
        session.commit()
        return customer_id


class FlakyMemory:
    """The real CustomerMemory, whose Mem0 ``add`` fails while ``down`` is set (Mem0 being unreachable)."""

    def __init__(self, memory: CustomerMemory) -> None:
        self.memory = memory
        self.down = True
        real_add = memory._mem0.add

        def add(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                raise ConnectionError("Mem0 vector store unreachable")
            return real_add(*args, **kwargs)

        memory._mem0.add = add

    def remember(self, conclusions: Sequence[Conclusion]) -> list[str]:
        return self.memory.remember(conclusions)


def test_key_decisions_are_queued_once_and_delivered_once(db: Engine, store: CustomerMemory) -> None:
    customer_id = _queue(db)
    assert [row.status for row in outbox_rows(db)] == [OutboxStatus.PENDING] * 3
    outbox = ConclusionOutbox(SqlOutboxRepository(db), store)
    report = outbox.deliver_due()
    assert (report.delivered, report.failed) == (3, 0)
    rows = outbox_rows(db)
    assert all(row.status == OutboxStatus.DELIVERED and row.memory_id and row.delivered_at for row in rows)
    assert outbox.deliver_due().delivered == 0, "nothing is delivered twice"
    memories = store.list(str(customer_id))
    assert sorted(m.text for m in memories) == sorted(d.text for d in DECISIONS)
    assert {m.id for m in memories} == {row.memory_id for row in rows}


def test_mem0_failures_leave_conclusions_waiting_with_backoff_then_delivered_without_duplicates(
    db: Engine, store: CustomerMemory
) -> None:
    customer_id = _queue(db)
    clock = Clock()
    flaky = FlakyMemory(store)
    outbox = ConclusionOutbox(SqlOutboxRepository(db), flaky, clock=clock)

    report = outbox.deliver_due()
    assert (report.delivered, report.failed) == (0, 3) and "unreachable" in report.errors[0]
    for row in outbox_rows(db):
        assert row.status == OutboxStatus.PENDING and row.attempts == 1
        assert row.last_error and "ConnectionError" in row.last_error
        assert row.next_attempt_at is not None
        assert row.next_attempt_at.replace(tzinfo=UTC) == clock.now + timedelta(seconds=backoff_s(1))
    assert outbox.deliver_due().failed == 0, "not due yet: nothing is tried"

    clock.now += timedelta(seconds=backoff_s(1))
    assert outbox.deliver_due().failed == 3
    assert {row.attempts for row in outbox_rows(db)} == {2}

    flaky.down = False
    clock.now += timedelta(seconds=backoff_s(2))
    assert outbox.deliver_due().delivered == 3
    assert len(store.list(str(customer_id))) == 3
    assert SqlOutboxRepository(db).counts() == {"delivered": 3}


def test_a_crash_between_delivery_and_acknowledgement_never_duplicates(db: Engine, store: CustomerMemory) -> None:
    customer_id = _queue(db)
    repository = SqlOutboxRepository(db)

    class CrashingAck(SqlOutboxRepository):
        def mark_delivered(self, row_id: int, memory_id: str, now: datetime) -> None:
            raise SystemExit("process killed before the outbox row was acknowledged")

    with pytest.raises(SystemExit):
        ConclusionOutbox(CrashingAck(db), store).deliver_due()
    assert all(row.status == OutboxStatus.PENDING for row in outbox_rows(db))
    assert len(store.list(str(customer_id))) == 1, "the first conclusion reached Mem0 before the crash"

    report = ConclusionOutbox(repository, store).deliver_due()  # the restarted process
    assert report.delivered == 3
    memories = store.list(str(customer_id))
    assert len(memories) == 3, "the retry found the memory already there instead of adding it again"
    assert {m.id for m in memories} == {row.memory_id for row in outbox_rows(db)}


def test_conclusions_that_keep_failing_are_marked_failed_and_stay_visible(db: Engine, store: CustomerMemory) -> None:
    _queue(db)
    clock = Clock()
    outbox = ConclusionOutbox(SqlOutboxRepository(db), FlakyMemory(store), max_attempts=2, clock=clock)
    outbox.deliver_due()
    clock.now += timedelta(hours=1)
    report = outbox.deliver_due()
    assert report.gave_up == 3 and outbox.failed_total == 6
    rows = outbox_rows(db)
    assert all(row.status == OutboxStatus.FAILED and row.attempts == 2 and row.last_error for row in rows)
    assert SqlOutboxRepository(db).counts() == {"failed": 3}
