"""The promises board: open promises across customers, staff marking them kept or broken, and the share kept on
time, all read from ``promise_records`` (the relational mirror of promise memories).

Kept on time, over the last ``KEPT_WINDOW_DAYS`` days: among promises due in the window (due date from the window's
first day to today) that are either marked (kept or broken) or overdue and still open, the share marked kept at or
before the end of their due date (in UTC). Open promises not yet due are left out: nobody can tell yet.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum

from sqlalchemy import and_, or_
from sqlmodel import Session, col, select

from app.models import Conversation, Customer, PromiseRecord, PromiseStatus, utc_now

KEPT_WINDOW_DAYS = 30
# The board is a working list, not an archive: the soonest due this many, which a supervisor works through.
BOARD_LIMIT = 200
WEEK_DAYS = 7


class DueFilter(StrEnum):
    ALL = "all"
    OVERDUE = "overdue"
    TODAY = "today"
    WEEK = "week"


@dataclass(frozen=True)
class BoardPromise:
    memory_id: str
    customer_ref: str
    customer_name: str | None
    conversation_ref: str | None
    text: str
    due_date: date | None
    subject: str | None
    source: str
    overdue: bool


@dataclass(frozen=True)
class KeptOnTime:
    counted: int
    kept_on_time: int

    @property
    def rate(self) -> float | None:
        return self.kept_on_time / self.counted if self.counted else None


def record_promise(
    session: Session,
    *,
    customer_id: int,
    memory_id: str,
    text: str,
    due_date: date | None,
    identifiers: Sequence[str],
    source: str,
    conversation_id: int | None = None,
) -> None:
    """Mirror a promise memory (once per memory id: a redelivery finds its row)."""
    found = session.exec(select(PromiseRecord).where(PromiseRecord.memory_id == memory_id)).first()
    record = found or PromiseRecord(customer_id=customer_id, memory_id=memory_id, text=text, source=source)
    record.conversation_id = conversation_id if found is None else record.conversation_id
    record.text, record.due_date = text, due_date
    record.subject = identifiers[0] if identifiers else None
    session.add(record)


def follow_edit(session: Session, memory_id: str, *, text: str, due_date: date | None) -> None:
    record = session.exec(select(PromiseRecord).where(PromiseRecord.memory_id == memory_id)).first()
    if record is not None:
        record.text, record.due_date = text, due_date
        session.add(record)


def forget_promise(session: Session, memory_id: str) -> None:
    record = session.exec(select(PromiseRecord).where(PromiseRecord.memory_id == memory_id)).first()
    if record is not None:
        session.delete(record)


def drop_superseded(session: Session, customer_id: int, active_memory_ids: Collection[str]) -> int:
    """Remove the customer's open rows whose memory is no longer an active promise (a later version superseded it,
    or a person's locked edit outranked a new one); marked rows are kept as the record of what was done."""
    stale = session.exec(
        select(PromiseRecord).where(
            PromiseRecord.customer_id == customer_id,
            PromiseRecord.status == PromiseStatus.OPEN,
            col(PromiseRecord.memory_id).not_in(list(active_memory_ids)),
        )
    ).all()
    for record in stale:
        session.delete(record)
    return len(stale)


def _due_clause(due: DueFilter, today: date) -> object:
    due_date = col(PromiseRecord.due_date)
    if due is DueFilter.OVERDUE:
        return due_date < today
    if due is DueFilter.TODAY:
        return due_date == today
    if due is DueFilter.WEEK:
        return and_(due_date >= today, due_date < today + timedelta(days=WEEK_DAYS))
    return True


def open_promises(session: Session, due: DueFilter, today: date) -> list[BoardPromise]:
    """Open promises, soonest due first (undated last), with their customer and conversation."""
    statement = (
        select(PromiseRecord, Customer.public_id, Customer.name, Conversation.public_id)
        .join(Customer, col(Customer.id) == PromiseRecord.customer_id)
        .outerjoin(Conversation, col(Conversation.id) == PromiseRecord.conversation_id)
        .where(PromiseRecord.status == PromiseStatus.OPEN, _due_clause(due, today))  # type: ignore[arg-type]
        .order_by(col(PromiseRecord.due_date).is_(None), col(PromiseRecord.due_date), col(PromiseRecord.id))
        .limit(BOARD_LIMIT)
    )
    return [
        BoardPromise(
            memory_id=record.memory_id,
            customer_ref=customer_ref,
            customer_name=name,
            conversation_ref=conversation_ref,
            text=record.text,
            due_date=record.due_date,
            subject=record.subject,
            source=record.source,
            overdue=record.due_date is not None and record.due_date < today,
        )
        for record, customer_ref, name, conversation_ref in session.exec(statement).all()
    ]


def marked_memory_ids(session: Session, customer_id: int) -> set[str]:
    """The customer's promise memories that staff marked kept or broken: no longer open, whatever memory says."""
    return set(
        session.exec(
            select(PromiseRecord.memory_id).where(
                PromiseRecord.customer_id == customer_id, PromiseRecord.status != PromiseStatus.OPEN
            )
        ).all()
    )


def open_promise(session: Session, memory_id: str) -> PromiseRecord | None:
    return session.exec(
        select(PromiseRecord).where(PromiseRecord.memory_id == memory_id, PromiseRecord.status == PromiseStatus.OPEN)
    ).first()


def mark_promise(session: Session, record: PromiseRecord, *, status: PromiseStatus, note: str, actor: str) -> None:
    record.status, record.note, record.marked_by, record.marked_at = status, note or None, actor, utc_now()
    session.add(record)


def kept_on_time(session: Session, today: date) -> KeptOnTime:
    since = today - timedelta(days=KEPT_WINDOW_DAYS)
    due_date, status = col(PromiseRecord.due_date), col(PromiseRecord.status)
    counted = or_(status != PromiseStatus.OPEN, due_date < today)
    rows = session.exec(select(PromiseRecord).where(due_date >= since, due_date <= today, counted)).all()
    on_time = sum(1 for record in rows if _kept_on_time(record))
    session.commit()
    return KeptOnTime(counted=len(rows), kept_on_time=on_time)


def _kept_on_time(record: PromiseRecord) -> bool:
    marked, due = record.marked_at, record.due_date
    if record.status != PromiseStatus.KEPT or marked is None or due is None:
        return False
    aware = marked if marked.tzinfo is not None else marked.replace(tzinfo=UTC)
    return aware < datetime.combine(due + timedelta(days=1), time.min, tzinfo=UTC)
