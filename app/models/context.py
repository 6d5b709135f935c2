"""Context segments and compactions: how a conversation's live LLM context evolved.

Lifecycle: a conversation starts with segment 1 (reason ``start``). Each compression persists a ``Compaction`` (the
summary that now stands in for messages ``first_message_id..last_message_id`` inclusive, with its cost and trace)
and opens the next segment (reason ``compression``, ``parent_id`` pointing at the previous one, title like
"Segment 2 (compression)"). The messages themselves stay untouched in ``messages``.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from app.models.base import enum_type, json_type, utc_now

SEGMENT_TITLE_LENGTH = 200
MODEL_NAME_LENGTH = 200


class SegmentReason(StrEnum):
    START = "start"
    COMPRESSION = "compression"


def segment_title(number: int, reason: SegmentReason) -> str:
    """The display title of a segment, e.g. ``Segment 2 (compression)``."""
    return f"Segment {number} ({reason.value})"


class ContextSegment(SQLModel, table=True):
    __tablename__ = "context_segments"
    __table_args__ = (sa.UniqueConstraint("conversation_id", "number"),)

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: int = Field(foreign_key="conversations.id", index=True, ondelete="CASCADE")
    parent_id: int | None = Field(default=None, foreign_key="context_segments.id", ondelete="SET NULL")
    reason: SegmentReason = Field(sa_type=enum_type(SegmentReason))
    number: int
    title: str = Field(max_length=SEGMENT_TITLE_LENGTH)
    # The first message that belongs to this segment; None until one arrives.
    first_message_id: int | None = Field(default=None, foreign_key="messages.id", ondelete="SET NULL")
    created_at: datetime = Field(default_factory=utc_now)


class Compaction(SQLModel, table=True):
    __tablename__ = "compactions"

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: int = Field(foreign_key="conversations.id", index=True, ondelete="CASCADE")
    segment_id: int = Field(foreign_key="context_segments.id", index=True, ondelete="CASCADE")
    # The overlaid message range, inclusive at both ends.
    first_message_id: int = Field(foreign_key="messages.id", ondelete="CASCADE")
    last_message_id: int = Field(foreign_key="messages.id", ondelete="CASCADE")
    summary: str = Field(sa_type=sa.Text)
    summary_model: str | None = Field(default=None, max_length=MODEL_NAME_LENGTH)
    main_model: str = Field(max_length=MODEL_NAME_LENGTH)
    tokens_before: int
    tokens_after: int
    summary_prompt_tokens: int | None = None
    summary_completion_tokens: int | None = None
    # The summary's endpoint reported no usage: its counts are estimated.
    usage_estimated: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})
    cost_usd: float | None = None
    fallback_used: bool = False
    trace_event: dict[str, Any] = Field(default_factory=dict, sa_type=json_type())
    created_at: datetime = Field(default_factory=utc_now)
