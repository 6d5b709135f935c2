"""After a sync run's delivery: count the memories its conclusions superseded, and mark promises expired.

A promise stays recalled for ``PROMISE_GRACE_DAYS`` after its due date, so the bot can still own up to it; the run
after that marks it ``expired`` in the memory store, where it stays for the record (and for the customer's export).
Which customers to visit comes from the outbox, so a run reads only the memories of the customers it can change.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Protocol

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.customer_memory.ids import memory_customer_id
from app.models import Conclusion, OutboxStatus, SyncRun
from app.models.sync import SyncRunStatus
from memory.conclusions import PROMISE_GRACE_DAYS, ConclusionKind

logger = logging.getLogger(__name__)


class MemoryUpkeep(Protocol):
    def expire_promises(self, customer_id: str, today: date) -> int: ...

    def superseded_since(self, customer_id: str, since: datetime) -> int: ...


@dataclass
class UpkeepReport:
    superseded: int = 0
    expired: int = 0
    errors: list[str] = field(default_factory=list)


def run_upkeep(db: Engine, memory: MemoryUpkeep, record: SyncRun, today: date) -> UpkeepReport:
    """Superseded and expired counts for ``record``; one customer's store error is reported, never fatal."""
    report = UpkeepReport()
    started = _aware(record.started_at)
    with Session(db) as session:
        delivered = _customers_delivered_since(session, started)
        overdue = _customers_with_promises_past_grace(session, today, _previous_start(session, record))
    for customer_id in sorted(delivered | overdue):
        key = memory_customer_id(customer_id)
        try:
            if customer_id in delivered:
                report.superseded += memory.superseded_since(key, started)
            if customer_id in overdue:
                report.expired += memory.expire_promises(key, today)
        except Exception as error:  # the store may be busy or down: counted next run, nothing is lost
            logger.warning("Memory upkeep skipped customer %s: %s", customer_id, type(error).__name__)
            report.errors.append(f"customer {customer_id}: {type(error).__name__}")
    return report


def _customers_delivered_since(session: Session, since: datetime) -> set[int]:
    statement = select(Conclusion.customer_id).where(
        col(Conclusion.status) == OutboxStatus.DELIVERED, col(Conclusion.delivered_at) >= since
    )
    return set(session.exec(statement.distinct()).all())


def _customers_with_promises_past_grace(session: Session, today: date, since: datetime | None) -> set[int]:
    """Customers with a delivered promise whose grace period ended before ``today`` and after the previous run's
    window (every such promise when there was no previous run), so each run looks only at the newly expired."""
    last_due = today - timedelta(days=PROMISE_GRACE_DAYS)
    statement = select(Conclusion.customer_id).where(
        col(Conclusion.kind) == ConclusionKind.PROMISE.value,
        col(Conclusion.status) == OutboxStatus.DELIVERED,
        col(Conclusion.due_date) < last_due,
    )
    if since is not None:
        # One day of overlap: the previous run may have started before that day's promises had expired.
        statement = statement.where(col(Conclusion.due_date) >= since.date() - timedelta(days=PROMISE_GRACE_DAYS + 1))
    return set(session.exec(statement.distinct()).all())


def _previous_start(session: Session, record: SyncRun) -> datetime | None:
    statement = (
        select(SyncRun.started_at)
        .where(col(SyncRun.status) == SyncRunStatus.FINISHED, col(SyncRun.id) != record.id)
        .order_by(col(SyncRun.id).desc())
        .limit(1)
    )
    return session.exec(statement).first()


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
