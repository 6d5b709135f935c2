"""A customer's conversations for the panel beside one of them: newest first, each with its date, status, how it
turned out and the customer's first line, so an agent sees what this customer asked before.

One query for the newest conversations (outcome joined) and one for their first customer messages, by the
``(conversation_id, id)`` index: the panel costs the same for a customer with three conversations or three hundred.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select as sa_select
from sqlmodel import Session, col, func, select

from app.models import Conversation, ConversationOutcome, ConversationStatus, Message, MessageRole, Resolution

TIMELINE_SHOWN = 20
FIRST_LINE_CHARS = 120


@dataclass(frozen=True)
class TimelineEntry:
    public_id: str
    created_at: datetime
    status: ConversationStatus
    resolution: Resolution | None
    first_line: str | None
    current: bool

    @property
    def outcome(self) -> str:
        """How it turned out, in the words the overview uses."""
        if self.resolution is None or self.resolution == Resolution.OPEN:
            return "open"
        return {Resolution.BOT: "resolved by the bot", Resolution.HUMAN: "resolved by a person"}.get(
            self.resolution, "abandoned"
        )


def customer_timeline(session: Session, customer_id: int, current: str | None = None) -> list[TimelineEntry]:
    """The newest ``TIMELINE_SHOWN`` conversations; ``current`` (a public id) marks the one on screen."""
    rows = session.execute(
        sa_select(
            col(Conversation.id),
            col(Conversation.public_id),
            col(Conversation.created_at),
            col(Conversation.status),
            col(ConversationOutcome.resolution),
        )
        .join(ConversationOutcome, col(ConversationOutcome.conversation_id) == Conversation.id, isouter=True)
        .where(col(Conversation.customer_id) == customer_id)
        .order_by(col(Conversation.created_at).desc(), col(Conversation.id).desc())
        .limit(TIMELINE_SHOWN)
    ).all()
    firsts = _first_lines(session, [row[0] for row in rows])
    return [
        TimelineEntry(public_id, created_at, status, resolution, firsts.get(key), public_id == current)
        for key, public_id, created_at, status, resolution in rows
    ]


def _first_lines(session: Session, conversation_ids: list[int | None]) -> dict[int, str]:
    ids = [key for key in conversation_ids if key is not None]
    if not ids:
        return {}
    first = (
        select(func.min(Message.id))
        .where(col(Message.conversation_id).in_(ids), Message.role == MessageRole.USER)
        .group_by(col(Message.conversation_id))
    )
    found = session.exec(select(Message.conversation_id, Message.content).where(col(Message.id).in_(first))).all()
    return {key: _line(text) for key, text in found if text}


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= FIRST_LINE_CHARS else flat[: FIRST_LINE_CHARS - 1].rstrip() + "…"
