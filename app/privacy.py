"""A customer's right to their data: export everything memdesk holds about them, or erase it.

Covers the relational rows (customer, conversations with every message, compactions and segments, outbox
conclusions, orders with items, shipments and refunds, audit events about them) and long-term memory (Mem0's
memories and its own history rows). Erasure leaves one audit event that says an erasure happened, without any of
the erased data. A running server also drops what it holds in memory about the erased conversations (see
``app.web.admin_api``).

A customer is named by their public id or the shop's external id (``find_customer``); the command line may also use
the internal integer id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete
from sqlmodel import Session, col, select

from app.console.audit import record_audit_event
from app.customer_memory.ids import memory_customer_id
from app.models import (
    AuditEvent,
    Compaction,
    Conclusion,
    ContextSegment,
    Conversation,
    Customer,
    Message,
    Order,
    OrderItem,
    Refund,
    Shipment,
)
from app.tools.conversation_search import purge_deleted_text
from app.web.input import parse_database_int
from memory.store import CustomerMemory


class CustomerNotFoundError(LookupError):
    pass


@dataclass
class Erasure:
    """What an erasure removed: rows and memories per kind, and the conversations whose live state must go too."""

    counts: dict[str, int]
    conversation_ids: list[int] = field(default_factory=list)


def find_customer(session: Session, reference: str, *, allow_internal_id: bool = False) -> Customer:
    """The customer with this public id or shop external id (or internal id, when allowed)."""
    for column in (Customer.public_id, Customer.external_id):
        found = session.exec(select(Customer).where(column == reference)).first()
        if found is not None:
            return found
    if allow_internal_id and (key := _internal_id(reference)) is not None:
        by_id = session.get(Customer, key)
        if by_id is not None:
            return by_id
    raise CustomerNotFoundError(f"No customer {reference!r}: give their public id (cus_…) or the shop's customer id.")


def _internal_id(reference: str) -> int | None:
    try:
        return parse_database_int(reference)
    except ValueError:
        return None  # not an internal id: the reference was a public or shop id that matched nobody


def _rows(session: Session, model: Any, column: Any, ids: list[int]) -> list[dict[str, Any]]:
    if not ids:
        return []
    found = session.exec(select(model).where(col(column).in_(ids)).order_by(col(model.id))).all()
    return [row.model_dump(mode="json") for row in found]


def _audit_targets(conversation_ids: list[int], order_ids: list[int], customer_id: int) -> list[Any]:
    pairs = [("customer", [customer_id]), ("conversation", conversation_ids), ("order", order_ids)]
    return [
        (col(AuditEvent.target_type) == kind) & col(AuditEvent.target_id).in_([str(i) for i in ids])
        for kind, ids in pairs
        if ids
    ]


def export_customer(session: Session, memory: CustomerMemory | None, customer: Customer) -> dict[str, Any]:
    assert customer.id is not None
    customer_id = customer.id
    conversations = session.exec(select(Conversation).where(Conversation.customer_id == customer_id)).all()
    conversation_ids = [c.id for c in conversations if c.id is not None]
    orders = session.exec(select(Order).where(Order.customer_id == customer_id)).all()
    order_ids = [o.id for o in orders if o.id is not None]
    audit = []
    for condition in _audit_targets(conversation_ids, order_ids, customer_id):
        audit += [event.model_dump(mode="json") for event in session.exec(select(AuditEvent).where(condition)).all()]
    return {
        "customer": customer.model_dump(mode="json"),
        "conversations": [c.model_dump(mode="json") for c in conversations],
        "messages": _rows(session, Message, Message.conversation_id, conversation_ids),
        "context_segments": _rows(session, ContextSegment, ContextSegment.conversation_id, conversation_ids),
        "compactions": _rows(session, Compaction, Compaction.conversation_id, conversation_ids),
        "conclusions": _rows(session, Conclusion, Conclusion.customer_id, [customer_id]),
        "orders": [o.model_dump(mode="json") for o in orders],
        "order_items": _rows(session, OrderItem, OrderItem.order_id, order_ids),
        "shipments": _rows(session, Shipment, Shipment.order_id, order_ids),
        "refunds": _rows(session, Refund, Refund.order_id, order_ids),
        "audit_events": audit,
        "memories": (
            [item.to_dict() for item in memory.export_customer(memory_customer_id(customer_id))] if memory else []
        ),
    }


def erase_customer(session: Session, memory: CustomerMemory | None, customer: Customer, *, actor: str) -> Erasure:
    """Delete everything about the customer; returns how many rows and memories went. Memories go first, so a
    failure there leaves the database untouched and the erasure can simply be run again."""
    assert customer.id is not None
    customer_id = customer.id
    memories = memory.forget_customer(memory_customer_id(customer_id)) if memory else 0
    conversation_ids = [
        c for c in session.exec(select(Conversation.id).where(Conversation.customer_id == customer_id)).all() if c
    ]
    order_ids = [o for o in session.exec(select(Order.id).where(Order.customer_id == customer_id)).all() if o]
    counts = {"memories": memories}
    for condition in _audit_targets(conversation_ids, order_ids, customer_id):
        counts["audit_events"] = counts.get("audit_events", 0) + _delete(session, delete(AuditEvent).where(condition))
    if conversation_ids:
        in_conversations = col(Message.conversation_id).in_(conversation_ids)
        # Compactions and conclusions point at messages: remove them before the messages themselves.
        counts["compactions"] = _delete(
            session, delete(Compaction).where(col(Compaction.conversation_id).in_(conversation_ids))
        )
        counts["conclusions"] = _delete(session, delete(Conclusion).where(col(Conclusion.customer_id) == customer_id))
        counts["context_segments"] = _delete(
            session, delete(ContextSegment).where(col(ContextSegment.conversation_id).in_(conversation_ids))
        )
        counts["messages"] = _delete(session, delete(Message).where(in_conversations))
        purge_deleted_text(session)
        counts["conversations"] = _delete(
            session, delete(Conversation).where(col(Conversation.id).in_(conversation_ids))
        )
    else:
        counts["conclusions"] = _delete(session, delete(Conclusion).where(col(Conclusion.customer_id) == customer_id))
    if order_ids:
        for model in (OrderItem, Shipment, Refund):
            counts[model.__tablename__] = _delete(session, delete(model).where(col(model.order_id).in_(order_ids)))
        counts["orders"] = _delete(session, delete(Order).where(col(Order.id).in_(order_ids)))
    session.delete(customer)
    counts["customers"] = 1
    record_audit_event(
        session, actor=actor, action="customer.erased", target_type="customer", target_id=customer_id, detail={}
    )
    session.commit()
    return Erasure(counts=counts, conversation_ids=conversation_ids)


def _delete(session: Session, statement: Any) -> int:
    result = session.exec(statement)
    return int(getattr(result, "rowcount", 0) or 0)
