"""What a turn does before the model is called: answer what needs no model, and look up what the model will need.

``TurnPreparation.prepare`` runs once per turn, on the context rebuilt from the transcript, and only while the
customer's latest message has nothing after it (a recovered or repeated turn does not prefetch twice):

1. Replies are cut at the reply cap or by the repetition guard (``note_cut``): ``app.turns.context`` leaves
   them out of every later context.
2. An explicit request for a person (``app.turns.handoff_request``) hands off through the ``transfer_to_human`` tool,
   without an LLM call: the tool call and its result are stored like the model's own, the console shows the handoff
   note (an audit event), and the customer gets a clear message in their language.
3. Prefetch (``MEMDESK_PREFETCH``): when the message names one of the customer's own orders (``#W1234567``), or a
   verified customer asks about "my order" and has exactly one recent order, ``get_order`` runs through the tool
   registry; a help-centre question whose best article wins clearly gets ``search_help_articles``. Each lookup is
   stored and added to the context as a tool call and its result, so the model only has to phrase the answer: one
   LLM round trip less per question, with any model. The embedded demo model cannot even copy a tracking number
   reliably: for it, the reply is written from the lookups (``app.turns.fact_replies``) and no model is called.

Lookups only ever read (the registry's write tools need the customer's confirmation and are never prefetched).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
from sqlmodel import Session, col, select

from app.db import autocommit_step
from app.infra.metrics import Metrics
from app.live.broker import EventBroker
from app.live.messages import store_message
from app.llm.responses import ToolCall, fallback_call_id
from app.models import AuditEvent, Conversation, ConversationStatus, Customer, Message, MessageAuthor, MessageRole
from app.models import Order as ShopOrder
from app.settings import Settings
from app.tools import ToolContext, ToolRegistry, ToolResult
from app.tools.help_center import load_articles, search_articles
from app.turns.context import CUT_REPLY_ACTION
from app.turns.fact_replies import reply_from_lookups
from app.turns.handoff_request import Language, asks_for_person
from compression.messages import ChatMessage

ORDER_TOOL = "get_order"
HELP_TOOL = "search_help_articles"
HANDOFF_TOOL = "transfer_to_human"
MAX_PREFETCHED_ORDERS = 2
# "My order" means the one order a verified customer placed within this many days, and only when there is one.
RECENT_ORDER_DAYS = 30
# A help article is prefetched when its score (BM25 plus title/tag boosts, app.tools.help_center) is at least this
# and this many times the runner-up's: a clear winner, not a guess among several.
HELP_MIN_SCORE = 20.0
HELP_SCORE_MARGIN = 1.5
HELP_QUERY_CHARS = 300
HANDOFF_NOTE_QUOTE_CHARS = 300

# "#W2378156", "W2378156", "#2378156", "order 2378156": the demo shop's numbers (app.demo_shop.tools).
ORDER_REFERENCE = re.compile(
    r"(?<![\w#])#?\s?W\s?(\d{7})\b|(?<![\w#])#(\d{7})\b|\border\s*(?:number|no\.?|nr\.?|#)?\s*:?\s*(\d{7})\b",
    re.IGNORECASE,
)
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


@dataclass(frozen=True)
class Lookup:
    tool: str
    arguments: dict[str, Any]


def latest_customer_text(context: Sequence[ChatMessage]) -> str | None:
    """The customer's latest message when nothing follows it yet (no reply, no lookup), else None."""
    for message in reversed(context):
        if message.get("role") == "system":
            continue
        content = message.get("content")
        return content if message.get("role") == "user" and isinstance(content, str) else None
    return None


def _handed_off_last(context: Sequence[ChatMessage]) -> bool:
    """Whether the newest message is the handoff reply (stored by the "Talk to a person" button before this turn
    began): the turn has nothing to add. Any other reply last is a burst's first answer, and the turn goes on."""
    for message in reversed(context):
        if message.get("role") == "system":
            continue
        return message.get("role") == "assistant" and message.get("content") in HANDOFF_REPLIES.values()
    return False


def named_order_numbers(text: str) -> list[str]:
    """The demo shop's order numbers named in ``text``, in order, without repeats."""
    numbers = [f"#W{next(group for group in match.groups() if group)}" for match in ORDER_REFERENCE.finditer(text)]
    return list(dict.fromkeys(numbers))


