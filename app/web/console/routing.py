"""Routing in the console: each member says whether they are online (``/console/availability``, from the top bar of
every page), and supervisors turn routing on, set capacities and see the queue (``/console/routing``)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import Form, Path, Request, status
from fastapi.responses import HTMLResponse
from sqlalchemy import Engine
from sqlmodel import Session

from app.console.audit import record_audit_event
from app.console.permissions import Staff
from app.live.broker import EventBroker
from app.models import Availability, Conversation, Customer, StaffMember
from app.routing.assign import members_now, queue, serve_queue_now, take_back
from app.routing.settings import routing_enabled, set_routing
from app.web.console.common import ConsoleError, after_action, console_router, page
from app.web.deps import BrokerDep, DbDep, RoutingManagerDep, WorkerDep
from app.web.input import DatabaseInt

router = console_router()

MAX_CAPACITY = 50
AvailabilityField = Annotated[str, Form(max_length=16)]
BackField = Annotated[str, Form(max_length=200)]


def _audit(session: Session, staff: Staff, action: str, target: str, **detail: Any) -> None:
    record_audit_event(
        session, actor=staff.actor, action=f"console.{action}", target_type="staff", target_id=target, detail=detail
    )


def _set_availability(db: Engine, broker: EventBroker, staff: Staff, availability: Availability) -> None:
    with Session(db) as session:
        member = session.get(StaffMember, staff.id)
        assert member is not None
        member.availability = availability
        session.add(member)
        returned = take_back(session, staff.id) if availability != Availability.ONLINE else []
        _audit(session, staff, "availability", str(staff.id), availability=availability.value, returned=returned)
        session.commit()
        for conversation_id in returned:
            broker.publish(conversation_id, "conversation.status", {"status": "needs_human"})
        serve_queue_now(session, broker)


@router.post("/availability")
async def availability(
    request: Request, db: DbDep, broker: BrokerDep, staff: WorkerDep, value: AvailabilityField, back: BackField = ""
) -> Any:
    """Online (routing may give you conversations), away or offline (it gives you none; with routing on, your open
    conversations go back to the queue for the others)."""
    try:
        chosen = Availability(value)
    except ValueError as error:
        raise ConsoleError(status.HTTP_422_UNPROCESSABLE_CONTENT, "Choose online, away or offline.") from error
    _set_availability(db, broker, staff, chosen)  # on the event loop: it publishes live events
    target = back if back.startswith("/console") and not back.startswith("//") else "/console"
    return after_action(request, target)


def _routing_page_data(db: Engine) -> dict[str, Any]:
    with Session(db, expire_on_commit=False) as session:
        waiting = queue(session)
        customers = {
            conversation.id: (conversation.public_id, session.get(Customer, conversation.customer_id))
            for conversation in (session.get(Conversation, key) for key in waiting)
            if conversation is not None
        }
        data = {
            "enabled": routing_enabled(session),
            "members": members_now(session),
            "queue": [(public_id, customer.name if customer else None) for public_id, customer in customers.values()],
        }
        session.commit()
    return data


@router.get("/routing", response_class=HTMLResponse)
async def routing_page(request: Request, db: DbDep, staff: RoutingManagerDep) -> HTMLResponse:
    data = await anyio.to_thread.run_sync(_routing_page_data, db)
    return page(request, "routing.html", staff=staff, active="routing", **data)


def _switch(db: Engine, broker: EventBroker, staff: Staff, enabled: bool) -> None:
    with Session(db) as session:
        set_routing(session, enabled, staff.id)
        _audit(session, staff, "routing", "routing", enabled=enabled)
        session.commit()
        serve_queue_now(session, broker)


@router.post("/routing")
async def switch_routing(
    request: Request, db: DbDep, broker: BrokerDep, staff: RoutingManagerDep, enabled: AvailabilityField = ""
) -> Any:
    _switch(db, broker, staff, enabled == "on")  # on the event loop: it publishes live events
    return after_action(request, "/console/routing")


def _set_capacity(db: Engine, broker: EventBroker, staff: Staff, member_id: int, capacity: int) -> None:
    with Session(db) as session:
        member = session.get(StaffMember, member_id)
        if member is None or not member.active:
            session.rollback()
            raise ConsoleError(status.HTTP_404_NOT_FOUND, "No such staff member.")
        member.capacity = capacity
        session.add(member)
        _audit(session, staff, "capacity", str(member_id), capacity=capacity)
        session.commit()
        serve_queue_now(session, broker)


@router.post("/routing/members/{member_id}/capacity")
async def capacity(
    request: Request,
    db: DbDep,
    broker: BrokerDep,
    staff: RoutingManagerDep,
    member_id: Annotated[DatabaseInt, Path()],
    capacity: Annotated[DatabaseInt, Form(le=MAX_CAPACITY)],
) -> Any:
    _set_capacity(db, broker, staff, member_id, capacity)  # on the event loop: it publishes live events
    return after_action(request, "/console/routing")
