"""State that several server processes share on PostgreSQL: live events and per-visitor rate windows.

``ConversationEvent`` is the replay source of the live event streams: one row per event, numbered per conversation
by ``ConversationEventSequence`` (one counter row per conversation, whose row lock orders concurrent publishers so
that sequence order is commit order). Rows older than the retention are trimmed; the counter stays, so sequences
never repeat. ``RateLimitWindow`` holds each rate-limited key's recent hits (epoch seconds, a JSON list).

On SQLite these tables exist but stay empty: one process keeps the same state in memory (``app.live.broker``,
``app.ratelimit``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from app.models.base import json_type, utc_now

EVENT_TYPE_LENGTH = 64
RATE_KEY_LENGTH = 200


class ConversationEvent(SQLModel, table=True):
    __tablename__ = "conversation_events"

    conversation_id: int = Field(foreign_key="conversations.id", primary_key=True, ondelete="CASCADE")
    sequence: int = Field(primary_key=True, sa_type=sa.BigInteger)
    type: str = Field(max_length=EVENT_TYPE_LENGTH)
    data: str = Field(sa_type=sa.Text, description="The event's JSON document")
    created_at: datetime = Field(default_factory=utc_now, index=True)


class ConversationEventSequence(SQLModel, table=True):
    __tablename__ = "conversation_event_sequences"

    conversation_id: int = Field(foreign_key="conversations.id", primary_key=True, ondelete="CASCADE")
    last_sequence: int = Field(default=0, sa_type=sa.BigInteger)


class RateLimitWindow(SQLModel, table=True):
    __tablename__ = "rate_limit_windows"

    key: str = Field(primary_key=True, max_length=RATE_KEY_LENGTH)
    hits: list[Any] = Field(default_factory=list, sa_type=json_type())
    allowed: bool = True
    updated_at: datetime = Field(default_factory=utc_now, index=True)
