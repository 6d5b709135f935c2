"""The customer panel beside a conversation: profile, orders and long-term memories.

Orders come through the tool layer (the ``list_orders`` tool the bot uses, so a shop wired through HTTP tools shows
its own orders), on a worker thread. Memories come from the memory service (``CustomerMemory`` on its bounded pool,
with a timeout): a slow or stuck memory store costs the panel its memory list, never the page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from typing import Any

import anyio
from sqlalchemy import Engine
from sqlmodel import Session, col, func, select

from app.console.permissions import STAFF_ACTOR_PREFIX
from app.customer_memory.service import MemoryService
from app.models import Conversation, Customer, StaffMember
from app.tools import ToolContext, ToolRegistry
from app.tools.registry import ErrorCode
from app.web.input import parse_database_int
from memory.conclusions import PROMISE_GRACE_DAYS, ConclusionKind, MemoryItem
from memory.store import CustomerMemoryError

ORDERS_TOOL = "list_orders"
ORDERS_SHOWN = 10
SOURCE_LABELS = {"compaction": "compaction", "nightly_sync": "sync", "agent": "human"}
# Sources whose promises and decisions were made in a conversation; one with no ``said_by`` predates it and was the
# bot's (staff replies were not summarized as theirs).
SUMMARIZED_SOURCES = frozenset({"compaction", "nightly_sync"})
COMMITMENT_KINDS = frozenset({ConclusionKind.PROMISE.value, ConclusionKind.DECISION.value})
BOT_SAID_BY = "bot"
# Memories a staff member edited before staff had their own name keep this prefix in the memory store.
LEGACY_STAFF_ACTOR_PREFIX = "agent:"


@dataclass(frozen=True)
class CustomerProfile:
    id: int
    public_id: str
    name: str | None
    email: str | None
    phone: str | None
    external_id: str | None
    conversations: int

    @property
    def verified(self) -> bool:
        return self.external_id is not None


@dataclass(frozen=True)
class OrdersView:
    orders: list[dict[str, Any]] = field(default_factory=list)
    total: int = 0
    problem: str | None = None


@dataclass(frozen=True)
class MemoryView:
    id: str
    kind: str
    text: str
    source: str
    status: str
    locked: bool
    created_at: str | None
    due_date: date | None
    expires_on: date | None
    superseded_by: str | None
    supersedes: list[str]
    edited_by: str | None
    said_by: str | None = None  # "promised by <staff name>", "by the bot", or None when unknown
    superseded_reason: str | None = None


@dataclass(frozen=True)
class MemoriesView:
    items: list[MemoryView] = field(default_factory=list)
    problem: str | None = None


def load_profile(session: Session, customer_id: int) -> CustomerProfile:
    customer = session.get(Customer, customer_id)
    assert customer is not None and customer.id is not None
    count = session.exec(select(func.count()).where(col(Conversation.customer_id) == customer_id)).one()
    return CustomerProfile(
        customer.id,
        customer.public_id,
        customer.name,
        customer.email,
        customer.phone,
        customer.external_id,
        int(count),
    )


def _orders_now(db: Engine, tools: ToolRegistry, profile: CustomerProfile, actor: str) -> OrdersView:
    arguments = json.dumps({"limit": ORDERS_SHOWN})
    with Session(db) as session:
        context = ToolContext(
            session=session, customer_id=profile.id, external_customer_id=profile.external_id, actor=actor
        )
        result = tools.execute(ORDERS_TOOL, arguments, context)
        session.commit()
    if result.error_code == ErrorCode.UNKNOWN_TOOL:
        return OrdersView(problem="No order tool is configured for this shop.")
    payload = json.loads(result.content)
    if not isinstance(payload, dict) or "error" in payload:
        message = payload.get("error", {}).get("message") if isinstance(payload, dict) else None
        return OrdersView(problem=f"The order tool failed: {message or 'no details'}")
    orders = [
        {**order, "items": items_line(order.get("items"))}
        for order in payload.get("orders", [])
        if isinstance(order, dict)
    ]
    return OrdersView(orders=orders, total=int(payload.get("total_orders", len(orders))))


def items_line(items: object) -> str:
    """An order's items as one line: the demo shop's tool sends a summary, a shop's HTTP tool may send a list of
    names or of ``{"name"|"product", "quantity"}`` objects."""
    if isinstance(items, str):
        return items
    if not isinstance(items, list):
        return ""
    return ", ".join(filter(None, (_item_text(item) for item in items)))


def _item_text(item: object) -> str:
    if not isinstance(item, dict):
        return str(item) if isinstance(item, str | int | float) else ""
    name = next((value for key in ("name", "product", "sku") if isinstance(value := item.get(key), str)), "")
    quantity = item.get("quantity")
    return f"{quantity} × {name}" if isinstance(quantity, int) and name else str(name)


async def load_orders(db: Engine, tools: ToolRegistry, profile: CustomerProfile, actor: str) -> OrdersView:
    return await anyio.to_thread.run_sync(_orders_now, db, tools, profile, actor)


def expiry_of(item: MemoryItem) -> date | None:
    """When the memory stops being recalled: the expiry a person set, else the promise rule of the memory
    package (a promise expires a grace period after it falls due)."""
    stored = item.metadata.get("expires_on")
    if isinstance(stored, str) and stored:
        return date.fromisoformat(stored[:10])
    if item.kind == ConclusionKind.PROMISE.value and item.due_date is not None and not item.locked:
        return item.due_date + timedelta(days=PROMISE_GRACE_DAYS)
    return None


def memory_views(items: list[MemoryItem]) -> list[MemoryView]:
    """Active memories first, newest first; each with the memories it superseded (the supersession chain)."""
    supersedes: dict[str, list[str]] = {}
    for item in items:
        if item.superseded_by:
            supersedes.setdefault(item.superseded_by, []).append(item.id)
    ordered = sorted(items, key=lambda item: item.created_at or "", reverse=True)
    ordered = sorted(ordered, key=lambda item: not item.active)
    return [
        MemoryView(
            id=item.id,
            kind=item.kind or "note",
            text=item.text,
            source=SOURCE_LABELS.get(item.source or "", item.source or "unknown"),
            status=item.status,
            locked=item.locked,
            created_at=item.created_at,
            due_date=item.due_date,
            expires_on=expiry_of(item),
            superseded_by=item.superseded_by,
            supersedes=supersedes.get(item.id, []),
            edited_by=item.metadata.get("edited_by"),
            said_by=_said_by(item),
            superseded_reason=item.metadata.get("superseded_reason"),
        )
        for item in ordered
    ]


def _said_by(item: MemoryItem) -> str | None:
    """Who made the memory's commitment: a staff actor (``staff:<id>``, named by ``load_memories``), or the bot."""
    if item.said_by and item.said_by != BOT_SAID_BY:
        return item.said_by
    if item.said_by == BOT_SAID_BY or (item.source in SUMMARIZED_SOURCES and item.kind in COMMITMENT_KINDS):
        return BOT_SAID_BY
    return None


