"""Rows most database tests start from: a customer and a conversation of theirs."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from app.models import Conversation, Customer


def add_customer_conversation(session: Session, name: str = "Jane", **customer: Any) -> tuple[int, int]:
    """A new customer and a conversation of theirs, flushed (not committed); returns their ids."""
    row = Customer(name=name, **customer)
    session.add(row)
    session.flush()
    assert row.id is not None
    conversation = Conversation(customer_id=row.id)
    session.add(conversation)
    session.flush()
    assert conversation.id is not None
    return row.id, conversation.id
