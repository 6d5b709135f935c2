"""Decisions that reach long-term memory: a reworded one is the same memory, a different one stays separate, and
the outbox queues each version of a decision once."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from app.customer_memory.outbox import enqueue_key_decisions
from app.customer_memory.service import format_memory_section
from app.db import create_db_engine, migrate
from app.models import Conclusion as ConclusionRow
from app.models import Message, MessageAuthor, MessageRole
from compression.types import KeyDecision
from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource, MemoryItem
from memory.store import CustomerMemory
from tests.memory.conftest import hashing_options
from tests.support.rows import add_customer_conversation


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CustomerMemory]:
    memory = CustomerMemory(hashing_options(tmp_path))
    yield memory
    memory.close()


def conclusion(kind: ConclusionKind, text: str, *identifiers: str, due: date | None = None) -> Conclusion:
    return Conclusion("31", kind, text, ConclusionSource.COMPACTION, due_date=due, identifiers=identifiers)


def test_a_reworded_preference_without_identifiers_supersedes_the_old_wording(store: CustomerMemory) -> None:
    (old,) = store.remember([conclusion(ConclusionKind.PREFERENCE, "Prefers SMS over email")])
    (other,) = store.remember([conclusion(ConclusionKind.PREFERENCE, "Wants replies in German")])
    (new,) = store.remember([conclusion(ConclusionKind.PREFERENCE, "Prefers SMS over email for order updates")])
    active = {item.id for item in store.list("31") if item.active}
    assert active == {other, new}, "one active memory per preference"
    assert next(item for item in store.list("31") if item.id == old).superseded_by == new


def test_two_different_decisions_about_the_same_order_both_stay(store: CustomerMemory) -> None:
    refund = conclusion(ConclusionKind.DECISION, "Refund approved for the broken kettle", "#W2378156", "$42.10")
    replacement = conclusion(ConclusionKind.DECISION, "Replacement declined for the scratched pan", "#W2378156")
    ids = store.remember([refund, replacement])
    assert {item.id for item in store.list("31") if item.active} == set(ids)


def test_recall_renders_a_long_memory_whole() -> None:
    tracking = "1Z999AA10123456784"
    item = MemoryItem(id="m", customer_id="1", text="Shipment notes. " * 30 + f"Tracking {tracking}.", kind="fact")
    assert tracking in format_memory_section([item], [])


def test_the_outbox_queues_a_new_decision_once_and_a_change_once_more(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'outbox.db'}"
    migrate(url)
    db = create_db_engine(url)
    with Session(db) as session:
        customer_id, conversation_id = add_customer_conversation(session)
        rows = [
            Message(
                conversation_id=conversation_id, role=MessageRole.USER, author=MessageAuthor.CUSTOMER, content=f"m{i}"
            )
            for i in range(3)
        ]
        session.add_all(rows)
        session.flush()
        one, two, three = (row.id for row in rows)
        first = KeyDecision("promise", "Refund by 2026-12-02", date(2026, 12, 2), ("$42.10",), key="P1")
        reworded = KeyDecision("promise", "We will refund", date(2026, 12, 2), ("$42.10",), new=False, key="P1")
        changed = KeyDecision("promise", "Refund by 2026-12-09", date(2026, 12, 9), ("$42.10",), key="P1", changed=True)
        options: dict[str, Any] = {"customer_id": customer_id, "conversation_id": conversation_id}
        assert len(enqueue_key_decisions(session, decisions=[first], message_range=(one, one), **options)) == 1
        assert enqueue_key_decisions(session, decisions=[first], message_range=(one, one), **options) == []
        assert enqueue_key_decisions(session, decisions=[reworded], message_range=(one, two), **options) == []
        assert len(enqueue_key_decisions(session, decisions=[changed], message_range=(one, three), **options)) == 1
        session.commit()
        rows = session.exec(select(ConclusionRow)).all()
        assert [(row.text, row.due_date) for row in rows] == [
            ("Refund by 2026-12-02", date(2026, 12, 2)),
            ("Refund by 2026-12-09", date(2026, 12, 9)),
        ]
