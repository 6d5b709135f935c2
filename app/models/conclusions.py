"""Conclusions: the durable outbox between the relational database and long-term memory (Mem0).

Lifecycle: a conclusion (decision, promise, preference or fact about a customer) is written here first, in the same
transaction as whatever produced it, with status ``pending``. A delivery worker sends it to Mem0 and marks it
``delivered`` with the resulting ``memory_id``; each failure increments ``attempts`` and records ``last_error``
(status ``failed`` once retries are exhausted). ``content_hash`` is unique
per customer, which makes producing the same conclusion twice a no-op.
"""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from app.models.base import enum_type, json_type, utc_now

# One definition of what a conclusion can be, shared with the memory package (app depends on memory, not back).
from memory.conclusions import ConclusionKind as ConclusionKind
from memory.conclusions import ConclusionSource as ConclusionSource

CONTENT_HASH_LENGTH = 64  # a SHA-256 hex digest
MEMORY_ID_LENGTH = 128
SAID_BY_LENGTH = 64


class OutboxStatus(StrEnum):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class Conclusion(SQLModel, table=True):
    __tablename__ = "conclusions"
    __table_args__ = (sa.UniqueConstraint("customer_id", "content_hash"),)

    id: int | None = Field(default=None, primary_key=True)
    customer_id: int = Field(foreign_key="customers.id", index=True, ondelete="CASCADE")
    conversation_id: int | None = Field(default=None, foreign_key="conversations.id", index=True, ondelete="SET NULL")
    kind: ConclusionKind = Field(sa_type=enum_type(ConclusionKind))
    text: str = Field(sa_type=sa.Text)
    due_date: date | None = None
    # Order numbers, tracking numbers, amounts… that the conclusion is about, verbatim.
    identifiers: list[str] = Field(default_factory=list, sa_type=json_type())
    source: ConclusionSource = Field(sa_type=enum_type(ConclusionSource))
    source_message_first_id: int | None = Field(default=None, foreign_key="messages.id", ondelete="SET NULL")
    source_message_last_id: int | None = Field(default=None, foreign_key="messages.id", ondelete="SET NULL")
    content_hash: str = Field(max_length=CONTENT_HASH_LENGTH)
    # Who made it: "bot", or "staff:<id>" for a staff member's promise; None when the summary cited no support turn.
    said_by: str | None = Field(default=None, max_length=SAID_BY_LENGTH)
    # Why a changed decision replaced its earlier version, when the summary said.
    change_reason: str | None = Field(default=None, sa_type=sa.Text)
    status: OutboxStatus = Field(default=OutboxStatus.PENDING, sa_type=enum_type(OutboxStatus), index=True)
    attempts: int = 0
    last_error: str | None = Field(default=None, sa_type=sa.Text)
    memory_id: str | None = Field(default=None, max_length=MEMORY_ID_LENGTH)
    # When a failed delivery is tried again; None means as soon as possible.
    next_attempt_at: datetime | None = Field(default=None, index=True)
    created_at: datetime = Field(default_factory=utc_now)
    delivered_at: datetime | None = None
