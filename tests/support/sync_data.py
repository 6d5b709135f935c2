"""Idle conversations holding one refund promise each, and the notes a summary model writes for them: the seed of
the conclusion sync's tests and of ``benchmarks.sync``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import Session

from app.db import create_db_engine
from app.models import Conversation, Customer, Message, MessageAuthor, MessageRole
from app.sync import SyncRunner
from app.turns.context import start_first_segment
from app.turns.context_engines import default_compressor
from tests.support.live_app import LiveApp

SEED_BATCH = 500
PROMISE_DUE = "2026-12-05"


def seed_promise_conversations(url: str, count: int) -> list[tuple[int, str]]:
    """``count`` conversations idle for a day, case numbers 1 to ``count``, each a customer's question and a reply
    promising a refund; returns (customer id, conversation public id) of each. The database must be migrated."""
    engine = create_db_engine(url)
    long_ago = datetime.now(UTC) - timedelta(days=1)
    seeded: list[tuple[int, str]] = []
    with Session(engine, expire_on_commit=False) as session:
        for number in range(1, count + 1):
            customer = Customer(name=f"Customer {number}")
            session.add(customer)
            session.flush()
            assert customer.id is not None
            conversation = Conversation(customer_id=customer.id, updated_at=long_ago)
            session.add(conversation)
            session.flush()
            start_first_segment(session, conversation)
            assert conversation.id is not None
            session.add_all([
                Message(conversation_id=conversation.id, role=MessageRole.USER, author=MessageAuthor.CUSTOMER,
                        content=f"Order #W{number:07d} arrived broken (case {number})", created_at=long_ago),
                Message(conversation_id=conversation.id, role=MessageRole.ASSISTANT, author=MessageAuthor.BOT,
                        content=f"I'll refund order #W{number:07d} in full by {PROMISE_DUE}.", created_at=long_ago),
            ])  # fmt: skip
            seeded.append((customer.id, conversation.public_id))
            if number % SEED_BATCH == 0:
                session.commit()
        session.commit()
    engine.dispose()
    return seeded


def promise_notes(summary_request: str) -> str:
    """The notes for a summary request over one seeded conversation: its promise, as the summary prompt asks."""
    number = int(summary_request.split("(case ")[1].split(")")[0])
    return (
        "## Customer Goal\n- A refund.\n## Promises & Commitments\n"
        f"- Full refund for order #W{number:07d} {{due: {PROMISE_DUE} | ids: #W{number:07d} | from: #1}}\n"
    )


def live_sync_runner(live: LiveApp, *, now: datetime) -> SyncRunner:
    """The sync as the running app builds it (its compressor, usage ledger, outbox and memory), at the time ``now``."""
    services = live.services
    assert services.memory is not None
    return SyncRunner(
        services.db,
        lambda: default_compressor(services.gateway, services.settings),
        services.gateway.ledger,
        deliver=services.memory.outbox.deliver_due,
        memory=services.memory.store,
        clock=lambda: now,
    )
