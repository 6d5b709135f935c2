"""Turn recovery: conversations left waiting for a reply (by a crash, or a turn cancelled at shutdown) get one.

A conversation waits for a reply when its latest customer message has no reply after it and no human has it (status
in ``SILENT_STATUSES``). A reply is an assistant message the customer sees with text and no tool calls: the bot's
answer, a human agent's message, or the fallback apology of a failed turn. An assistant message that only calls
tools belongs to an unfinished turn, so a turn killed between its tool calls and its answer is recovered too. A
message stored while a reply was being written (in a burst) has that reply after it, and counts as answered, as the
transcript shows it.

Lifecycle: the lifespan builds one ``TurnRecovery`` for the ``AgentService`` and calls ``start()``: a pass runs at
once and then every ``interval_s`` until ``stop()``. A pass schedules a turn for each waiting conversation that no
turn of this process is handling and whose turns no process owns (``app.turn_ownership``); the turn checks that the
conversation still awaits a reply once it owns it, since a normal turn may have answered after the pass looked.
On PostgreSQL every server process runs its passes: a conversation whose process died is claimed again by whichever
process gets its turn lock first, and answered once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from sqlalchemy import ColumnElement, Connection, Engine, and_, func, or_
from sqlmodel import Session, col, select

from app.models import Conversation, ConversationStatus, Message, MessageAuthor, MessageRole

if TYPE_CHECKING:
    from app.agent import AgentService

logger = logging.getLogger(__name__)

# Statuses in which the bot stays silent: a human agent has the conversation, or it is closed.
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


class TurnRecovery:
    def __init__(self, agent: AgentService, *, interval_s: float) -> None:
        self.agent = agent
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def recover(self) -> list[int]:
        """One pass: schedule a turn for each waiting conversation no turn here is handling; returns their ids."""
        waiting = await anyio.to_thread.run_sync(conversations_awaiting_reply, self.agent.db)
        # A turn running in another process (or waiting here for its lock) answers its conversation already.
        owned = await self.agent.ownership.owned_now(waiting)
        recovered = [
            conversation_id
            for conversation_id in waiting
            if not self.agent.is_handling(conversation_id) and conversation_id not in owned
        ]
        for conversation_id in recovered:
            self.agent.schedule_turn(conversation_id, recovering=True)
        if recovered:
            logger.info("Recovering %d conversation(s) waiting for a reply: %s", len(recovered), recovered)
        return recovered

    async def _run(self) -> None:
        while True:
            try:
                await self.recover()
            except Exception:  # the database is unreachable: the next pass tries again
                logger.exception("Turn recovery failed; next attempt in %s s", self.interval_s)
            await asyncio.sleep(self.interval_s)
