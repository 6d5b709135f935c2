"""The promises board: open promises across customers, staff marking them kept or broken, and the share kept on
time, all read from ``promise_records`` (the relational mirror of promise memories).

Kept on time, over the last ``KEPT_WINDOW_DAYS`` days: among promises due in the window (due date from the window's
first day to today) that are either marked (kept or broken) or overdue and still open, the share marked kept at or
before the end of their due date (in UTC). Open promises not yet due are left out: nobody can tell yet.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy import and_, or_
from sqlmodel import Session, col, select

from app.models import Conversation, Customer, PromiseRecord, PromiseStatus, utc_now
from app.outcomes.sql_time import utc_day

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


def _board_rows(session: Session, due: DueFilter, today: date, *, dated: bool, limit: int) -> list[Any]:
    due_date = col(PromiseRecord.due_date)
    statement = (
        select(PromiseRecord, Customer.public_id, Customer.name, Conversation.public_id)
        .join(Customer, col(Customer.id) == PromiseRecord.customer_id)
        .outerjoin(Conversation, col(Conversation.id) == PromiseRecord.conversation_id)
        .where(PromiseRecord.status == PromiseStatus.OPEN, _due_clause(due, today))  # type: ignore[arg-type]
        .where(due_date.is_not(None) if dated else due_date.is_(None))
        .order_by(due_date, col(PromiseRecord.id))
        .limit(limit)
    )
    return list(session.exec(statement).all())


def open_promises(session: Session, due: DueFilter, today: date) -> list[BoardPromise]:
    """Open promises, soonest due first (undated last), with their customer and conversation. Dated and undated
    ones are two reads: each walks the (status, due date) index in order and stops at the limit, where one
    ``ORDER BY due_date IS NULL`` sorted every open promise (40 ms at 20,000)."""
    rows = _board_rows(session, due, today, dated=True, limit=BOARD_LIMIT)
    if len(rows) < BOARD_LIMIT and due is DueFilter.ALL:
        rows += _board_rows(session, due, today, dated=False, limit=BOARD_LIMIT - len(rows))
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
        for record, customer_ref, name, conversation_ref in rows
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
    """Counted by the database: the marked ones due in the window and the overdue open ones, two ranges of the
    (status, due date) index."""
    since = today - timedelta(days=KEPT_WINDOW_DAYS)
    due_date, status, marked_at = col(PromiseRecord.due_date), col(PromiseRecord.status), col(PromiseRecord.marked_at)
    marked = and_(status.in_([PromiseStatus.KEPT, PromiseStatus.BROKEN]), due_date >= since, due_date <= today)
    overdue = and_(status == PromiseStatus.OPEN, due_date >= since, due_date < today)
    on_time = and_(status == PromiseStatus.KEPT, utc_day(session.get_bind().dialect.name, marked_at) <= due_date)
    counted, kept = session.execute(
        sa.select(sa.func.count(), sa.func.count(sa.case((on_time, 1)))).where(or_(marked, overdue))
    ).one()
    session.commit()
    return KeptOnTime(counted=int(counted), kept_on_time=int(kept))
