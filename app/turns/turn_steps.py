"""What a playbook needs from the turn it runs in: the conversation's tools, its live events and the steps that
store a tool call, run it, store its result and hand the conversation to a person.

A structural type, so that the playbook modules name what they use without importing ``preparation``, which
imports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sqlmodel import Session

from app.infra.metrics import Metrics
from app.live.broker import EventBroker
from app.llm.responses import ToolCall
from app.models import Conversation, Customer, Message
from app.playbooks.language import Language
from app.tools import ToolContext, ToolRegistry, ToolResult
from app.tools.references import Lookup
from compression.messages import ChatMessage


class TurnSteps(Protocol):
    tools: ToolRegistry
    metrics: Metrics
    broker: EventBroker

    def tool_context(
        self, session: Session, conversation: Conversation, customer: Customer, context: Sequence[ChatMessage]
    ) -> ToolContext: ...

    def execute(self, session: Session, call: ToolCall, context: ToolContext) -> ToolResult: ...

    def store_call(self, session: Session, conversation: Conversation, call: ToolCall) -> Message: ...

    def call_message(self, call: ToolCall, asked: Message) -> ChatMessage: ...

    def store_result(
        self, session: Session, conversation: Conversation, call: ToolCall, result: ToolResult
    ) -> ChatMessage: ...

    def recent_order_lookup(
        self, session: Session, conversation: Conversation, customer: Customer
    ) -> Lookup | None: ...

    def hand_off(
        self,
        session: Session,
        conversation: Conversation,
        customer: Customer,
        *,
        summary: str,
        trigger: str,
        language: Language = ...,
        reply: str | None = ...,
        category: str = ...,
    ) -> bool: ...