class TurnPreparation:
    """See the module docstring. Messages it adds are stored and announced on ``broker``."""

    def __init__(self, *, tools: ToolRegistry, settings: Settings, metrics: Metrics, broker: EventBroker) -> None:
        self.tools = tools
        self.settings = settings
        self.metrics = metrics
        self.broker = broker

    async def prepare(
        self, session: Session, conversation: Conversation, customer: Customer, context: list[ChatMessage]
    ) -> Prepared:
        text = latest_customer_text(context)
        if text is None:
            return Prepared(context, answered=_handed_off_last(context))
        language = asks_for_person(text)
        if language is not None:
            summary = f"The customer asked to talk to a person: \u201c{text[:HANDOFF_NOTE_QUOTE_CHARS]}\u201d"
            if self.hand_off(session, conversation, customer, summary=summary, trigger="request", language=language):
                return Prepared(context, answered=True)
        prepared = Prepared(context)
        if not self.settings.prefetch:
            return prepared
        for lookup in self.plan(session, customer, text):
            await self._prefetch(session, conversation, customer, prepared, lookup)
        if prepared.results and self.settings.chat_model_is_embedded:
            reply = reply_from_lookups(prepared.results)
            if reply is not None:
                assert conversation.id is not None
                answer = Message(
                    conversation_id=conversation.id, role=MessageRole.ASSISTANT, author=MessageAuthor.BOT, content=reply
                )
                store_message(session, self.broker, conversation, answer)
                prepared.answered = True
        return prepared

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
    ) -> bool:
        """Hand the conversation to a person through the handoff tool; True once it waits for one (already did, or
        does now). False when the tool refused or is not registered: the model then takes the message."""
        if conversation.status != ConversationStatus.BOT:
            return conversation.status in (ConversationStatus.NEEDS_HUMAN, ConversationStatus.HUMAN)
        if self.tools.get(HANDOFF_TOOL) is None:
            return False
        arguments = {"summary": summary, "reason": f"customer asked for a person ({trigger})"}
        result, _ = self._run_tool(session, conversation, customer, Lookup(HANDOFF_TOOL, arguments), [])
        if not result.handed_off:
            return False
        assert conversation.id is not None
        reply = Message(
            conversation_id=conversation.id,
            role=MessageRole.ASSISTANT,
            author=MessageAuthor.BOT,
            content=HANDOFF_REPLIES[language],
        )
        store_message(session, self.broker, conversation, reply)
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
    def plan(self, session: Session, customer: Customer, text: str) -> list[Lookup]:
        """The read-only lookups the model will need for ``text``; see the module docstring."""
        assert customer.id is not None
        autocommit_step(session)
        lookups: list[Lookup] = []
        if self.tools.get(ORDER_TOOL) is not None:
            own = _own_order_numbers(session, customer.id, named_order_numbers(text))
            if not own and customer.external_id is not None and MY_ORDER.search(text):
                own = _single_recent_order(session, customer.id)
            lookups = [Lookup(ORDER_TOOL, {"order_number": number}) for number in own[:MAX_PREFETCHED_ORDERS]]
        if not lookups and self.tools.get(HELP_TOOL) is not None and not named_order_numbers(text):
            lookups = _confident_help_lookup(session, text)
        session.commit()
        return lookups

    async def _prefetch(
        self, session: Session, conversation: Conversation, customer: Customer, prepared: Prepared, lookup: Lookup
    ) -> None:
        result, messages = await anyio.to_thread.run_sync(
            self._run_tool, session, conversation, customer, lookup, prepared.context
        )
        prepared.context.extend(messages)
        prepared.results.append((lookup.tool, result.payload))
        self.metrics.prefetches.labels(tool=lookup.tool, outcome="ok" if result.ok else "error").inc()

    def _run_tool(
        self,
        session: Session,
        conversation: Conversation,
        customer: Customer,
        lookup: Lookup,
        context: Sequence[ChatMessage],
    ) -> tuple[ToolResult, list[ChatMessage]]:
        """Store a tool call as the bot's, run it through the registry, store its result; both as context messages."""
        assert conversation.id is not None and customer.id is not None
        call = ToolCall(id=fallback_call_id(), name=lookup.tool, arguments=json.dumps(lookup.arguments))
        part = call.to_message_part()
        asked = store_message(
            session,
            self.broker,
            conversation,
            Message(
                conversation_id=conversation.id,
                role=MessageRole.ASSISTANT,
                author=MessageAuthor.BOT,
                content=None,
                tool_calls=[dict(part)],
            ),
        )
        tool_context = ToolContext(
            session=session,
            customer_id=customer.id,
            conversation_id=conversation.id,
            messages=context,
            external_customer_id=customer.external_id,
        )
        result = self.tools.execute(call.name, call.arguments, tool_context)
        session.commit()
        answered = store_message(
            session, self.broker, conversation, Message.tool_result(conversation.id, call.id, result.content)
        )
        assert asked.id is not None and answered.id is not None
        messages: list[ChatMessage] = [
            {"role": "assistant", "content": None, "tool_calls": [part], "id": asked.id},
            {"role": "tool", "tool_call_id": call.id, "content": result.content, "id": answered.id},
        ]
        return result, messages

    # -- cut replies ---------------------------------------------------------------------------------------------
    def note_cut(self, session: Session, message: Message, reason: str) -> None:
        """Mark a stored reply as cut (the console and later turns read the mark) and count it."""
        assert message.id is not None
        session.add(
            AuditEvent(
                actor="bot",
                action=CUT_REPLY_ACTION,
                target_type="message",
                target_id=str(message.id),
                detail={"reason": reason, "conversation_id": message.conversation_id},
            )
        )
        session.commit()
        self.metrics.replies_cut.labels(reason=reason).inc()


def _own_order_numbers(session: Session, customer_id: int, numbers: Sequence[str]) -> list[str]:
    if not numbers:
        return []
    statement = select(ShopOrder.number).where(col(ShopOrder.number).in_(numbers), ShopOrder.customer_id == customer_id)
    own = set(session.exec(statement))
    return [number for number in numbers if number in own]


def _single_recent_order(session: Session, customer_id: int) -> list[str]:
    since = datetime.now(UTC) - timedelta(days=RECENT_ORDER_DAYS)
    conditions = (ShopOrder.customer_id == customer_id, col(ShopOrder.placed_at) >= since)
    # Two rows at most answer "exactly one?" in one query.
    numbers = list(session.exec(select(ShopOrder.number).where(*conditions).limit(2)))
    return numbers if len(numbers) == 1 else []


def _confident_help_lookup(session: Session, text: str) -> list[Lookup]:
    hits = search_articles(load_articles(session), text, limit=2)
    if not hits or hits[0].score < HELP_MIN_SCORE:
        return []
    if len(hits) > 1 and hits[0].score < HELP_SCORE_MARGIN * hits[1].score:
        return []
    return [Lookup(HELP_TOOL, {"query": text[:HELP_QUERY_CHARS], "limit": 1})]
