"""What a turn does before the model is called: answer what needs no model, and look up what the model will need.

``TurnPreparation.prepare`` runs once per turn, on the context rebuilt from the transcript, and only while the
customer's latest message has nothing after it (a recovered or repeated turn does not prefetch twice):

1. An explicit request for a person (``app.turns.handoff_request``) hands off through the ``transfer_to_human`` tool,
   without an LLM call: the tool call and its result are stored like the model's own, the console shows the handoff
   note (an audit event), and the customer gets a clear message in their language.
2. Prefetch (``MEMDESK_PREFETCH``): when the message names an identifier a read-only tool declares
   (``app.tools.references``: the demo shop's ``#W1234567``, a config-file tool's ``reference_pattern``), or a
   verified customer asks about "my order" and the order tool knows their one recent order, that tool runs through
   the registry; a question the imported knowledge answers with confidence (``app.knowledge.search.is_confident``)
   gets ``search_knowledge``. Only lookups
   that succeed are kept: the tool is scoped to the customer, so a number of someone else's order is refused by it
   and never reaches the context. Each one kept is stored and added to the context as a tool call and its result,
   so the model only has to phrase the answer: one LLM round trip less per question, with any model. The embedded
   demo model cannot even copy a tracking number reliably: for it, the reply is written from the lookups
   (``app.turns.fact_replies``) and no model is called.

Lookups only ever read (the registry's write tools need the customer's confirmation and are never prefetched).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from sqlalchemy import text as sa_text
from sqlmodel import Session

from app.db import autocommit_step
from app.infra.metrics import Metrics
from app.knowledge.search import is_confident, search_knowledge
from app.live.broker import EventBroker
from app.live.messages import store_message
from app.llm.responses import ToolCall, fallback_call_id
from app.models import Conversation, ConversationStatus, Customer, Message, MessageAuthor, MessageRole
from app.models.outcomes import HandoffReason
from app.playbooks.guide import Guide
from app.playbooks.language import Language
from app.settings import Settings
from app.tools import ToolContext, ToolRegistry, ToolResult
from app.tools.handoff import TransferToHumanTool
from app.tools.references import Lookup, named_references
from app.turns.citations import store_cited_reply
from app.turns.fact_replies import capabilities_reply, reply_from_lookups
from app.turns.handoff_request import asks_for_person
from app.turns.playbook_turn import PlaybookTurn
from compression.messages import ChatMessage

HELP_TOOL = "search_knowledge"
HANDOFF_TOOL = TransferToHumanTool.name
MAX_PREFETCHED_REFERENCES = 2
# A message that lists many numbers is no reason to query the shop for each: the model can look up the rest.
MAX_REFERENCE_ATTEMPTS = 4
HELP_QUERY_CHARS = 300
HANDOFF_NOTE_QUOTE_CHARS = 300

MY_ORDER = re.compile(
    r"\bmy\s+(?:last\s+|latest\s+|recent\s+|new\s+)?(?:order|package|parcel|delivery|shipment)\b"
    r"|\bmeine[rnms]?\s+(?:letzte[n]?\s+)?(?:bestellung|paket|lieferung|sendung)\b|我的订单|我的包裹",
    re.IGNORECASE,
)

# What the widget's "Talk to a person" button calls: ``(session, conversation, customer, text)``, True once the
# conversation waits for a person (``TurnPreparation.hand_off_on_button``).
ButtonHandoff = Callable[[Session, Conversation, Customer, str], bool]

HANDOFF_REPLIES: dict[Language, str] = {
    "en": "I've passed this conversation to our support team, and a person will reply here. Our team is available "
    "Monday-Friday 8 am-8 pm and Saturday 10 am-4 pm (US Eastern).",
    "de": "Ich habe das Gespräch an unser Support-Team übergeben; eine Person antwortet Ihnen hier. Unser Team ist "
    "Montag bis Freitag 8-20 Uhr und Samstag 10-16 Uhr (US-Ostküstenzeit) erreichbar.",
    "zh": "我已将此对话转给我们的客服团队，稍后会有工作人员在这里回复您。"
    "服务时间：周一至周五 8:00-20:00，周六 10:00-16:00（美国东部时间）。",
}


@dataclass
class Prepared:
    """The context to send the model, or ``answered`` when the turn is over without one (handed off, or the
    customer's latest message already has its reply, as after the "Talk to a person" button)."""

    context: list[ChatMessage]
    answered: bool = False
    results: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (tool, payload) of each lookup
    guide: Guide | None = None  # the procedure the model follows this turn, with only its tools


def unanswered_customer_text(context: Sequence[ChatMessage]) -> str | None:
    """The customer's messages that nothing follows yet (no reply, no lookup), oldest first on lines of their own,
    else None. A burst is read as one request: "my parcel #W1234567" then "where is it" names the order once."""
    texts: list[str] = []
    for message in reversed(context):
        if message.get("role") == "system":
            continue
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, str):
            break
        texts.append(content)
    return "\n".join(reversed(texts)) if texts else None


