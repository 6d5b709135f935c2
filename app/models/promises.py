"""The promises board's mirror of long-term memory: one ``PromiseRecord`` per promise memory, so listing open
promises across every customer is one indexed query instead of a scan of Mem0.

Kept current where promises reach or change in memory: outbox delivery adds a row, console additions, edits and
deletions follow, and a customer's erasure removes theirs (foreign key cascade). Staff mark a row ``kept`` or
``broken``; only ``open`` rows are on the board.
"""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from app.models.base import enum_type, utc_now

MEMORY_ID_LENGTH = 128
SUBJECT_LENGTH = 128
SOURCE_LENGTH = 32
MARKED_BY_LENGTH = 64
NOTE_LENGTH = 1_000


class PromiseStatus(StrEnum):
    OPEN = "open"
    KEPT = "kept"
    BROKEN = "broken"


class PromiseRecord(SQLModel, table=True):
    __tablename__ = "promise_records"
    __table_args__ = (sa.Index("ix_promise_records_status_due", "status", "due_date"),)

    id: int | None = Field(default=None, primary_key=True)
    customer_id: int = Field(foreign_key="customers.id", index=True, ondelete="CASCADE")
    conversation_id: int | None = Field(default=None, foreign_key="conversations.id", ondelete="SET NULL")
    memory_id: str = Field(max_length=MEMORY_ID_LENGTH, unique=True)
    text: str = Field(sa_type=sa.Text)
    due_date: date | None = None
    # The first identifier the promise is about (an order number), verbatim.
    subject: str | None = Field(default=None, max_length=SUBJECT_LENGTH)
    source: str = Field(max_length=SOURCE_LENGTH)
    status: PromiseStatus = Field(default=PromiseStatus.OPEN, sa_type=enum_type(PromiseStatus))
    marked_at: datetime | None = None
    marked_by: str | None = Field(default=None, max_length=MARKED_BY_LENGTH)
    note: str | None = Field(default=None, max_length=NOTE_LENGTH)
    created_at: datetime = Field(default_factory=utc_now)
