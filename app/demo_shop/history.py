"""Earlier conversations for two demo customers, so a newcomer sees memory and compaction at work on day one.

``seed_history`` gives ``demo-cust-0001`` two closed conversations and ``demo-cust-0002`` one, each a scripted
support exchange about the customer's real seeded orders, with the order lookups run through the real tool registry
(so the transcript holds real tool calls and results). Each conversation is then compacted for real: the
``ContextCompressor`` runs over it with no summary model, so its deterministic fallback writes the notes, and the
overlay and the new segment are stored as a live turn would store them. The conclusions of each conversation (what
was decided, promised and learned, which a summary model would extract) are keyed as the summary model's items are
(P1, D1, C1), listed in the notes' Key Decisions, Promises & Commitments and Customer Preferences sections, and go to
the conclusions outbox in the same transaction; ``deliver_history`` then delivers the outbox to long-term memory,
the way the server does.

It is idempotent: a customer who already has a seeded conversation (``HISTORY_TITLE_PREFIX``) is skipped. Promise
due dates are counted from today, not from the demo's base date, so they are still open when the demo is tried.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import cast

from sqlmodel import Session, col, func, select

from app.customer_memory.outbox import enqueue_key_decisions
from app.demo_shop.tools import GetOrderTool
from app.llm.responses import ToolCall
from app.models import Conversation, ConversationStatus, Customer, Message, MessageAuthor, MessageRole, Order
from app.models import OrderStatus as Status
from app.tools import ToolContext, ToolRegistry
from app.turns.context import load_context, record_compaction, start_first_segment
from compression import ContextCompressor
from compression.decisions import DECISION_SECTIONS, KEY_PREFIX, render_item
from compression.sections import replace_section_items
from compression.types import KeyDecision, KeyDecisionKind

HISTORY_TITLE_PREFIX = "Earlier conversation"
# The window the history is compacted for: a small model's, so a short scripted conversation outgrows it.
HISTORY_CONTEXT_LENGTH = 2_048
HISTORY_SYSTEM_PROMPT = "You are the customer-support assistant of the demo shop."
PROMISE_DUE_DAYS = 2
# Filler that makes each customer turn read like a real, rambling message (and gives the compressor work).
DETAIL = (
    "I have been a customer for a while and I usually have no complaints, so I want to explain exactly what happened, "
    "when it happened and what I already tried before writing to you, so that nobody has to ask me twice. I checked "
    "the order confirmation, the delivery notice and the packing slip, and I kept the box and all the packaging in "
    "case you need photos or want the carrier to collect it. I am writing from my phone during my lunch break, so "
    "sorry if this message is a bit long and not very well organised; I just want to get this sorted out quickly."
)


@dataclass(frozen=True)
class ScriptedConversation:
    customer: str
    title: str
    days_ago: int
    order_status: Status
    turns: tuple[tuple[str, str], ...]  # (customer, bot); "{order}" is the order's number
    conclusions: tuple[tuple[str, str, int | None], ...]  # (kind, text, promise due in days)


CONVERSATIONS: tuple[ScriptedConversation, ...] = (
    ScriptedConversation(
        customer="demo-cust-0001",
        title="cracked lid",
        days_ago=12,
        order_status=Status.DELIVERED,
        turns=(
            ("Hello, an item in order {order} arrived with a cracked lid.", "I'm sorry to hear that. Let me look."),
            ("It is the glass lid, there is a crack all along the rim.", "Thank you, that helps me a lot."),
            ("Can you send a new lid instead of a refund for the whole kettle?", "Yes, a replacement lid it is."),
            ("Please text me rather than email, I rarely read my inbox.", "Noted: we will text you from now on."),
            ("When will the lid arrive?", "It ships from our warehouse within two business days."),
            ("Thanks, that is all for now.", "You're welcome, Maya. Have a nice day!"),
        ),
        conclusions=(
            ("promise", "Ship a replacement glass lid for order {order} at no cost", PROMISE_DUE_DAYS),
            ("decision", "Replacement lid instead of a refund for the cracked lid (order {order})", None),
            ("preference", "Prefers text messages (SMS) to email for updates", None),
        ),
    ),
    ScriptedConversation(
        customer="demo-cust-0001",
        title="late parcel",
        days_ago=3,
        order_status=Status.SHIPPED,
        turns=(
            ("My parcel for order {order} has not moved for two days.", "Let me check the carrier's scans."),
            ("I need it before the weekend, it is a birthday present.", "I understand, I'll keep an eye on it."),
            ("Can you call the carrier for me?", "I've asked the carrier to look into it."),
            ("Please leave it with my neighbour at number 12 if I'm out.", "Noted: the neighbour at number 12."),
            ("OK, I will wait for your message.", "I'll write back as soon as I hear from the carrier."),
        ),
        conclusions=(
            ("promise", "Write back to the customer with the carrier's answer about order {order}", PROMISE_DUE_DAYS),
            ("preference", "If out, parcels may be left with the neighbour at number 12", None),
        ),
    ),
    ScriptedConversation(
        customer="demo-cust-0002",
        title="gift wrapping",
        days_ago=8,
        order_status=Status.DELIVERED,
        turns=(
            ("Hi, order {order} was a gift but it came with the invoice inside.", "Sorry about that. Let me look."),
            ("The price was visible to the person I gave it to.", "I understand, that is embarrassing."),
            ("In future, please never put the invoice in the box.", "Noted: no invoice in the box from now on."),
            ("Also I prefer deliveries on weekdays, I work from home then.", "Noted: weekday deliveries."),
            ("Thank you.", "Thank you for telling us, and sorry again."),
        ),
        conclusions=(
            ("decision", "Send invoices by email only, never inside the parcel, for this customer", None),
            ("preference", "Prefers weekday deliveries (works from home on weekdays)", None),
        ),
    ),
)


@dataclass(frozen=True)
class HistoryReport:
    conversations: int = 0
    compactions: int = 0
    conclusions: int = 0

    def describe(self) -> str:
        if not self.conversations:
            return "The demo customers already have their earlier conversations; nothing was added."
        return (
            f"Gave demo customers {self.conversations} earlier conversations: {self.compactions} compacted, "
            f"{self.conclusions} conclusions queued for long-term memory."
        )


def seed_history(session: Session, *, today: date | None = None) -> HistoryReport:
    """Add the scripted earlier conversations that are missing (see the module docstring) and commit."""
    today = today or datetime.now(UTC).date()
    registry = ToolRegistry([GetOrderTool()])
    counts = [0, 0, 0]
    for script in CONVERSATIONS:
        customer = session.exec(select(Customer).where(Customer.external_id == script.customer)).first()
        if customer is None or customer.id is None or _has_history(session, customer.id, script.title):
            continue
        order = _latest_order(session, customer.id, script.order_status)
        if order is None:
            continue
        compacted, queued = _seed_conversation(session, registry, customer, order, script, today)
        counts = [counts[0] + 1, counts[1] + int(compacted), counts[2] + queued]
    session.commit()
    return HistoryReport(*counts)


def _has_history(session: Session, customer_id: int, title: str) -> bool:
    statement = select(Conversation.id).where(
        Conversation.customer_id == customer_id, Conversation.title == f"{HISTORY_TITLE_PREFIX}: {title}"
    )
    return session.exec(statement).first() is not None


def _latest_order(session: Session, customer_id: int, status: Status) -> Order | None:
    statement = select(Order).where(Order.customer_id == customer_id, Order.status == status)
    return session.exec(statement.order_by(col(Order.placed_at).desc())).first()


def _seed_conversation(
    session: Session,
    registry: ToolRegistry,
    customer: Customer,
    order: Order,
    script: ScriptedConversation,
    today: date,
) -> tuple[bool, int]:
    assert customer.id is not None
    started = datetime.now(UTC) - timedelta(days=script.days_ago)
    conversation = Conversation(
        customer_id=customer.id,
        title=f"{HISTORY_TITLE_PREFIX}: {script.title}",
        status=ConversationStatus.CLOSED,
        created_at=started,
        updated_at=started,
    )
    session.add(conversation)
    session.flush()
    assert conversation.id is not None
    start_first_segment(session, conversation)
    _write_transcript(session, registry, conversation, customer, order, script, started)
    session.flush()
    context = load_context(session, conversation.id, HISTORY_SYSTEM_PROMPT)
    compressor = ContextCompressor(model="demo-history", context_length=HISTORY_CONTEXT_LENGTH)
    result = compressor.compress(list(context))
    decisions = _key_decisions(script, order, today)
    if result.summary is not None:
        result.summary = _with_decisions(result.summary, decisions)
    compaction = record_compaction(
        session, conversation_id=conversation.id, context=context, result=result, main_model="demo-history",
        cost_usd=None,
    )  # fmt: skip
    if compaction is None:
        return False, 0
    queued = enqueue_key_decisions(
        session,
        customer_id=customer.id,
        conversation_id=conversation.id,
        decisions=decisions,
        message_range=(compaction.first_message_id, compaction.last_message_id),
    )
    # Its conclusions are the scripted ones above: the conclusion sync has nothing left to find in it.
    last_message = session.exec(select(func.max(Message.id)).where(Message.conversation_id == conversation.id)).one()
    conversation.synced_through_message_id = last_message
    session.add(conversation)
    return True, len(queued)


def _key_decisions(script: ScriptedConversation, order: Order, today: date) -> list[KeyDecision]:
    """The script's conclusions as the summary model's notes would key them (P1, D1, C1, ...)."""
    counts: Counter[str] = Counter()
    decisions = []
    for kind, text, due in script.conclusions:
        decision_kind = cast(KeyDecisionKind, kind)
        counts[decision_kind] += 1
        decisions.append(
            KeyDecision(
                kind=decision_kind,
                text=text.format(order=order.number),
                due_date=today + timedelta(days=due) if due is not None else None,
                identifiers=(order.number,),
                key=f"{KEY_PREFIX[decision_kind]}{counts[decision_kind]}",
            )
        )
    return decisions


def _with_decisions(summary: str, decisions: list[KeyDecision]) -> str:
    """The fallback notes know nothing of the scripted conclusions: list each in its section, as the summary model
    writes them, so the notes the bot reads and the key decisions of the compaction agree."""
    for title, kind in DECISION_SECTIONS.items():
        items = [render_item(decision) for decision in decisions if decision.kind == kind]
        summary = replace_section_items(summary, title, items)
    return summary


def _write_transcript(
    session: Session,
    registry: ToolRegistry,
    conversation: Conversation,
    customer: Customer,
    order: Order,
    script: ScriptedConversation,
    started: datetime,
) -> None:
    assert conversation.id is not None and customer.id is not None
    times = (started + timedelta(minutes=minute) for minute in range(1, 1_000))

    def add(
        role: MessageRole,
        author: MessageAuthor,
        content: str | None,
        *,
        tool_calls: list[dict[str, object]] | None = None,
        tool_call_id: str | None = None,
    ) -> None:
        assert conversation.id is not None
        message = Message(
            conversation_id=conversation.id,
            role=role,
            author=author,
            content=content,
            tool_calls=tool_calls,
            tool_call_id=tool_call_id,
            created_at=next(times),
        )
        session.add(message)

    for number, (said, answered) in enumerate(script.turns):
        add(MessageRole.USER, MessageAuthor.CUSTOMER, f"{said.format(order=order.number)} {DETAIL}")
        if number == 0:
            call = ToolCall(
                id=f"call_history_{conversation.id}",
                name="get_order",
                arguments=json.dumps({"order_number": order.number}),
            )
            add(MessageRole.ASSISTANT, MessageAuthor.BOT, None, tool_calls=[dict(call.to_message_part())])
            tool_context = ToolContext(session=session, customer_id=customer.id, conversation_id=conversation.id)
            result = registry.execute(call.name, call.arguments, tool_context)
            add(MessageRole.TOOL, MessageAuthor.SYSTEM, result.content, tool_call_id=call.id)
        add(MessageRole.ASSISTANT, MessageAuthor.BOT, answered.format(order=order.number))
