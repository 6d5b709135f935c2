"""Whether a conversation awaits a reply: the one query the scheduler, turn ownership and recovery all ask.

A conversation waits for a reply when its latest customer message has no reply after it and no human has it (status
in ``SILENT_STATUSES``). A reply is an assistant message the customer sees with text and no tool calls: the bot's
answer, a staff member's message, or the fallback apology of a failed turn. An assistant message that only calls
tools belongs to an unfinished turn, so a turn killed between its tool calls and its answer still awaits a reply.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, Engine, and_, func, or_
from sqlmodel import Session, col, select

from app.models import Conversation, ConversationStatus, Message, MessageAuthor, MessageRole

# Statuses in which the bot stays silent: a staff member has the conversation, or it is closed.
SILENT_STATUSES: frozenset[ConversationStatus] = frozenset({ConversationStatus.HUMAN, ConversationStatus.CLOSED})


def _latest_message_id(*conditions: Any) -> Any:
    return (
        select(func.max(Message.id))
        .where(col(Message.conversation_id) == col(Conversation.id), *conditions)
        .correlate(Conversation)
        .scalar_subquery()
    )


def _latest_customer_message_id() -> Any:
    return _latest_message_id(Message.role == MessageRole.USER, Message.author == MessageAuthor.CUSTOMER)


def _awaiting_reply(silent_statuses: Collection[ConversationStatus]) -> ColumnElement[bool]:
    latest_customer = _latest_customer_message_id()
    latest_reply = _latest_message_id(
        Message.role == MessageRole.ASSISTANT,
        col(Message.private).is_(False),
        col(Message.tool_calls).is_(None),
        col(Message.content).is_not(None),
        col(Message.content) != "",
    )
    return and_(
        col(Conversation.status).not_in(list(silent_statuses)),
        latest_customer.is_not(None),
        or_(latest_reply.is_(None), latest_customer > latest_reply),
    )


def conversations_awaiting_reply(db: Engine) -> list[int]:
    """Ids of every conversation waiting for a reply, oldest first (one short read transaction)."""
    statement = select(Conversation.id).where(_awaiting_reply(SILENT_STATUSES)).order_by(col(Conversation.id))
    with Session(db) as session:
        found = session.exec(statement).all()
        session.commit()
    return [conversation_id for conversation_id in found if conversation_id is not None]


def awaits_reply(db: Engine, conversation_id: int) -> bool:
    statement = select(Conversation.id).where(col(Conversation.id) == conversation_id, _awaiting_reply(SILENT_STATUSES))
    with Session(db) as session:
        found = session.exec(statement).first()
        session.commit()
    return found is not None


@dataclass(frozen=True)
class ReplyState:
    """Where a conversation stands: whether it waits for a reply, and the id of its newest customer message (a
    turn that started after that message was stored has it in its context)."""

    awaiting: bool
    latest_customer_message_id: int | None


def reply_state(connection: Connection, conversation_id: int) -> ReplyState:
    """The conversation's ``ReplyState`` in one statement on ``connection``; an erased one awaits nothing."""
    statement = select(
        _awaiting_reply(SILENT_STATUSES).label("awaiting"), _latest_customer_message_id().label("latest")
    ).where(col(Conversation.id) == conversation_id)
    found = connection.execute(statement).first()
    if found is None:
        return ReplyState(awaiting=False, latest_customer_message_id=None)
    return ReplyState(awaiting=bool(found.awaiting), latest_customer_message_id=found.latest)
