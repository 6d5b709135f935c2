"""Promises for the promises board's tests: queued in the real outbox and delivered into real Mem0."""

from __future__ import annotations

from datetime import date

from sqlmodel import select

from app.models import Conclusion, ConclusionKind, ConclusionSource, OutboxStatus, PromiseRecord
from tests.support.live_app import LiveApp

DELIVERY_TIMEOUT_S = 30.0


def queue_promise(live: LiveApp, customer_ref: str, conversation_ref: str, order: str, due: date) -> None:
    """An outbox row as a compaction writes it: a refund promised for ``order`` by ``due``."""
    customer = live.customer(customer_ref)
    assert customer.id is not None
    with live.db() as session:
        session.add(
            Conclusion(
                customer_id=customer.id,
                conversation_id=live.conversation_key(conversation_ref),
                kind=ConclusionKind.PROMISE,
                text=f"Refund for order {order} by {due.isoformat()}.",
                due_date=due,
                identifiers=[order],
                source=ConclusionSource.COMPACTION,
                content_hash=f"{order} {due.isoformat()}".ljust(64, "0"),
            )
        )
        session.commit()


def deliver_promises(live: LiveApp, count: int) -> None:
    """Wake the outbox and wait until every row is delivered and the board mirrors ``count`` promises."""
    assert live.services.memory is not None
    live.services.memory.kick()

    def probe() -> bool | None:
        with live.db() as session:
            rows = session.exec(select(Conclusion)).all()
            records = session.exec(select(PromiseRecord)).all()
        delivered = all(row.status == OutboxStatus.DELIVERED for row in rows)
        return True if delivered and len(records) == count else None

    live.wait_for(probe, timeout=DELIVERY_TIMEOUT_S, what=f"{count} promises delivered")
