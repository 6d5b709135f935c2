"""What staff do between two days of a scenario, through the functions the console and the privacy tools use.

A day's ``after`` steps run once its checks are evaluated, before the next day's conversation:

- ``edit_promise``: a supervisor edits the customer's active promise whose text holds ``contains``: its ``text``
  (the old text when not given) and its ``due`` date (``app.console.memories.edit_memory``: locked, audited as a
  person's edit, the promises board following);
- ``mark_promise``: a supervisor marks that promise ``kept`` or ``broken``, with an optional ``note``
  (``app.console.promises.mark``);
- ``erase_customer``: an administrator erases the customer (``app.privacy.erasure.erase_customer``), and the
  running app drops what it holds about the erased conversations, as the console's erasure does. The next day the
  shop signs the same person in again: to memdesk, a new customer.

The staff member is one the runner adds to the scenario's database (``EVAL_STAFF_EMAIL``), so the audit trail and
the memory's ``edited_by`` name a real account. A step that cannot be done raises ``StepError``, which reports the
scenario as one that could not run.
"""

from __future__ import annotations

import secrets
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import anyio
from sqlalchemy import Engine
from sqlmodel import Session, select

from app.console.memories import derive_dates, edit_memory
from app.console.permissions import Staff
from app.console.promises import mark
from app.console.staff import add_staff
from app.evals.scenario import Step
from app.models import Customer, PromiseStatus, StaffMember, StaffRole
from app.privacy import Erasure, erase_customer, forget_erased
from memory.conclusions import ConclusionKind, MemoryItem

EVAL_STAFF_EMAIL = "eval-staff@memdesk.invalid"
EVAL_STAFF_NAME = "Eval Staff"


class StepError(RuntimeError):
    """A step between days that could not be done; the message says which and why."""


def eval_staff(db: Engine) -> Staff:
    """The runner's staff member (an administrator, so every step is allowed), added on first use."""
    with Session(db) as session:
        member = session.exec(select(StaffMember).where(StaffMember.email == EVAL_STAFF_EMAIL)).first()
        if member is None:
            member = add_staff(session, email=EVAL_STAFF_EMAIL, name=EVAL_STAFF_NAME, role=StaffRole.ADMIN,
                               password=secrets.token_urlsafe(24), actor="eval")  # fmt: skip
        assert member.id is not None
        return Staff(member.id, member.name, member.email, member.role, session_id=0, csrf_token="")


async def run_step(services: Any, customer_id: int, step: Step) -> None:
    """Do ``step`` for the customer ``customer_id`` in the app whose services these are."""
    staff = await anyio.to_thread.run_sync(eval_staff, services.db)
    if step.action == "erase_customer":
        await _erase(services, staff, customer_id)
        return
    promise = await _active_promise(services.memory, customer_id, str(step.options["contains"]))
    if step.action == "edit_promise":
        await _edit(services, staff, customer_id, promise, step)
    else:
        await _mark(services, staff, promise, step)


async def _active_promise(memory: Any, customer_id: int, contains: str) -> MemoryItem:
    if memory is None:
        raise StepError("a promise step needs long-term memory (MEMDESK_MEMORY_ENABLED=true)")
    items = await memory.list(customer_id)
    for item in items:
        if (
            item.status == "active"
            and item.kind == ConclusionKind.PROMISE.value
            and contains.casefold() in item.text.casefold()
        ):
            return item  # type: ignore[no-any-return]
    held = "; ".join(f"[{item.kind}] {item.text}" for item in items) or "none"
    raise StepError(f"no active promise holding {contains!r} to change; memories: {held}")


async def _edit(services: Any, staff: Staff, customer_id: int, promise: MemoryItem, step: Step) -> None:
    text = str(step.options.get("text", promise.text))
    today = datetime.now(ZoneInfo(services.settings.timezone)).date()
    dates = derive_dates(ConclusionKind.PROMISE.value, text, due_field=date.fromisoformat(step.options["due"]),
                         expiry_field=None, today=today)  # fmt: skip
    await edit_memory(services.memory, services.db, staff, customer_id, promise.id, text=text, dates=dates)


async def _mark(services: Any, staff: Staff, promise: MemoryItem, step: Step) -> None:
    status = PromiseStatus(step.options["outcome"])
    await mark(services.memory, services.db, staff, promise.id, status=status, note=str(step.options.get("note", "")))


async def _erase(services: Any, staff: Staff, customer_id: int) -> None:
    store = services.memory.store if services.memory is not None else None

    def erase() -> tuple[str, Erasure]:
        with Session(services.db) as session:
            customer = session.get(Customer, customer_id)
            if customer is None:
                raise StepError(f"no customer {customer_id} to erase (erased already?)")
            public_id = customer.public_id
            return public_id, erase_customer(session, store, customer, actor=staff.actor)

    public_id, erasure = await anyio.to_thread.run_sync(erase)
    forget_erased(erasure, public_id, broker=services.broker, turns=services.turns, limiter=services.message_limiter)
