"""What needs this staff member now, for the tab title, the icon's badge and notifications on every console page.

A conversation needs them when it waits for a person and nobody else has it (``needs_human``, unassigned or theirs),
or when it is theirs and the customer wrote after the last message they read. Each item carries the id of the
customer's latest message, so a page tells a new message from one it already announced.

One query over the two statuses' index ranges, however many conversations are open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, or_
from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from app.console.inbox import preview_line
from app.models import Conversation, ConversationRead, ConversationStatus, Customer, Message, MessageAuthor

ATTENTION_SHOWN = 50


@dataclass(frozen=True)
class AttentionItem:
    conversation: str  # public id
    customer: str
    kind: str  # "handoff" (waits for a person) or "message" (a new message in a conversation of theirs)
    message_id: int  # the customer's latest message
    preview: str

    def as_json(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation,
            "customer": self.customer,
            "kind": self.kind,
            "key": f"{self.conversation}:{self.message_id}",
            "preview": self.preview,
        }


def attention(session: Session, staff_id: int) -> list[AttentionItem]:
    """The conversations that need ``staff_id`` now, the longest waiting first (ends its read transaction)."""
    latest = (
        sa_select(func.max(Message.id))
        .where(col(Message.conversation_id) == col(Conversation.id), col(Message.author) == MessageAuthor.CUSTOMER)
        .correlate(Conversation)
        .scalar_subquery()
    )
    read_upto = func.coalesce(col(ConversationRead.last_read_message_id), 0)
    waiting = and_(
        col(Conversation.status) == ConversationStatus.NEEDS_HUMAN,
        or_(col(Conversation.assigned_staff_id).is_(None), col(Conversation.assigned_staff_id) == staff_id),
    )
    theirs = and_(col(Conversation.status) == ConversationStatus.HUMAN, col(Conversation.assigned_staff_id) == staff_id)
    found = sa_select(
        col(Conversation.public_id), col(Conversation.status), col(Customer.name), latest.label("latest"), read_upto
    ).join(Customer, col(Customer.id) == col(Conversation.customer_id))
    found = found.outerjoin(
        ConversationRead,
        and_(col(ConversationRead.conversation_id) == col(Conversation.id), col(ConversationRead.staff_id) == staff_id),
    ).where(or_(waiting, theirs))
    rows = session.execute(found.order_by(col(Conversation.updated_at), col(Conversation.id))).all()
    items = [
        (public_id, status, name, int(latest_id))
        for public_id, status, name, latest_id, read in rows
        if latest_id is not None and (status == ConversationStatus.NEEDS_HUMAN or latest_id > read)
    ][:ATTENTION_SHOWN]
    texts = _texts(session, [item[3] for item in items])
    session.commit()
    return [
        AttentionItem(
            public_id,
            name or "visitor",
            "handoff" if status == ConversationStatus.NEEDS_HUMAN else "message",
            latest_id,
            texts.get(latest_id, ""),
        )
        for public_id, status, name, latest_id in items
    ]


def _texts(session: Session, message_ids: list[int]) -> dict[int, str]:
    if not message_ids:
        return {}
    found = session.execute(
        sa_select(col(Message.id), col(Message.content)).where(col(Message.id).in_(message_ids))
    ).all()
    return {key: preview_line(text) for key, text in found}
