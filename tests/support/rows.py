"""Rows most database tests start from (a customer and a conversation of theirs), and the outbox rows they read."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.models import Conclusion as ConclusionRow
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


def outbox_rows(db: Engine) -> list[ConclusionRow]:
    """Every row of the conclusions outbox, in the order they were queued."""
    with Session(db) as session:
        return list(session.exec(select(ConclusionRow).order_by(col(ConclusionRow.id))).all())