def said_by_label(said_by: str | None, names: dict[str, str]) -> str | None:
    if said_by is None:
        return None
    if said_by == BOT_SAID_BY:
        return "by the bot"
    return f"promised by {names.get(said_by, said_by)}"


async def load_memories(memory: MemoryService | None, db: Engine, customer_id: int) -> MemoriesView:
    """The memory list, with the names of editors and of staff members who made a promise, from ``db``."""
    if memory is None:
        return MemoriesView(problem="Long-term memory is switched off (MEMDESK_MEMORY_ENABLED=false).")
    try:
        items = await memory.list(customer_id)
    except (CustomerMemoryError, TimeoutError, RuntimeError) as error:
        return MemoriesView(problem=f"Memories are unavailable right now ({error}). Try again shortly.")
    views = memory_views(items)
    actors = {actor for view in views for actor in (view.edited_by, view.said_by) if actor}
    names = await anyio.to_thread.run_sync(_staff_names, db, actors) if actors else {}
    return MemoriesView(
        items=[
            replace(
                view,
                edited_by=names.get(view.edited_by or "", view.edited_by),
                said_by=said_by_label(view.said_by, names),
            )
            for view in views
        ]
    )


def _staff_names(db: Engine, actors: set[str]) -> dict[str, str]:
    """Staff members' names for actors like ``staff:7`` (memories store who edited them as an actor); an actor that
    is not a staff member (``cli``), or one since removed, keeps its raw form."""
    ids = {actor: staff_id for actor in actors if (staff_id := _staff_id(actor)) is not None}
    if not ids:
        return {}
    with Session(db) as session:
        query = select(StaffMember.id, StaffMember.name).where(col(StaffMember.id).in_(set(ids.values())))
        names = {staff_id: name for staff_id, name in session.exec(query).all()}
        session.commit()
    return {actor: names[staff_id] for actor, staff_id in ids.items() if staff_id in names}


def _staff_id(actor: str) -> int | None:
    """The staff id in ``staff:7``; None for any other actor. Actors can come from a summary model's notes (``by:
    staff:…``), so the number is parsed as strictly as one from a request: ``staff:²`` or ``staff:<2^64>`` name
    nobody instead of failing the panel."""
    for prefix in (STAFF_ACTOR_PREFIX, LEGACY_STAFF_ACTOR_PREFIX):
        number = actor.removeprefix(prefix)
        if number != actor:
            try:
                return parse_database_int(number)
            except ValueError:
                return None
    return None
