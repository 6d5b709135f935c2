"""How each conversation turned out: one ``ConversationOutcome`` row per conversation, kept current as things happen.

Recorded where they happen (``app.outcomes``): a handoff with its reason category, the first bot reply and the
first human reply, a close (which decides the resolution), a reopen, the customer's rating. A conversation without a
row yet is ``open`` with nothing recorded; the row is created by the first event that needs it.

Resolution at close: ``human`` when a staff member replied, ``abandoned`` when the customer was left waiting for a
person nobody answered or never got any reply, ``bot`` otherwise. A reopen sets it back to ``open``.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from app.models.base import enum_type, utc_now

CSAT_COMMENT_LENGTH = 2_000


class Resolution(StrEnum):
    OPEN = "open"
    BOT = "bot"
    HUMAN = "human"
    ABANDONED = "abandoned"


class HandoffReason(StrEnum):
    CUSTOMER_REQUEST = "customer_request"
    MODEL_FAILURE = "model_failure"
    TOOL_FAILURE = "tool_failure"
    MISSING_KNOWLEDGE = "missing_knowledge"
    POLICY = "policy"
    LOOP_GUARD = "loop_guard"
    OTHER = "other"


class ConversationOutcome(SQLModel, table=True):
    __tablename__ = "conversation_outcomes"
    # The overview's window (conversations started in the last 30 days) is a range of this index, which holds every
    # column its figures count, so they read no table row.
    __table_args__ = (
        sa.Index(
            "ix_conversation_outcomes_window",
            "started_at",
            "resolution",
            "handoff_reason",
            "csat_score",
            "reopen_count",
            "closed_at",
            "bot_response_s",
            "human_response_s",
        ),
    )
    conversation_id: int = Field(foreign_key="conversations.id", primary_key=True, ondelete="CASCADE")
    resolution: Resolution = Field(default=Resolution.OPEN, sa_type=enum_type(Resolution))
    handoff_reason: HandoffReason | None = Field(default=None, sa_type=enum_type(HandoffReason))
    handed_off_at: datetime | None = None
    first_bot_reply_at: datetime | None = None
    first_human_reply_at: datetime | None = None
    closed_at: datetime | None = None
    reopen_count: int = 0
    csat_score: int | None = None
    csat_comment: str | None = Field(default=None, max_length=CSAT_COMMENT_LENGTH)
    csat_at: datetime | None = None
    # Copied from the conversation, and the first replies' delays computed with them, when they are recorded
    # (``app.outcomes.recording``): the figures then count this table alone, without a join or date arithmetic per
    # conversation. The human delay runs from the handoff the reply answered, or from the start without one.
    started_at: datetime | None = None
    bot_response_s: float | None = None
    human_response_s: float | None = None
    updated_at: datetime = Field(default_factory=utc_now)
