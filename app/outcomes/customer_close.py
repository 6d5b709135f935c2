"""The customer's own close ("That's all, thanks" in the widget), recorded as a staff close or an idle close is:
the conversation's status, an audit event naming the customer, and the outcome (``record_close``), in one
transaction. The widget then asks for a rating as it does after any close.
"""

from __future__ import annotations

from sqlalchemy import update
from sqlmodel import Session, col

from app.console.audit import record_audit_event
from app.models import Conversation, ConversationStatus, utc_now
from app.outcomes.recording import record_close

CUSTOMER_CLOSE_ACTION = "conversation.customer_close"


def close_by_customer(session: Session, conversation: Conversation, customer_public_id: str) -> bool:
    """Close ``conversation`` as its customer; False when its status changed since it was read (closed meanwhile,
    or handed to a person), so the resolution is never decided from a status it no longer has."""
    assert conversation.id is not None
    previous = conversation.status
    changed = session.execute(
        update(Conversation)
        .where(col(Conversation.id) == conversation.id, col(Conversation.status) == previous)
        .where(col(Conversation.status) != ConversationStatus.CLOSED)
        .values(status=ConversationStatus.CLOSED, updated_at=utc_now())
    )
    if not changed.rowcount:  # type: ignore[attr-defined]
        session.rollback()
        return False
    record_audit_event(
        session,
        actor=f"customer:{customer_public_id}",
        action=CUSTOMER_CLOSE_ACTION,
        target_type="conversation",
        target_id=conversation.id,
        detail={"previous_status": previous.value},
    )
    record_close(session, conversation.id, previous)
    session.commit()
    return True
