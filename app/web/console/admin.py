"""Administrators' pages: staff accounts, and a customer's export and erasure.

Staff changes call the same functions as ``memdesk staff …`` (``app.console.staff``). Erasure removes every row
and memory of the customer (``app.privacy``) and then what the running server holds about their conversations
(live event history and streams, context engines, the rate-limit window), exactly as the admin API does.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import Form, Path, Request, status
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import Engine
from sqlmodel import Session

from app.console import staff as staff_accounts
from app.privacy import (
    CustomerExport,
    CustomerNotFoundError,
    Erasure,
    erase_customer,
    export_customer,
    find_customer,
    forget_erased,
    printable_export,
)
from app.web.console.common import ConsoleError, after_action, console_router, page
from app.web.deps import (
    BrokerDep,
    DbDep,
    LimiterDep,
    MemoryStoreDep,
    PrivacyOfficerDep,
    StaffManagerDep,
    TurnsDep,
)
from memory.store import MemoryStoreBusyError

router = console_router()

MAX_FIELD_CHARS = 400
Field = Annotated[str, Form(max_length=MAX_FIELD_CHARS)]
CustomerRef = Annotated[str, Path(max_length=64)]
PRIVACY_TIMEOUT_S = 60.0


def _staff_page(request: Request, db: Engine, staff: Any, message: str | None = None) -> HTMLResponse:
    with Session(db, expire_on_commit=False) as session:
        members = staff_accounts.list_staff(session)
    return page(request, "staff.html", staff=staff, members=members, message=message)


@router.get("/staff", response_class=HTMLResponse)
async def staff_page(request: Request, db: DbDep, staff: StaffManagerDep) -> Any:
    return await anyio.to_thread.run_sync(_staff_page, request, db, staff)


async def _staff_change(request: Request, db: Engine, change: Any) -> Response:
    def run() -> None:
        with Session(db) as session:
            change(session)

    try:
        await anyio.to_thread.run_sync(run)
    except staff_accounts.StaffError as error:
        raise ConsoleError(status.HTTP_422_UNPROCESSABLE_CONTENT, str(error)) from error
    return after_action(request, "/console/staff")


@router.post("/staff")
async def add_staff(
    request: Request,
    db: DbDep,
    staff: StaffManagerDep,
    email: Field = "",
    name: Field = "",
    role: Field = "agent",
    password: Field = "",
) -> Response:
    def change(session: Session) -> None:
        staff_accounts.add_staff(session, email=email, name=name, role=role, password=password, actor=staff.actor)

    return await _staff_change(request, db, change)


@router.post("/staff/{email}/active")
async def set_active(
    request: Request, email: Annotated[str, Path(max_length=320)], db: DbDep, staff: StaffManagerDep,
    active: Field = "",
) -> Response:  # fmt: skip
    def change(session: Session) -> None:
        staff_accounts.set_active(session, email, active=active == "1", actor=staff.actor)

    return await _staff_change(request, db, change)


@router.post("/staff/{email}/password")
async def set_password(
    request: Request, email: Annotated[str, Path(max_length=320)], db: DbDep, staff: StaffManagerDep,
    password: Field = "",
) -> Response:  # fmt: skip
    def change(session: Session) -> None:
        staff_accounts.set_password(session, email, password, actor=staff.actor)

    return await _staff_change(request, db, change)


@router.post("/customers/{ref}/export")
async def export(
    ref: CustomerRef, db: DbDep, store: MemoryStoreDep, staff: PrivacyOfficerDep, format: Field = "json"
) -> Response:
    """Everything memdesk holds about the customer, as a download: JSON, or (``format=html``) a printable page."""

    def run() -> CustomerExport:
        with Session(db) as session:
            exported = export_customer(session, store, find_customer(session, ref))
            session.commit()
            return exported

    try:
        data = await anyio.to_thread.run_sync(run)
    except CustomerNotFoundError as error:
        raise ConsoleError(status.HTTP_404_NOT_FOUND, str(error)) from error
    except MemoryStoreBusyError as error:
        raise ConsoleError(status.HTTP_503_SERVICE_UNAVAILABLE, f"Long-term memory is busy ({error}).") from error
    # A download, not a console page: the file is what goes to the customer, read outside the console.
    if format == "html":
        headers = {"Content-Disposition": f'attachment; filename="memdesk-customer-{ref}.html"'}
        return HTMLResponse(printable_export(data), headers=headers)
    headers = {"Content-Disposition": f'attachment; filename="memdesk-customer-{ref}.json"'}
    return Response(data.model_dump_json(indent=2), media_type="application/json", headers=headers)


@router.post("/customers/{ref}/erase")
async def erase(
    request: Request,
    ref: CustomerRef,
    db: DbDep,
    store: MemoryStoreDep,
    broker: BrokerDep,
    turns: TurnsDep,
    limiter: LimiterDep,
    staff: PrivacyOfficerDep,
) -> Response:
    """Erase the customer: rows and memories first, then the running server's state about them."""

    def run() -> tuple[str, Erasure]:
        with Session(db) as session:
            customer = find_customer(session, ref)
            return customer.public_id, erase_customer(session, store, customer, actor=staff.actor)

    try:
        public_id, erasure = await anyio.to_thread.run_sync(run)
    except CustomerNotFoundError as error:
        raise ConsoleError(status.HTTP_404_NOT_FOUND, str(error)) from error
    except MemoryStoreBusyError as error:
        raise ConsoleError(
            status.HTTP_503_SERVICE_UNAVAILABLE, f"Nothing was erased: memory is busy ({error})."
        ) from error
    forget_erased(erasure, public_id, broker=broker, turns=turns, limiter=limiter)
    response = after_action(request, "/console")
    response.headers["HX-Redirect"] = "/console"
    return response
