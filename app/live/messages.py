"""Messages entering a conversation: stored, then announced to every live stream (the widget, the console).

``store_message`` is the one way a message is persisted and published, for the agent's turn, its preparation step
and the console alike: the commit comes first, so no stream ever shows a message the database could still lose.
The conversation's first bot reply and first staff reply are recorded with it (``app.outcomes``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlmodel import Session

from app.db import autocommit_step
from app.live.broker import EventBroker
from app.models import Conversation, Message, MessagePublic, SourcePublic
from app.outcomes.recording import FIRST_REPLIES, record_first_reply


def message_event(
    message: Message,
    conversation: Conversation,
    *,
    staff_name: str | None = None,
    sources: Sequence[SourcePublic] = (),
) -> dict[str, Any]:
    """The ``message.created`` event data: the message as ``MessagePublic`` shows it."""
    public = MessagePublic.of(
        message, conversation_public_id=conversation.public_id, staff_name=staff_name, sources=sources
    )
    return public.model_dump(mode="json")


def store_message(
    session: Session,
    broker: EventBroker,
    conversation: Conversation,
    message: Message,
    *,
    staff_name: str | None = None,
    alongside: Callable[[Message], object] | None = None,
    sources: Sequence[SourcePublic] = (),
) -> Message:
    """Commit ``message`` with whatever the session already holds, then publish it. ``alongside`` adds rows that
    must commit with it and need its id (an audit event naming the message, the sources a reply cites);
    ``sources`` are those the published event shows."""
    is_reply = bool(message.content) and not message.private  # a tool call or a private note answers nobody
    first_reply = is_reply and FIRST_REPLIES.needed(session, message.conversation_id, message.author)
    if alongside is None and not first_reply:
        autocommit_step(session)  # one INSERT on PostgreSQL when nothing else is pending
        session.add(message)
    else:
        session.add(message)
        session.flush()
        if alongside is not None:
            alongside(message)
        if first_reply:
            record_first_reply(session, message.conversation_id, message.author, message.created_at)
    session.commit()  # the id is assigned on flush; nothing expires, so no new transaction starts here
    if first_reply:
        FIRST_REPLIES.remember(session, message.conversation_id, message.author)
    broker.publish(
        message.conversation_id,
        "message.created",
        message_event(message, conversation, staff_name=staff_name, sources=sources),
    )
    return message
