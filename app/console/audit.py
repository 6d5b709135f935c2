"""Recording audit events for actions with consequences (see ``app.models.console.AuditEvent``)."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from app.models import AuditEvent


def record_audit_event(
    session: Session, *, actor: str, action: str, target_type: str, target_id: str | int, detail: dict[str, Any]
) -> AuditEvent:
    """Add an audit event to the session; it is committed together with the action it describes."""
    event = AuditEvent(actor=actor, action=action, target_type=target_type, target_id=str(target_id), detail=detail)
    session.add(event)
    return event
