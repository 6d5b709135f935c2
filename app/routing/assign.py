"""Who gets a conversation that needs a person, when routing is on.

A member's load is their open conversations with a person (``needs_human`` or ``human``, assigned to them). A
handoff goes to the online member with room (load below capacity) who was given one longest ago: a round robin that
skips the full and the absent. With nobody free it stays unassigned, in the queue; the queue is served oldest
first whenever a slot frees (a conversation closed or handed back, a member coming online or given more capacity).

Every function works in the caller's transaction and leaves the commit to it. On PostgreSQL the chosen member's
row is locked (``FOR UPDATE``), so two workers routing at once cannot both fill a member's last slot; SQLite has
one writer at a time anyway.
"""

from __future__ import annotations

from sqlalchemy import func, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from app.console.audit import record_audit_event
from app.live.broker import EventBroker
from app.models import Availability, Conversation, ConversationStatus, StaffMember, utc_now
from app.routing.settings import routing_enabled

WITH_A_PERSON = (ConversationStatus.NEEDS_HUMAN, ConversationStatus.HUMAN)


def load_of(session: Session, staff_id: int) -> int:
    found = session.execute(
        sa_select(func.count()).where(
            col(Conversation.assigned_staff_id) == staff_id, col(Conversation.status).in_(WITH_A_PERSON)
        )
    ).scalar_one()
    return int(found)


def _free_members(session: Session) -> list[StaffMember]:
    """Online members with room, the longest since they were given one first (never given one: first of all)."""
    load = (
        sa_select(func.count())
        .where(
            col(Conversation.assigned_staff_id) == col(StaffMember.id),
            col(Conversation.status).in_(WITH_A_PERSON),
        )
        .correlate(StaffMember)
        .scalar_subquery()
    )
    statement = (
        sa_select(StaffMember)
        .where(
            col(StaffMember.active).is_(True),
            col(StaffMember.availability) == Availability.ONLINE,
            load < col(StaffMember.capacity),
        )
        .order_by(col(StaffMember.last_routed_at).is_not(None), col(StaffMember.last_routed_at), col(StaffMember.id))
    )
    if session.get_bind().dialect.name == "postgresql":
        statement = statement.with_for_update(skip_locked=True, of=StaffMember)
    return list(session.execute(statement).scalars().all())


def _give(session: Session, conversation_id: int, member: StaffMember) -> None:
    session.execute(
        update(Conversation)
        .where(col(Conversation.id) == conversation_id)
        .values(assigned_staff_id=member.id, updated_at=utc_now())
    )
    member.last_routed_at = utc_now()
    session.add(member)


def route(session: Session, conversation_id: int) -> int | None:
    """Give a conversation that just came to need a person to a free member (audited); their id, or None (routing
    off, or nobody free: it waits in the queue)."""
    if not routing_enabled(session):
        return None
    free = _free_members(session)
    if not free:
        return None
    _give(session, conversation_id, free[0])
    record_audit_event(
        session,
        actor=ROUTING_ACTOR,
        action="routing.assign",
        target_type="conversation",
        target_id=conversation_id,
        detail={"staff_id": free[0].id, "from": "handoff"},
    )
    return free[0].id


def queue(session: Session, limit: int = 100) -> list[int]:
    """The conversations waiting for a person that nobody has, oldest first."""
    rows = session.execute(
        sa_select(col(Conversation.id))
        .where(
            col(Conversation.status) == ConversationStatus.NEEDS_HUMAN, col(Conversation.assigned_staff_id).is_(None)
        )
        .order_by(col(Conversation.updated_at), col(Conversation.id))
        .limit(limit)
    ).all()
    return [int(row[0]) for row in rows]


ROUTING_ACTOR = "routing"  # how the audit trail names assignments routing made


def serve_queue_now(session: Session, broker: EventBroker) -> list[tuple[int, int]]:
    """``serve_queue``, audited and committed, then announced on each conversation's channel (the inboxes and open
    pages show the assignee)."""
    given = serve_queue(session)
    names = {}
    for conversation_id, staff_id in given:
        member = session.get(StaffMember, staff_id)
        names[conversation_id] = member.name if member else None
        record_audit_event(
            session,
            actor=ROUTING_ACTOR,
            action="routing.assign",
            target_type="conversation",
            target_id=conversation_id,
            detail={"staff_id": staff_id, "from": "queue"},
        )
    session.commit()
    for conversation_id, _ in given:
        broker.publish(conversation_id, "conversation.assigned", {"staff_name": names[conversation_id]})
    return given


def serve_queue(session: Session) -> list[tuple[int, int]]:
    """Give waiting conversations, oldest first, to members with room; the (conversation, member) pairs given."""
    if not routing_enabled(session):
        return []
    given: list[tuple[int, int]] = []
    for conversation_id in queue(session):
        free = _free_members(session)
        if not free:
            break
        member = free[0]
        assert member.id is not None
        _give(session, conversation_id, member)
        session.flush()
        given.append((conversation_id, member.id))
    return given


def take_back(session: Session, staff_id: int) -> list[int]:
    """A member went offline: their open conversations with a person go back to the queue (a taken-over one waits
    for a person again). Returns them; the caller then serves the queue."""
    rows = session.execute(
        sa_select(col(Conversation.id)).where(
            col(Conversation.assigned_staff_id) == staff_id, col(Conversation.status).in_(WITH_A_PERSON)
        )
    ).all()
    ids = [int(row[0]) for row in rows]
    if ids:
        session.execute(
            update(Conversation)
            .where(col(Conversation.id).in_(ids))
            .values(assigned_staff_id=None, status=ConversationStatus.NEEDS_HUMAN, updated_at=utc_now())
        )
    return ids


def members_now(session: Session) -> list[tuple[StaffMember, int]]:
    """Every active member with their load, for the routing page."""
    members = session.execute(
        sa_select(StaffMember).where(col(StaffMember.active).is_(True)).order_by(col(StaffMember.name))
    ).scalars()
    return [(member, load_of(session, member.id or 0)) for member in members]
