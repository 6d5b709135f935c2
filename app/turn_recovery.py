"""Turn recovery: conversations left waiting for a reply (by a crash, or a turn cancelled at shutdown) get one.

A conversation waits for a reply when its latest customer message has no reply after it and no human has it (status
in ``SILENT_STATUSES``). A reply is an assistant message the customer sees with text and no tool calls: the bot's
answer, a human agent's message, or the fallback apology of a failed turn. An assistant message that only calls
tools belongs to an unfinished turn, so a turn killed between its tool calls and its answer is recovered too. A
message stored while a reply was being written (in a burst) has that reply after it, and counts as answered, as the
transcript shows it.

Lifecycle: the lifespan builds one ``TurnRecovery`` for the ``AgentService`` and calls ``start()``: a pass runs at
once and then every ``interval_s`` until ``stop()``. A pass schedules a turn for each waiting conversation that no
turn of this process is handling; the turn checks ``awaits_reply`` again right before it runs, since a normal turn
may have answered after the pass looked. Scheduling is in-process, so one server process per database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import anyio
from sqlalchemy import ColumnElement, Engine, and_, func, or_
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


def _awaiting_reply(silent_statuses: Collection[ConversationStatus]) -> ColumnElement[bool]:
    latest_customer = _latest_message_id(Message.role == MessageRole.USER, Message.author == MessageAuthor.CUSTOMER)
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
        recovered = [conversation_id for conversation_id in waiting if not self.agent.is_handling(conversation_id)]
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
