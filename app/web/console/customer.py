"""The customer panel beside a conversation, and supervisors' memory changes.

``GET /console/customers/{id}/panel`` renders profile, the customer's conversations, orders and memories (loaded
after the page, so a slow memory store never delays the conversation). Memory changes need the supervisor role;
each answers with the refreshed memory list.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

import anyio
from fastapi import Form, Path, Query, Request, status
from fastapi.responses import HTMLResponse
from sqlalchemy import Engine
from sqlmodel import Session, select

from app.console import memories
from app.console.customer import CustomerProfile, load_memories, load_orders, load_profile
from app.console.permissions import Permission, Staff
from app.console.timeline import TimelineEntry, customer_timeline
from app.customer_memory.service import MemoryService
from app.models import Customer
from app.web.console.common import ConsoleError, console_router, page
from app.web.deps import DbDep, MemoryDep, MemoryEditorDep, ShopTodayDep, ToolsDep, WorkerDep
from memory.conclusions import ConclusionKind
from memory.store import CustomerMemoryError, MemoryNotFoundError

router = console_router("/console/customers")

MAX_ID_CHARS = 64
CustomerRef = Annotated[str, Path(max_length=MAX_ID_CHARS)]
MemoryRef = Annotated[str, Path(max_length=MAX_ID_CHARS)]
TextField = Annotated[str, Form(max_length=memories.MAX_MEMORY_CHARS * 2)]
DateField = Annotated[str, Form(max_length=10)]


def _profile(db: Engine, ref: str) -> CustomerProfile:
    with Session(db) as session:
        customer = session.exec(select(Customer).where(Customer.public_id == ref)).first()
        if customer is None or customer.id is None:
            session.rollback()
            raise ConsoleError(status.HTTP_404_NOT_FOUND, "No such customer; they may have been erased.")
        profile = load_profile(session, customer.id)
        session.commit()
    return profile


def _timeline(db: Engine, customer_id: int, current: str | None) -> list[TimelineEntry]:
    with Session(db) as session:
        entries = customer_timeline(session, customer_id, current)
        session.commit()
    return entries


def _date(value: str, label: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError as error:
        raise ConsoleError(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"The {label} must be a date like 2026-12-24."
        ) from error


async def _memories_fragment(
    request: Request, memory: MemoryService | None, db: Engine, staff: Staff, profile: CustomerProfile, today: date
) -> Any:
    listed = await load_memories(memory, db, profile.id)
    return page(
        request,
        "_memories.html",
        staff=staff,
        profile=profile,
        memories=listed,
        today=today,
        can_edit=staff.can(Permission.EDIT_MEMORIES),
        kinds=[kind.value for kind in ConclusionKind],
    )


@router.get("/{ref}/panel", response_class=HTMLResponse)
async def panel(
    request: Request,
    ref: CustomerRef,
    db: DbDep,
    tools: ToolsDep,
    memory: MemoryDep,
    staff: WorkerDep,
    today: ShopTodayDep,
    current: Annotated[str | None, Query(max_length=MAX_ID_CHARS)] = None,
) -> Any:
    profile = await anyio.to_thread.run_sync(_profile, db, ref)
    timeline = await anyio.to_thread.run_sync(_timeline, db, profile.id, current)
    orders = await load_orders(db, tools, profile, staff.actor)
    listed = await load_memories(memory, db, profile.id)
    return page(
        request,
        "_customer_panel.html",
        staff=staff,
        profile=profile,
        timeline=timeline,
        orders=orders,
        memories=listed,
        today=today,
        can_edit=staff.can(Permission.EDIT_MEMORIES),
        kinds=[kind.value for kind in ConclusionKind],
    )


async def _changed(
    request: Request,
    memory: MemoryService | None,
    db: Engine,
    staff: Staff,
    profile: CustomerProfile,
    change: Any,
    today: date,
) -> Any:
    try:
        await change
    except memories.MemoryUnavailable as error:
        raise ConsoleError(status.HTTP_503_SERVICE_UNAVAILABLE, str(error)) from error
    except MemoryNotFoundError as error:
        raise ConsoleError(status.HTTP_404_NOT_FOUND, "No such memory for this customer.") from error
    except (ValueError, CustomerMemoryError) as error:
        raise ConsoleError(status.HTTP_422_UNPROCESSABLE_CONTENT, str(error)) from error
    return await _memories_fragment(request, memory, db, staff, profile, today)


def _dates(kind: str, text: str, due: str, expires: str, today: date) -> memories.MemoryDates:
    return memories.derive_dates(
        kind, text, due_field=_date(due, "due date"), expiry_field=_date(expires, "expiry date"), today=today
    )


@router.post("/{ref}/memories", response_class=HTMLResponse)
async def add_memory(
    request: Request,
    ref: CustomerRef,
    db: DbDep,
    memory: MemoryDep,
    staff: MemoryEditorDep,
    today: ShopTodayDep,
    text: TextField = "",
    kind: Annotated[str, Form(max_length=20)] = "fact",
    due_date: DateField = "",
    expires_on: DateField = "",
) -> Any:
    if kind not in {k.value for k in ConclusionKind}:
        raise ConsoleError(status.HTTP_422_UNPROCESSABLE_CONTENT, "Choose a kind from the list.")
    profile = await anyio.to_thread.run_sync(_profile, db, ref)
    dates = _dates(kind, text, due_date, expires_on, today)
    change = memories.add_memory(memory, db, staff, profile.id, kind=kind, text=text, dates=dates)
    return await _changed(request, memory, db, staff, profile, change, today)


@router.post("/{ref}/memories/{memory_id}/edit", response_class=HTMLResponse)
async def edit_memory(
    request: Request,
    ref: CustomerRef,
    memory_id: MemoryRef,
    db: DbDep,
    memory: MemoryDep,
    staff: MemoryEditorDep,
    today: ShopTodayDep,
    text: TextField = "",
    kind: Annotated[str, Form(max_length=20)] = "",
    due_date: DateField = "",
    expires_on: DateField = "",
) -> Any:
    profile = await anyio.to_thread.run_sync(_profile, db, ref)
    dates = _dates(kind, text, due_date, expires_on, today)
    change = memories.edit_memory(memory, db, staff, profile.id, memory_id, text=text, dates=dates)
    return await _changed(request, memory, db, staff, profile, change, today)


@router.post("/{ref}/memories/{memory_id}/lock", response_class=HTMLResponse)
async def lock_memory(
    request: Request,
    ref: CustomerRef,
    memory_id: MemoryRef,
    db: DbDep,
    memory: MemoryDep,
    staff: MemoryEditorDep,
    today: ShopTodayDep,
) -> Any:
    profile = await anyio.to_thread.run_sync(_profile, db, ref)
    change = memories.lock_memory(memory, db, staff, profile.id, memory_id)
    return await _changed(request, memory, db, staff, profile, change, today)


@router.post("/{ref}/memories/{memory_id}/delete", response_class=HTMLResponse)
async def delete_memory(
    request: Request,
    ref: CustomerRef,
    memory_id: MemoryRef,
    db: DbDep,
    memory: MemoryDep,
    staff: MemoryEditorDep,
    today: ShopTodayDep,
) -> Any:
    profile = await anyio.to_thread.run_sync(_profile, db, ref)
    change = memories.delete_memory(memory, db, staff, profile.id, memory_id)
    return await _changed(request, memory, db, staff, profile, change, today)


@router.get("/{ref}/memories/{memory_id}/history", response_class=HTMLResponse)
async def memory_history(
    request: Request, ref: CustomerRef, memory_id: MemoryRef, db: DbDep, memory: MemoryDep, staff: WorkerDep
) -> Any:
    profile = await anyio.to_thread.run_sync(_profile, db, ref)
    try:
        rows = await memories.memory_history(memory, profile.id, memory_id)
    except memories.MemoryUnavailable as error:
        raise ConsoleError(status.HTTP_503_SERVICE_UNAVAILABLE, str(error)) from error
    except MemoryNotFoundError as error:
        raise ConsoleError(status.HTTP_404_NOT_FOUND, "No such memory for this customer.") from error
    return page(request, "_memory_history.html", rows=rows, memory_id=memory_id)
