"""The turn's side of a playbook run (``app.playbooks.runner.PlaybookActions``): what a step does, done the way the
rest of the turn does it.

Tool calls go through the registry and are stored as the bot's tool call and its result, so the transcript, the
console and the confirmation check see them like the model's own. Replies are stored with their knowledge citations
(``app.turns.citations``). A handoff goes through the handoff tool. A remembered conclusion is queued in the
conclusion outbox in the turn's transaction. A successful lookup by order number makes that order the
conversation's focus.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date
from typing import Any, cast

import anyio
from sqlmodel import Session

from app.customer_memory.outbox import enqueue_key_decisions
from app.db import autocommit_step
from app.llm.responses import ToolCall, fallback_call_id
from app.models import Conversation, Customer, Message, MessageAuthor, MessageRole
from app.models.conclusions import ConclusionSource
from app.tools import ToolResult
from app.tools.references import DeclaresReferences
from app.turns.citations import store_cited_reply
from app.turns.turn_steps import TurnSteps
from compression.messages import ChatMessage
from compression.types import KeyDecision, KeyDecisionKind

ORDER_FOCUS = "order"
ORDER_ARGUMENT = "order_number"


class TurnPlaybookActions:
    def __init__(
        self,
        preparation: TurnSteps,
        session: Session,
        conversation: Conversation,
        customer: Customer,
        context: list[ChatMessage],
        conclusions_queued: Callable[[], None] | None = None,
    ) -> None:
        self.preparation = preparation
        self.session = session
        self.conversation = conversation
        self.customer = customer
        self.context = context
        self.conclusions_queued = conclusions_queued
        self.lookup_tools: list[DeclaresReferences] = list(preparation.tools.reference_tools())
        self.replied = False

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        call = ToolCall(id=fallback_call_id(), name=name, arguments=json.dumps(arguments))
        result, messages = await anyio.to_thread.run_sync(self._run, call)
        self.context.extend(messages)
        number = result.payload.get(ORDER_ARGUMENT) if result.ok else None
        if isinstance(number, str):
            self._focus_on(number)
        return result

    def _run(self, call: ToolCall) -> tuple[ToolResult, list[ChatMessage]]:
        preparation = self.preparation
        asked = preparation.store_call(self.session, self.conversation, call)
        context = preparation.tool_context(self.session, self.conversation, self.customer, self.context)
        result = preparation.execute(self.session, call, context)
        stored = preparation.store_result(self.session, self.conversation, call, result)
        return result, [preparation.call_message(call, asked), stored]

    def reply(self, text: str) -> None:
        assert self.conversation.id is not None
        answer = Message(
            conversation_id=self.conversation.id, role=MessageRole.ASSISTANT, author=MessageAuthor.BOT, content=text
        )
        store_cited_reply(self.session, self.preparation.broker, self.conversation, answer, self.context)
        self.replied = True

    def hand_off(self, *, summary: str, reply: str, category: str) -> bool:
        handed = self.preparation.hand_off(
            self.session,
            self.conversation,
            self.customer,
            summary=summary,
            trigger="playbook",
            reply=reply,
            category=category,
        )
        self.replied = self.replied or handed
        return handed

    def remember(self, *, kind: str, text: str, due: str | None, subject: str | None) -> None:
        assert self.conversation.id is not None and self.customer.id is not None
        decision = KeyDecision(
            kind=cast(KeyDecisionKind, kind),
            text=text,
            due_date=date.fromisoformat(due) if due else None,
            identifiers=(subject,) if subject else (),
            said_by="customer" if kind == "preference" else "bot",
        )
        enqueue_key_decisions(
            self.session,
            customer_id=self.customer.id,
            conversation_id=self.conversation.id,
            decisions=[decision],
            message_range=None,
            source=ConclusionSource.PLAYBOOK,
        )
        self.session.commit()
        if self.conclusions_queued is not None:
            self.conclusions_queued()

    def recent_order(self) -> str | None:
        if self.customer.external_id is None:
            return None
        lookup = self.preparation.recent_order_lookup(self.session, self.conversation, self.customer)
        return str(lookup.arguments[ORDER_ARGUMENT]) if lookup is not None else None

    def focus(self) -> str | None:
        if self.conversation.focus_kind == ORDER_FOCUS:
            return self.conversation.focus_ref
        return None

    def _focus_on(self, number: str) -> None:
        if self.conversation.focus_ref == number:
            return
        autocommit_step(self.session)
        self.conversation.focus_kind, self.conversation.focus_ref = ORDER_FOCUS, number
        self.session.add(self.conversation)
        self.session.commit()
