"""Erasure: delete everything memdesk holds about a customer, down to the bytes on disk.

Covers the relational rows (customer, conversations with every message, compactions and segments, outbox
conclusions, orders with items, shipments and refunds, audit events about them) and long-term memory (Mem0's
memories and its own history rows). Erasure leaves one audit event that says an erasure happened, without any of
the erased data. A running server also drops what it holds in memory about the erased conversations (see
``app.web.admin_api``).

On SQLite the erased text also leaves the files: every connection deletes securely (zeroed pages, ``app.db``), the
full-text index is rewritten without it, and the write-ahead logs of the database and of the memory store are
emptied into their files (``truncate_wal``, ``CustomerMemory.truncate_wal``). On PostgreSQL the rows are deleted;
their bytes stay in the table files and the WAL until PostgreSQL reuses the space (see the README).

A customer is named by their public id or the shop's external id (``find_customer``); the command line may also use
the internal integer id.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import Engine, delete
from sqlmodel import Session, col, select

from app.console.audit import record_audit_event
from app.customer_memory.ids import memory_customer_id
from app.db import truncate_wal
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
from app.ratelimit import customer_rate_key
from app.tools.conversation_search import purge_deleted_text
from app.web.input import parse_database_int
from memory.store import CustomerMemory

logger = logging.getLogger(__name__)


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


def audit_targets(conversation_ids: list[int], order_ids: list[int], customer_id: int) -> list[Any]:
    pairs = [("customer", [customer_id]), ("conversation", conversation_ids), ("order", order_ids)]
    return [
        (col(AuditEvent.target_type) == kind) & col(AuditEvent.target_id).in_([str(i) for i in ids])
        for kind, ids in pairs
        if ids
    ]


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
    for condition in audit_targets(conversation_ids, order_ids, customer_id):
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
    bind = session.get_bind()
    if not truncate_wal(bind if isinstance(bind, Engine) else bind.engine):
        logger.warning(
            "Another connection was reading the database during an erasure: the erased text stays in its "
            "write-ahead log until the next checkpoint."
        )
    return Erasure(counts=counts, conversation_ids=conversation_ids)


class _ForgetsConversations(Protocol):
    def forget(self, conversation_ids: list[int]) -> None: ...


class _ForgetsConversationState(Protocol):
    def forget_conversations(self, conversation_ids: list[int]) -> None: ...


class _ForgetsKey(Protocol):
    def forget(self, key: str) -> None: ...


def forget_erased(
    erasure: Erasure,
    customer_public_id: str,
    *,
    broker: _ForgetsConversations,
    turns: _ForgetsConversationState,
    limiter: _ForgetsKey,
) -> None:
    """After ``erase_customer`` committed: drop what this server process still holds about the erased customer
    (the conversations' event history and streams, their turn state, the message rate window), so nothing of them
    outlives the erasure in memory."""
    broker.forget(erasure.conversation_ids)
    turns.forget_conversations(erasure.conversation_ids)
    limiter.forget(customer_rate_key(customer_public_id))


def _delete(session: Session, statement: Any) -> int:
    result = session.exec(statement)
    return int(getattr(result, "rowcount", 0) or 0)
