"""Build a customer's export (``app.privacy.document``) from their rows and memories.

Private staff notes and handover summaries go to the staff section only, never among the messages. Internal
integer ids stay out: conversations are named by their public reference, orders by their number, memories by what
they say, and audit details lose their ``…_id`` keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from app.customer_memory.ids import memory_customer_id
from app.models import (
    AuditEvent,
    Compaction,
    Conclusion,
    Conversation,
    ConversationStatus,
    Customer,
    HandoffSummary,
    Message,
    MessageAuthor,
    MessageRole,
    Order,
    OrderItem,
    OutboxStatus,
    Product,
    Refund,
    Shipment,
    StaffMember,
)
from app.models.base import utc_now
from app.models.outcomes import ConversationOutcome
from app.privacy import document
from app.privacy.erasure import audit_targets
from memory.conclusions import ConclusionKind, MemoryItem, MemoryStatus
from memory.store import CustomerMemory

OUTCOMES = {
    ConversationStatus.BOT: "answered by the assistant",
    ConversationStatus.NEEDS_HUMAN: "waiting for a member of staff",
    ConversationStatus.HUMAN: "handled by a member of staff",
    ConversationStatus.CLOSED: "closed",
}
KINDS = {
    ConclusionKind.PROMISE.value: "a promise made to you",
    ConclusionKind.DECISION.value: "a decision about your request",
    ConclusionKind.PREFERENCE.value: "your preference",
    ConclusionKind.FACT.value: "something about you",
}
STATUSES = {
    MemoryStatus.ACTIVE.value: "current",
    MemoryStatus.SUPERSEDED.value: "replaced by a newer version",
    MemoryStatus.EXPIRED.value: "expired: its date has passed",
}
CHANGES = {"ADD": "remembered", "UPDATE": "changed", "DELETE": "deleted"}
ACTIONS = {
    "order.cancel": "order cancelled",
    "refund.request": "refund requested",
    "order.change_address": "shipping address changed",
    "conversation.handoff": "conversation handed to a member of staff",
    "console.take_over": "a member of staff took the conversation over",
    "console.reply": "a member of staff replied",
    "console.note": "a member of staff wrote a private note (see staff_notes)",
    "console.hand_back": "conversation handed back to the assistant",
    "console.close": "conversation closed",
    "console.reopen": "conversation reopened",
    "console.assign": "conversation assigned to a member of staff",
    "console.handoff_summary": "a handover summary was written (see staff_notes)",
    "console.memory_add": "a member of staff added a memory",
    "console.memory_edit": "a member of staff corrected a memory",
    "console.memory_lock": "a member of staff confirmed a memory",
    "console.memory_delete": "a member of staff deleted a memory",
}
YOU = "you"
ASSISTANT = "the assistant"
STAFF = "a member of staff"
SHOP_SYSTEM = "the shop's system (a lookup the assistant made)"
DESK = "the support desk (automatic)"


def export_customer(session: Session, memory: CustomerMemory | None, customer: Customer) -> document.CustomerExport:
    """Everything memdesk holds about ``customer``, in words the customer reads."""
    assert customer.id is not None
    conversations = session.exec(
        select(Conversation).where(Conversation.customer_id == customer.id).order_by(col(Conversation.id))
    ).all()
    conversation_ids = [c.id for c in conversations if c.id is not None]
    references: dict[int | None, str] = {c.id: c.public_id for c in conversations}
    staff_names: dict[int | None, str] = {member.id: member.name for member in session.exec(select(StaffMember)).all()}
    messages = _messages(session, conversation_ids)
    memories = memory.export_customer(memory_customer_id(customer.id)) if memory else []
    orders = session.exec(select(Order).where(Order.customer_id == customer.id).order_by(col(Order.id))).all()
    return document.CustomerExport(
        generated_at=utc_now(),
        your_details=document.YourDetails(
            reference=customer.public_id,
            shop_customer_id=customer.external_id,
            name=customer.name,
            email=customer.email,
            phone=customer.phone,
            first_contact_at=customer.created_at,
        ),
        conversations=[_conversation(session, c, messages, staff_names) for c in conversations],
        memories=_memories(memories, references),
        conclusions_not_yet_remembered=_pending(session, customer.id, memories, references),
        orders=[_order(session, order) for order in orders],
        actions_on_your_account=_actions(session, customer.id, conversation_ids, [o.id for o in orders if o.id]),
        staff_notes=_staff_notes(session, messages, references, staff_names),
    )


def _messages(session: Session, conversation_ids: list[int]) -> list[Message]:
    if not conversation_ids:
        return []
    statement = select(Message).where(col(Message.conversation_id).in_(conversation_ids)).order_by(col(Message.id))
    return list(session.exec(statement).all())


def _sender(message: Message, staff_names: Mapping[int | None, str]) -> str:
    if message.role == MessageRole.TOOL:
        return SHOP_SYSTEM
    if message.author == MessageAuthor.CUSTOMER:
        return YOU
    if message.author == MessageAuthor.BOT:
        return ASSISTANT
    if message.author == MessageAuthor.STAFF:
        name = staff_names.get(message.staff_id)
        return f"{name} (support staff)" if name else STAFF
    return DESK


def _text(message: Message) -> str:
    if message.content:
        return message.content
    tools = [str((call.get("function") or {}).get("name")) for call in message.tool_calls or []]
    return f"(the assistant looked something up: {', '.join(tools)})" if tools else ""


def _conversation(
    session: Session, conversation: Conversation, messages: Sequence[Message], staff_names: Mapping[int | None, str]
) -> document.Conversation:
    own = [m for m in messages if m.conversation_id == conversation.id]
    sent = {m.id: m.created_at for m in own}
    compactions = session.exec(
        select(Compaction).where(Compaction.conversation_id == conversation.id).order_by(col(Compaction.id))
    ).all()
    return document.Conversation(
        reference=conversation.public_id,
        title=conversation.title,
        started_at=conversation.created_at,
        last_activity_at=conversation.updated_at,
        outcome=OUTCOMES.get(conversation.status, conversation.status.value),
        your_rating=_rating(session.get(ConversationOutcome, conversation.id)),
        messages=[
            document.ChatMessage(sent_at=m.created_at, sender=_sender(m, staff_names), text=_text(m))
            for m in own
            if not m.private and _text(m)
        ],
        summaries=[
            document.ConversationSummary(
                written_at=c.created_at,
                covers_from=sent.get(c.first_message_id),
                covers_until=sent.get(c.last_message_id),
                text=c.summary,
            )
            for c in compactions
        ],
    )


def _rating(outcome: ConversationOutcome | None) -> document.YourRating | None:
    if outcome is None or outcome.csat_score is None:
        return None
    return document.YourRating(score=outcome.csat_score, comment=outcome.csat_comment, rated_at=outcome.csat_at)


def _made_by(said_by: str | None) -> str | None:
    if said_by == "bot":
        return ASSISTANT
    return STAFF if said_by and said_by.startswith("staff:") else None


def _memories(items: Sequence[MemoryItem], references: Mapping[int | None, str]) -> list[document.Memory]:
    texts = {item.id: item.text for item in items}
    exported = []
    for item in sorted(items, key=lambda i: (i.created_at or "", i.text)):
        replaced_by = item.superseded_by
        exported.append(
            document.Memory(
                remembered=item.text,
                kind=KINDS.get(item.kind or "", item.kind or "a note"),
                status=STATUSES.get(item.status, item.status),
                due_date=item.due_date,
                made_by=_made_by(item.said_by),
                from_conversation=references.get(item.conversation_id),
                confirmed_by_a_person=item.locked,
                remembered_at=item.created_at,
                last_changed_at=item.updated_at,
                replaced_by=(texts.get(replaced_by) or "a newer version, since deleted") if replaced_by else None,
                replaced_at=item.metadata.get("superseded_at"),
                why_replaced=item.metadata.get("superseded_reason"),
                why_it_changed=item.change_reason,
                history=[_change(row) for row in item.history],
            )
        )
    return exported


def _change(row: Mapping[str, Any]) -> document.MemoryChange:
    event = str(row.get("event") or "")
    at = row.get("created_at") if event == "ADD" else row.get("updated_at") or row.get("created_at")
    return document.MemoryChange(
        at=str(at) if at else None,
        change=CHANGES.get(event, event.lower()),
        before=row.get("old_memory"),
        after=row.get("new_memory"),
    )


def _pending(
    session: Session, customer_id: int, memories: Sequence[MemoryItem], references: Mapping[int | None, str]
) -> list[document.PendingConclusion]:
    remembered = {item.id for item in memories}
    rows = session.exec(
        select(Conclusion).where(Conclusion.customer_id == customer_id).order_by(col(Conclusion.id))
    ).all()
    return [
        document.PendingConclusion(
            concluded=row.text,
            kind=KINDS.get(row.kind.value, row.kind.value),
            concluded_at=row.created_at,
            from_conversation=references.get(row.conversation_id),
            due_date=row.due_date,
        )
        for row in rows
        if row.status != OutboxStatus.DELIVERED or row.memory_id not in remembered
    ]


def money(cents: int, currency: str) -> str:
    return f"{Decimal(cents).scaleb(-2):.2f} {currency}"


def _label(value: str) -> str:
    return value.replace("_", " ")


def _order(session: Session, order: Order) -> document.Order:
    lines = session.execute(
        sa_select(col(Product.name), col(OrderItem.quantity), col(OrderItem.unit_price_cents))
        .join(Product, col(Product.id) == col(OrderItem.product_id))
        .where(col(OrderItem.order_id) == order.id)
        .order_by(col(OrderItem.id))
    ).all()
    shipments = session.exec(select(Shipment).where(Shipment.order_id == order.id).order_by(col(Shipment.id))).all()
    refunds = session.exec(select(Refund).where(Refund.order_id == order.id).order_by(col(Refund.id))).all()
    return document.Order(
        order_number=order.number,
        placed_at=order.placed_at,
        status=_label(order.status.value),
        total=money(order.total_cents, order.currency),
        shipping_address=document.ShippingAddress(
            name=order.shipping_name,
            line1=order.shipping_line1,
            line2=order.shipping_line2,
            city=order.shipping_city,
            region=order.shipping_region,
            postal_code=order.shipping_postal_code,
            country=order.shipping_country,
        ),
        items=[
            document.OrderLine(product=name, quantity=quantity, unit_price=money(price, order.currency))
            for name, quantity, price in lines
        ],
        shipments=[
            document.Shipment(
                carrier=s.carrier,
                tracking_number=s.tracking_number,
                status=_label(s.status.value),
                expected_delivery=s.eta,
                scans=[_scan(event) for event in s.events],
            )
            for s in shipments
        ],
        refunds=[
            document.Refund(
                requested_at=r.created_at,
                amount=money(r.amount_cents, order.currency),
                reason=r.reason,
                status=_label(r.status.value),
            )
            for r in refunds
        ],
    )


def _scan(event: Mapping[str, Any]) -> document.ShipmentScan:
    fields = {key: str(event[key]) if event.get(key) is not None else None for key in ("at", "location")}
    status = event.get("status")
    description = event.get("description")
    return document.ShipmentScan(
        **fields,
        status=_label(str(status)) if status is not None else None,
        description=str(description) if description is not None else None,
    )


def _actor(actor: str) -> str:
    if actor == "bot":
        return ASSISTANT
    if actor.startswith("staff:"):
        return STAFF
    return "an administrator" if actor in ("admin-api", "cli") else DESK


def _details(detail: Mapping[str, Any]) -> dict[str, Any]:
    """The audit detail without internal ids, amounts in money."""
    shown = {_label(key): value for key, value in detail.items() if key != "id" and not key.endswith("_id")}
    cents = shown.pop("amount cents", None)
    if isinstance(cents, int):
        shown["amount"] = money(cents, str(shown.pop("currency", "")) or "USD")
    return shown


def _actions(
    session: Session, customer_id: int, conversation_ids: list[int], order_ids: list[int]
) -> list[document.AccountAction]:
    events: list[AuditEvent] = []
    for condition in audit_targets(conversation_ids, order_ids, customer_id):
        events += session.exec(select(AuditEvent).where(condition)).all()
    return [
        document.AccountAction(
            at=event.created_at,
            action=ACTIONS.get(event.action, _label(event.action.replace(".", " "))),
            by=_actor(event.actor),
            details=_details(event.detail),
        )
        for event in sorted(events, key=lambda e: (e.created_at, e.id or 0))
    ]


def _staff_notes(
    session: Session,
    messages: Sequence[Message],
    references: Mapping[int | None, str],
    staff_names: Mapping[int | None, str],
) -> document.StaffNotes:
    notes = [
        document.StaffNote(
            conversation=references[m.conversation_id],
            written_at=m.created_at,
            written_by=staff_names.get(m.staff_id) or STAFF,
            text=m.content or "",
        )
        for m in messages
        if m.private
    ]
    summaries = []
    if references:
        statement = (
            select(HandoffSummary)
            .where(col(HandoffSummary.conversation_id).in_([key for key in references if key is not None]))
            .order_by(col(HandoffSummary.id))
        )
        for row in session.exec(statement).all():
            reader = staff_names.get(row.requested_by)
            summaries.append(
                document.StaffNote(
                    conversation=references[row.conversation_id],
                    written_at=row.created_at,
                    written_by=f"{ASSISTANT}, for {reader}" if reader else ASSISTANT,
                    text=row.summary,
                )
            )
    return document.StaffNotes(notes=notes, handover_summaries=summaries)