def _handed_off_last(context: Sequence[ChatMessage]) -> bool:
    """Whether the newest message is the handoff reply (stored by the "Talk to a person" button before this turn
    began): the turn has nothing to add. Any other reply last is a burst's first answer, and the turn goes on."""
    for message in reversed(context):
        if message.get("role") == "system":
            continue
        return message.get("role") == "assistant" and message.get("content") in HANDOFF_REPLIES.values()
    return False


class TurnPreparation:
    """See the module docstring. Messages it adds are stored and announced on ``broker``."""

    def __init__(
        self,
        *,
        tools: ToolRegistry,
        settings: Settings,
        metrics: Metrics,
        broker: EventBroker,
        playbooks: PlaybookTurn | None = None,
    ) -> None:
        self.tools = tools
        self.settings = settings
        self.metrics = metrics
        self.broker = broker
        self.playbooks = playbooks

    async def prepare(
        self, session: Session, conversation: Conversation, customer: Customer, context: list[ChatMessage]
    ) -> Prepared:
        text = unanswered_customer_text(context)
        if text is None:
            return Prepared(context, answered=_handed_off_last(context))
        language = asks_for_person(text)
        if language is not None:
            summary = f"The customer asked to talk to a person: \u201c{text[:HANDOFF_NOTE_QUOTE_CHARS]}\u201d"
            if self.hand_off(session, conversation, customer, summary=summary, trigger="request", language=language):
                return Prepared(context, answered=True)
        playbooks = self.playbooks
        guide = None
        if playbooks is not None:
            outcome = await playbooks.answer(self, session, conversation, customer, context, text)
            if outcome.answered:
                return Prepared(context, answered=True)
            guide = outcome.guide
        prepared = Prepared(context, guide=guide)
        if self.settings.prefetch:
            await self.prefetch(session, conversation, customer, prepared, text)
        if not self.settings.chat_model_is_embedded:
            return prepared
        reply = reply_from_lookups(prepared.results) if prepared.results else None
        if reply is None and playbooks is not None and playbooks.applies():
            # With playbooks on, the embedded model is never handed a question that needs facts: it gets what the
            # desk can help with instead.
            reply = capabilities_reply(text)
        if reply is not None:
            self._reply(session, conversation, prepared, reply)
        return prepared

    def _reply(self, session: Session, conversation: Conversation, prepared: Prepared, text: str) -> None:
        assert conversation.id is not None
        answer = Message(
            conversation_id=conversation.id, role=MessageRole.ASSISTANT, author=MessageAuthor.BOT, content=text
        )
        store_cited_reply(session, self.broker, conversation, answer, prepared.context)
        prepared.answered = True

    # -- handoff -------------------------------------------------------------------------------------------------
    def hand_off(
        self,
        session: Session,
        conversation: Conversation,
        customer: Customer,
        *,
        summary: str,
        trigger: str,
        language: Language = "en",
        reply: str | None = None,
        category: str = HandoffReason.CUSTOMER_REQUEST.value,
    ) -> bool:
        """Hand the conversation to a person through the handoff tool; True once it waits for one (already did, or
        does now). False when the tool refused or is not registered: the model then takes the message.

        The customer is told ``reply``, by default the request's handoff reply in ``language``."""
        if conversation.status != ConversationStatus.BOT:
            return conversation.status in (ConversationStatus.NEEDS_HUMAN, ConversationStatus.HUMAN)
        if self.tools.get(HANDOFF_TOOL) is None:
            return False
        reason = "customer asked for a person" if category == HandoffReason.CUSTOMER_REQUEST.value else category
        arguments = {"summary": summary, "reason": f"{reason} ({trigger})", "category": category}
        result, _ = self._run_tool(session, conversation, customer, Lookup(HANDOFF_TOOL, arguments), [])
        if not result.handed_off:
            return False
        assert conversation.id is not None
        told = Message(
            conversation_id=conversation.id,
            role=MessageRole.ASSISTANT,
            author=MessageAuthor.BOT,
            content=reply or HANDOFF_REPLIES[language],
        )
        store_message(session, self.broker, conversation, told)
        session.refresh(conversation)
        session.commit()
        self.broker.publish(conversation.id, "conversation.status", {"status": conversation.status.value})
        self.metrics.requested_handoffs.labels(trigger=trigger).inc()
        return True

    def hand_off_on_button(self, session: Session, conversation: Conversation, customer: Customer, text: str) -> bool:
        """The customer pressed "Talk to a person" with ``text``; the reply is in the language the text asks in."""
        quote = text[:HANDOFF_NOTE_QUOTE_CHARS]
        summary = f"The customer pressed \u201cTalk to a person\u201d, writing: \u201c{quote}\u201d"
        language = asks_for_person(text) or "en"
        return self.hand_off(session, conversation, customer, summary=summary, trigger="button", language=language)

    # -- prefetch ------------------------------------------------------------------------------------------------
    async def prefetch(
        self, session: Session, conversation: Conversation, customer: Customer, prepared: Prepared, text: str
    ) -> None:
        """The read-only lookups the model will need for ``text``, added to ``prepared``; see the module docstring."""
        named = named_references(self.tools.reference_tools(), text)
        for lookup in named[:MAX_REFERENCE_ATTEMPTS]:
            if len(prepared.results) == MAX_PREFETCHED_REFERENCES:
                break
            await self._prefetch(session, conversation, customer, prepared, lookup)
        if not prepared.results and customer.external_id is not None and MY_ORDER.search(text):
            recent = self.recent_order_lookup(session, conversation, customer)
            if recent is not None:
                await self._prefetch(session, conversation, customer, prepared, recent)
        # A message that names an order is about that order, even when it is not the customer's.
        if not named and not prepared.results and self.tools.get(HELP_TOOL) is not None:
            autocommit_step(session)
            lookups = _confident_help_lookup(session, text)
            session.commit()
            for lookup in lookups:
                await self._prefetch(session, conversation, customer, prepared, lookup)

    def recent_order_lookup(self, session: Session, conversation: Conversation, customer: Customer) -> Lookup | None:
        """The lookup of the one order "my order" means, from the first reference tool that knows it."""
        context = self.tool_context(session, conversation, customer, [])
        autocommit_step(session)
        try:
            for tool in self.tools.reference_tools():
                number = tool.single_recent_order(context)
                if number is not None:
                    return Lookup(tool.name, {tool.reference_patterns[0].argument: number})
            return None
        finally:
            session.commit()

    async def _prefetch(
        self, session: Session, conversation: Conversation, customer: Customer, prepared: Prepared, lookup: Lookup
    ) -> None:
        """Run ``lookup``; only a successful one is stored and joins the context: the tool's refusal (not found,
        not this customer's, the shop unreachable) leaves the question to the model, which may call it itself."""
        context = self.tool_context(session, conversation, customer, prepared.context)
        result, messages = await anyio.to_thread.run_sync(self._look_up, session, conversation, lookup, context)
        self.metrics.prefetches.labels(tool=lookup.tool, outcome="ok" if result.ok else "error").inc()
        if result.ok:
            prepared.context.extend(messages)
            prepared.results.append((lookup.tool, result.payload))

    def _look_up(
        self, session: Session, conversation: Conversation, lookup: Lookup, context: ToolContext
    ) -> tuple[ToolResult, list[ChatMessage]]:
        call = ToolCall(id=fallback_call_id(), name=lookup.tool, arguments=json.dumps(lookup.arguments))
        result = self.execute(session, call, context)
        if not result.ok:
            return result, []
        asked = self.store_call(session, conversation, call)
        return result, [self.call_message(call, asked), self.store_result(session, conversation, call, result)]

    def _run_tool(
        self,
        session: Session,
        conversation: Conversation,
        customer: Customer,
        lookup: Lookup,
        context: Sequence[ChatMessage],
    ) -> tuple[ToolResult, list[ChatMessage]]:
        """Store a tool call as the bot's, run it through the registry, store its result; both as context messages."""
        call = ToolCall(id=fallback_call_id(), name=lookup.tool, arguments=json.dumps(lookup.arguments))
        asked = self.store_call(session, conversation, call)
        result = self.execute(session, call, self.tool_context(session, conversation, customer, context))
        return result, [self.call_message(call, asked), self.store_result(session, conversation, call, result)]

    def tool_context(
        self, session: Session, conversation: Conversation, customer: Customer, context: Sequence[ChatMessage]
    ) -> ToolContext:
        assert conversation.id is not None and customer.id is not None
        return ToolContext(
            session=session,
            customer_id=customer.id,
            conversation_id=conversation.id,
            messages=context,
            external_customer_id=customer.external_id,
        )

    def execute(self, session: Session, call: ToolCall, context: ToolContext) -> ToolResult:
        result = self.tools.execute(call.name, call.arguments, context)
        session.commit()
        return result

    def store_call(self, session: Session, conversation: Conversation, call: ToolCall) -> Message:
        assert conversation.id is not None
        message = Message(
            conversation_id=conversation.id,
            role=MessageRole.ASSISTANT,
            author=MessageAuthor.BOT,
            content=None,
            tool_calls=[dict(call.to_message_part())],
        )
        return store_message(session, self.broker, conversation, message)

    @staticmethod
    def call_message(call: ToolCall, asked: Message) -> ChatMessage:
        assert asked.id is not None
        return {"role": "assistant", "content": None, "tool_calls": [call.to_message_part()], "id": asked.id}

    def store_result(
        self, session: Session, conversation: Conversation, call: ToolCall, result: ToolResult
    ) -> ChatMessage:
        assert conversation.id is not None
        answered = store_message(
            session, self.broker, conversation, Message.tool_result(conversation.id, call.id, result.content)
        )
        assert answered.id is not None
        return {"role": "tool", "tool_call_id": call.id, "content": result.content, "id": answered.id}


def _confident_help_lookup(session: Session, text: str) -> list[Lookup]:
    # Only a confident best chunk is prefetched: a weak one would put a guess in front of the model.
    query = text[:HELP_QUERY_CHARS]
    if session.execute(sa_text("SELECT 1 FROM knowledge_chunks LIMIT 1")).first() is None:
        return []  # nothing imported: no reason to embed every message
    hits = search_knowledge(session, query, limit=1)
    if not hits or not is_confident(hits[0]):
        return []
    return [Lookup(HELP_TOOL, {"query": query, "limit": 1})]
