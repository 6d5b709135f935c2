"""Supervisors' changes to a customer's long-term memories: add, edit, lock, delete, and reading a history.

Every write goes through the memory service (``CustomerMemory`` on its bounded pool, with a timeout), is locked
against later automatic writes (compaction, nightly sync), and is audited with the staff member as actor (target:
the customer, so an erasure removes the trail with the customer).

Dates: an edit or an addition takes its due date from the form's date field when one is given, else from the text
(the one date it names, relative dates resolved against today, as the compressor reads decisions); its expiry
from the form, else the memory package's promise rule (a promise expires a grace period after its due date). A
text that names no date and a form without one leave the memory without a due date: the old one is never kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session

from app.console.audit import record_audit_event
from app.console.permissions import Staff
from app.customer_memory.ids import memory_customer_id
from app.customer_memory.service import MemoryService
from app.outcomes.promises import follow_edit, forget_promise, record_promise
from compression.dates import resolve_due
from compression.facts import FactExtractor
from memory.conclusions import PROMISE_GRACE_DAYS, Conclusion, ConclusionKind, ConclusionSource, MemoryItem

MAX_MEMORY_CHARS = 1_000
# Identifiers a decision is about (dates are its values, not its subject).
SUBJECT_KINDS = frozenset({"order", "tracking", "money", "email", "phone"})


class MemoryUnavailable(Exception):
    """Long-term memory is off, busy or failed; the message says which."""


@dataclass(frozen=True)
class MemoryDates:
    due_date: date | None
    expires_on: date | None


def derive_dates(
    kind: str, text: str, *, due_field: date | None, expiry_field: date | None, today: date
) -> MemoryDates:
    due = due_field or resolve_due(text, today)
    expiry = expiry_field
    if expiry is None and kind == ConclusionKind.PROMISE.value and due is not None:
        expiry = due + timedelta(days=PROMISE_GRACE_DAYS)
    return MemoryDates(due, expiry)


def identifiers_in(text: str) -> tuple[str, ...]:
    found = FactExtractor().extract(text)
    return tuple(dict.fromkeys(value for kind, value in found if kind in SUBJECT_KINDS))


def checked_text(text: str) -> str:
    clean = " ".join(text.split())
    if not clean:
        raise ValueError("A memory needs some text; to remove one, delete it.")
    if len(clean) > MAX_MEMORY_CHARS:
        raise ValueError(f"A memory can be at most {MAX_MEMORY_CHARS} characters; this one has {len(clean)}.")
    return clean


@contextmanager
def _answering(memory: MemoryService | None) -> Iterator[MemoryService]:
    """The memory service, its failures (switched off, busy, too slow) raised as ``MemoryUnavailable``."""
    if memory is None:
        raise MemoryUnavailable("Long-term memory is switched off (MEMDESK_MEMORY_ENABLED=false).")
    try:
        yield memory
    except (TimeoutError, RuntimeError) as error:
        raise MemoryUnavailable(f"Long-term memory did not answer ({error}); nothing was changed.") from error


def _audit(db: Engine, staff: Staff, action: str, customer_id: int, **detail: Any) -> None:
    with Session(db) as session:
        record_audit_event(
            session,
            actor=staff.actor,
            action=f"console.memory_{action}",
            target_type="customer",
            target_id=customer_id,
            detail=detail,
        )
        session.commit()


async def add_memory(
    memory: MemoryService | None,
    db: Engine,
    staff: Staff,
    customer_id: int,
    *,
    kind: str,
    text: str,
    dates: MemoryDates,
) -> MemoryItem:
    clean = checked_text(text)
    conclusion = Conclusion(
        customer_id=memory_customer_id(customer_id),
        kind=ConclusionKind(kind),
        text=clean,
        source=ConclusionSource.AGENT,
        due_date=dates.due_date,
        identifiers=identifiers_in(clean),
    )
    with _answering(memory) as service:
        item = await service.add_locked(conclusion, editor=staff.actor, expiration_date=dates.expires_on)
    _audit(db, staff, "add", customer_id, memory_id=item.id, kind=kind)
    if conclusion.kind == ConclusionKind.PROMISE:
        with Session(db) as session:
            record_promise(
                session, customer_id=customer_id, memory_id=item.id, text=item.text, due_date=item.due_date,
                identifiers=item.identifiers, source=ConclusionSource.AGENT.value,
            )  # fmt: skip
            session.commit()
    return item


async def edit_memory(
    memory: MemoryService | None,
    db: Engine,
    staff: Staff,
    customer_id: int,
    memory_id: str,
    *,
    text: str,
    dates: MemoryDates,
) -> MemoryItem:
    clean = checked_text(text)
    with _answering(memory) as service:
        item = await service.edit(
            customer_id, memory_id, clean, editor=staff.actor, due_date=dates.due_date, expiration_date=dates.expires_on
        )
    _audit(db, staff, "edit", customer_id, memory_id=memory_id)
    with Session(db) as session:
        follow_edit(session, memory_id, text=item.text, due_date=item.due_date)
        session.commit()
    return item


async def lock_memory(
    memory: MemoryService | None, db: Engine, staff: Staff, customer_id: int, memory_id: str
) -> MemoryItem:
    with _answering(memory) as service:
        item = await service.lock(customer_id, memory_id, editor=staff.actor)
    _audit(db, staff, "lock", customer_id, memory_id=memory_id)
    return item


async def delete_memory(
    memory: MemoryService | None, db: Engine, staff: Staff, customer_id: int, memory_id: str
) -> None:
    with _answering(memory) as service:
        await service.delete(customer_id, memory_id)
    _audit(db, staff, "delete", customer_id, memory_id=memory_id)
    with Session(db) as session:
        forget_promise(session, memory_id)
        session.commit()


async def memory_history(memory: MemoryService | None, customer_id: int, memory_id: str) -> list[dict[str, Any]]:
    with _answering(memory) as service:
        return await service.history(customer_id, memory_id)
