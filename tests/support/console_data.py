"""Conversations as the console finds them after a long day, written straight to the database: customer turns,
tool calls with their results, replies, compactions over message ranges with their key decisions in the outbox.

Used by the console tests, the browser tests' screenshots and ``benchmarks/console.py``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import date, timedelta

from sqlmodel import Session

from app.models import (
    Compaction,
    Conclusion,
    ConclusionKind,
    ConclusionSource,
    ContextSegment,
    Conversation,
    ConversationStatus,
    Customer,
    Message,
    MessageAuthor,
    MessageRole,
    OutboxStatus,
    SegmentReason,
    utc_now,
)

CHAT_MODEL = "scripted-chat"
SUMMARY_MODEL = "scripted-summary"
# One exchange: customer asks, the bot looks the order up, the tool answers, the bot replies.
MESSAGES_PER_EXCHANGE = 4


@dataclass
class SeededConversation:
    conversation_id: int
    public_id: str
    customer_public_id: str
    message_ids: list[int] = field(default_factory=list)
    compaction_ids: list[int] = field(default_factory=list)


def _exchange(conversation_id: int, number: int, order: str) -> list[Message]:
    call_id = f"call_{conversation_id}_{number}"
    arguments = json.dumps({"order_number": order})
    result = json.dumps({"order": {"number": order, "status": "shipped", "carrier": "UPS"}})
    return [
        Message(
            conversation_id=conversation_id,
            role=MessageRole.USER,
            author=MessageAuthor.CUSTOMER,
            content=f"Question {number}: where is my order {order}? It was due last week.",
        ),
        Message(
            conversation_id=conversation_id,
            role=MessageRole.ASSISTANT,
            author=MessageAuthor.BOT,
            content="",
            tool_calls=[{"id": call_id, "type": "function", "function": {"name": "get_order", "arguments": arguments}}],
        ),
        Message(
            conversation_id=conversation_id,
            role=MessageRole.TOOL,
            author=MessageAuthor.BOT,
            tool_call_id=call_id,
            content=result,
        ),
        Message(
            conversation_id=conversation_id,
            role=MessageRole.ASSISTANT,
            author=MessageAuthor.BOT,
            content=f"Your order **{order}** has shipped with UPS (answer {number}).",
            prompt_tokens=900 + number,
            completion_tokens=40,
        ),
    ]


def seed_conversation(
    session: Session,
    *,
    messages: int = 40,
    compactions: int = 1,
    customer_name: str | None = "Jane Doe",
    status: ConversationStatus = ConversationStatus.NEEDS_HUMAN,
    order: str = "#W2378156",
) -> SeededConversation:
    """A conversation of about ``messages`` messages with ``compactions`` compactions spread over its first half,
    each with one delivered promise and, for the last one, a failed decision."""
    customer = Customer(name=customer_name, email="jane@example.com" if customer_name else None)
    session.add(customer)
    session.flush()
    assert customer.id is not None
    conversation = Conversation(customer_id=customer.id, status=status)
    session.add(conversation)
    session.flush()
    assert conversation.id is not None
    rows = [m for number in range(max(1, messages // MESSAGES_PER_EXCHANGE)) for m in
            _exchange(conversation.id, number, order)]  # fmt: skip
    session.add_all(rows)
    session.flush()
    seeded = SeededConversation(conversation.id, conversation.public_id, customer.public_id)
    seeded.message_ids = [m.id for m in rows if m.id is not None]
    _compactions(session, seeded, customer.id, compactions, order)
    session.commit()
    return seeded


def _compactions(session: Session, seeded: SeededConversation, customer_id: int, count: int, order: str) -> None:
    if count <= 0:
        return
    span = max(MESSAGES_PER_EXCHANGE, (len(seeded.message_ids) // 2) // count)
    for number in range(count):
        first = seeded.message_ids[0]
        last = seeded.message_ids[min(len(seeded.message_ids) - 1, (number + 1) * span - 1)]
        segment = ContextSegment(
            conversation_id=seeded.conversation_id,
            reason=SegmentReason.COMPRESSION,
            number=number + 2,
            title=f"Segment {number + 2} (compression)",
            first_message_id=last,
        )
        session.add(segment)
        session.flush()
        assert segment.id is not None
        due = date(2026, 12, 2) + timedelta(days=number)
        promise = f"Refund of $42.10 for order {order} by {due.isoformat()}."
        compaction = Compaction(
            conversation_id=seeded.conversation_id,
            segment_id=segment.id,
            first_message_id=first,
            last_message_id=last,
            summary=(
                f"## Customer Goal\n- Find out where order {order} is.\n## Actions Taken\n- Looked up {order}: "
                f"shipped with UPS.\n## Promises & Commitments\n- {promise}\n"
            ),
            summary_model=SUMMARY_MODEL,
            main_model=CHAT_MODEL,
            tokens_before=6_000 + 500 * number,
            tokens_after=1_200,
            summary_prompt_tokens=4_000,
            summary_completion_tokens=300,
            cost_usd=0.0012,
        )
        session.add(compaction)
        session.flush()
        assert compaction.id is not None
        seeded.compaction_ids.append(compaction.id)
        decisions = [(ConclusionKind.PROMISE, promise, OutboxStatus.DELIVERED)]
        if number == count - 1:
            decisions.append((ConclusionKind.DECISION, f"Escalate {order} to the carrier.", OutboxStatus.FAILED))
        for kind, text, state in decisions:
            session.add(
                Conclusion(
                    customer_id=customer_id,
                    conversation_id=seeded.conversation_id,
                    kind=kind,
                    text=text,
                    due_date=due if kind == ConclusionKind.PROMISE else None,
                    identifiers=[order],
                    source=ConclusionSource.COMPACTION,
                    source_message_first_id=first,
                    source_message_last_id=last,
                    content_hash=hashlib.sha256(f"{seeded.conversation_id}:{text}".encode()).hexdigest(),
                    status=state,
                    attempts=1 if state == OutboxStatus.DELIVERED else 5,
                    memory_id=f"mem-{seeded.conversation_id}-{number}" if state == OutboxStatus.DELIVERED else None,
                    last_error="memory store timed out" if state == OutboxStatus.FAILED else None,
                    delivered_at=utc_now() if state == OutboxStatus.DELIVERED else None,
                )
            )
