"""Staff marking a promise kept or broken: the memory is locked and audited as a human memory change
(``app.console.memories.lock_memory``), then the board's row records the outcome with its note and leaves the open
list, audited as ``console.promise_kept`` or ``console.promise_broken`` on the customer."""

from __future__ import annotations

from sqlalchemy import Engine
from sqlmodel import Session

from app.console.audit import record_audit_event
from app.console.memories import lock_memory
from app.console.permissions import Staff
from app.customer_memory.service import MemoryService
from app.models import PromiseStatus
from app.outcomes.promises import mark_promise, open_promise

MAX_NOTE_CHARS = 1_000


class PromiseNotOpen(LookupError):
    """No open promise has this memory id (marked already, deleted, or its customer erased)."""


def _open_customer(db: Engine, memory_id: str) -> int:
    with Session(db) as session:
        record = open_promise(session, memory_id)
        customer_id = None if record is None else record.customer_id
        session.commit()
    if customer_id is None:
        raise PromiseNotOpen("No open promise with this id; it may have been marked or removed already.")
    return customer_id


async def mark(
    memory: MemoryService | None, db: Engine, staff: Staff, memory_id: str, *, status: PromiseStatus, note: str
) -> None:
    clean = " ".join(note.split())
    if len(clean) > MAX_NOTE_CHARS:
        raise ValueError(f"A note can be at most {MAX_NOTE_CHARS} characters; this one has {len(clean)}.")
    customer_id = _open_customer(db, memory_id)
    await lock_memory(memory, db, staff, customer_id, memory_id)
    with Session(db) as session:
        record = open_promise(session, memory_id)
        if record is None:
            session.rollback()
            raise PromiseNotOpen("This promise was marked by someone else a moment ago.")
        mark_promise(session, record, status=status, note=clean, actor=staff.actor)
        record_audit_event(
            session,
            actor=staff.actor,
            action=f"console.promise_{status.value}",
            target_type="customer",
            target_id=customer_id,
            detail={"memory_id": memory_id, "note": clean},
        )
        session.commit()
