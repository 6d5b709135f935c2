"""Turn scheduling: when the agent answers a conversation, and that each burst gets one answer.

``accept_customer_message`` stores the message before anything else can fail, then schedules a turn. While a turn
runs, further messages only mark the conversation as pending: one more turn answers them together, so a burst gets
one reply. A short debounce (``reply_debounce_s``) lets a burst finish before the first turn starts. Then the
conversation is claimed (``app.turns.ownership``): at once with one process; on PostgreSQL, by an advisory lock that
one server process holds while it runs turns, so a burst spread over processes gets one reply too, and messages
stored by another process during a turn get one more turn. Each turn is the runner's (``app.turns.turn``).

Recovery (``app.turns.recovery``) schedules a turn for conversations left waiting by a crash, or by ``shutdown``,
which cancels turns that outlast ``SHUTDOWN_TURN_GRACE_S``; such a turn checks that it is still needed first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import Engine
from sqlmodel import Session

from app.live.broker import EventBroker
from app.live.messages import store_message
from app.models import Conversation, Message, MessageAuthor, MessageRole
from app.turns.awaiting import SILENT_STATUSES
from app.turns.ownership import TurnOwnership, turn_ownership_for

logger = logging.getLogger(__name__)

# At shutdown, running turns get this long to finish; the rest are cancelled (and recovered at the next start).
SHUTDOWN_TURN_GRACE_S = 2.0
CANCELLED_TURN_GRACE_S = 1.0


class TurnRunner(Protocol):
    """What the scheduler runs: one turn of a conversation it owns (``app.turns.turn.AgentTurn``)."""

    async def run(self, conversation_id: int, *, latest_customer_text: str | None = None) -> None: ...

    def forget(self, conversation_ids: Sequence[int]) -> None: ...


@dataclass
class _ConversationState:
    running: bool = False
    pending: bool = False
    # The newest customer message of the burst being answered: the next turn's recall query, known without a query.
    latest_customer_text: str | None = None


class TurnScheduler:
    """Schedules the turns of every conversation of one server process."""

    def __init__(
        self,
        *,
        db: Engine,
        broker: EventBroker,
        runner: TurnRunner,
        reply_debounce_s: float,
        ownership: TurnOwnership | None = None,
    ) -> None:
        self.db = db
        self.broker = broker
        self.runner = runner
        self.reply_debounce_s = reply_debounce_s
        self.ownership = ownership or turn_ownership_for(db)
        self._states: dict[int, _ConversationState] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def accept_customer_message(self, session: Session, conversation: Conversation, text: str) -> Message:
        """Store the customer's message (committed before anything can fail) and schedule a reply. The caller has
        marked the conversation's activity (``updated_at``) in the session's open transaction, which this commits."""
        assert conversation.id is not None
        message = Message(
            conversation_id=conversation.id, role=MessageRole.USER, author=MessageAuthor.CUSTOMER, content=text
        )
        store_message(session, self.broker, conversation, message)
        if conversation.status not in SILENT_STATUSES:
            self.schedule_turn(conversation.id, latest_text=text)
        return message

    def schedule_turn(self, conversation_id: int, *, recovering: bool = False, latest_text: str | None = None) -> None:
        state = self._states.setdefault(conversation_id, _ConversationState())
        if latest_text is not None:
            state.latest_customer_text = latest_text
        if state.running:
            state.pending = True
            return
        state.running = True
        task = asyncio.get_running_loop().create_task(self._settle_then_answer(conversation_id, state, recovering))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _settle_then_answer(self, conversation_id: int, state: _ConversationState, recovering: bool) -> None:
        completed = False
        try:
            if self.reply_debounce_s > 0:
                await asyncio.sleep(self.reply_debounce_s)
            await self._answer_while_needed(conversation_id, state, recovering)
            completed = True
        except Exception:  # the database is unreachable: the message is stored, and turn recovery tries again
            logger.exception("Could not run the turns of conversation %s", conversation_id)
        finally:
            state.running = False
            if completed and state.pending:  # accepted here after the last check (a shared claim awaits it)
                self.schedule_turn(conversation_id)
            elif not state.pending:
                self._states.pop(conversation_id, None)

    async def _answer_while_needed(self, conversation_id: int, state: _ConversationState, recovering: bool) -> None:
        async with self.ownership.claim(conversation_id) as claim:
            state.pending = False  # the check sees every message accepted until now
            if not await claim.needs_first_turn(recovering=recovering):
                return
            while True:
                await self.runner.run(conversation_id, latest_customer_text=state.latest_customer_text)
                stored_elsewhere = await claim.needs_another_turn()
                if not (state.pending or stored_elsewhere):
                    return
                state.pending = False

    def is_handling(self, conversation_id: int) -> bool:
        """Whether a turn of this conversation is scheduled or running."""
        return conversation_id in self._states

    @property
    def idle(self) -> bool:
        """Whether no turn is scheduled or running."""
        return not self._tasks

    async def drain(self) -> None:
        """Wait for every running turn (used by tests; ``shutdown`` bounds the wait)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def shutdown(self) -> None:
        """Give running turns ``SHUTDOWN_TURN_GRACE_S`` to finish, then cancel the rest: their customers' messages
        are stored, and turn recovery answers them at the next start."""
        try:
            await asyncio.wait_for(self.drain(), SHUTDOWN_TURN_GRACE_S)
        except TimeoutError:
            running = list(self._tasks)
            logger.warning("Cancelled %d turn(s) still running at shutdown; recovery answers them", len(running))
            for task in running:
                task.cancel()
            if running:
                await asyncio.wait(running, timeout=CANCELLED_TURN_GRACE_S)
        finally:
            await self.ownership.close()

    def forget_conversations(self, conversation_ids: Sequence[int]) -> None:
        """Drop the scheduling state and the runner's state of erased conversations (a running turn finds the
        conversation gone and stops)."""
        self.runner.forget(conversation_ids)
        for conversation_id in conversation_ids:
            self._states.pop(conversation_id, None)
