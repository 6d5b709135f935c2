"""Closing the conversations nobody is writing in any more: the bot answered, and the customer has gone quiet.

``IdleClosing`` runs on every server process every ``IDLE_CHECK_INTERVAL_S`` while ``MEMDESK_IDLE_CLOSE_AFTER_S`` is
set. A pass picks up to ``BATCH`` conversations the bot holds whose newest message is older than the setting and
that wait for no reply, and closes each with a guarded ``UPDATE`` (status still ``bot``): with several processes,
each conversation is closed, audited and recorded once. The close is the one staff make (``record_close``: a
conversation the bot answered and nobody else did is resolved by the bot), announced on the live stream, so the
widget asks its "How did we do?".
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import anyio
from sqlalchemy import Engine, func, update
from sqlmodel import Session, col, select

from app.console.audit import record_audit_event
from app.infra.periodic import PeriodicPass
from app.live.broker import EventBroker
from app.models import Conversation, ConversationStatus, Message, MessageAuthor, utc_now
from app.outcomes.recording import record_close

logger = logging.getLogger(__name__)

IDLE_CHECK_INTERVAL_S = 300.0
BATCH = 500  # closes per pass: a backlog drains over a few passes instead of one long transaction
IDLE_ACTOR = "system:idle"
IDLE_ACTION = "conversation.idle_close"


def idle_conversations(session: Session, *, older_than: datetime, limit: int = BATCH) -> list[int]:
    """Conversations the bot holds whose newest message is older than ``older_than`` and not the customer's."""
    newest = (
        select(col(Message.conversation_id), func.max(col(Message.id)).label("newest_id"))
        .group_by(col(Message.conversation_id))
        .subquery()
    )
    statement = (
        select(col(Conversation.id))
        .join(newest, newest.c.conversation_id == col(Conversation.id))
        .join(Message, col(Message.id) == newest.c.newest_id)
        .where(
            col(Conversation.status) == ConversationStatus.BOT,
            col(Message.created_at) < older_than,
            col(Message.author) != MessageAuthor.CUSTOMER,
        )
        .order_by(col(Conversation.id))
        .limit(limit)
    )
    return [conversation_id for conversation_id in session.exec(statement) if conversation_id is not None]


def close_idle(db: Engine, *, idle_after_s: float, now: datetime | None = None) -> list[int]:
    """One pass: close the idle conversations; the ids this process closed."""
    cutoff = (now or utc_now()) - timedelta(seconds=idle_after_s)
    closed: list[int] = []
    with Session(db) as session:
        for conversation_id in idle_conversations(session, older_than=cutoff):
            if _close_one(session, conversation_id, idle_after_s):
                closed.append(conversation_id)
    return closed


def _close_one(session: Session, conversation_id: int, idle_after_s: float) -> bool:
    changed = session.execute(
        update(Conversation)
        .where(col(Conversation.id) == conversation_id, col(Conversation.status) == ConversationStatus.BOT)
        .values(status=ConversationStatus.CLOSED, updated_at=utc_now())
    )
    if not changed.rowcount:  # type: ignore[attr-defined]
        session.rollback()  # someone wrote, took it over or closed it since the pick
        return False
    record_audit_event(
        session,
        actor=IDLE_ACTOR,
        action=IDLE_ACTION,
        target_type="conversation",
        target_id=conversation_id,
        detail={"idle_after_s": idle_after_s},
    )
    record_close(session, conversation_id, ConversationStatus.BOT)
    session.commit()
    return True


class IdleClosing(PeriodicPass):
    failure_message = "Closing idle conversations failed; next attempt in %s s"

    def __init__(self, db: Engine, broker: EventBroker, *, idle_after_s: float) -> None:
        super().__init__(interval_s=IDLE_CHECK_INTERVAL_S)
        self.db = db
        self.broker = broker
        self.idle_after_s = idle_after_s

    async def run_pass(self) -> list[int]:
        closed = await anyio.to_thread.run_sync(lambda: close_idle(self.db, idle_after_s=self.idle_after_s))
        for conversation_id in closed:
            self.broker.publish(conversation_id, "conversation.status", {"status": ConversationStatus.CLOSED.value})
        if closed:
            logger.info("Closed %d idle conversation(s)", len(closed))
        return closed
