"""Administration API: a customer's data export (JSON, or a printable page with ``?format=html``) and erasure.
Guarded by ``MEMDESK_ADMIN_TOKEN`` (bearer); without that setting the routes answer 403 and say how to enable them.

A customer is named by their public id (``cus_…``) or the shop's own customer id. Erasure also drops what this
server holds in memory about the customer: the event history of their conversations (and any open stream), their
conversations' context engines and their rate-limit window.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, HTTPException, Path, Query, status
from fastapi.responses import HTMLResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from sqlmodel import Session

from app.identity import secure_equals
from app.privacy import (
    PRINTABLE_CSP,
    CustomerExport,
    CustomerNotFoundError,
    Erasure,
    erase_customer,
    export_customer,
    find_customer,
    forget_erased,
    printable_export,
)
from app.web.deps import BrokerDep, DbDep, LimiterDep, MemoryStoreDep, SettingsDep, TurnsDep
from app.web.errors import error_responses
from app.web.input import StrictJSONRoute
from memory.store import MemoryStoreBusyError

admin_bearer = HTTPBearer(scheme_name="AdminToken", description="The value of MEMDESK_ADMIN_TOKEN", auto_error=False)
MEMORY_BUSY_RETRY_AFTER_S = 5
CustomerRef = Annotated[
    str, Path(min_length=1, max_length=128, description="The customer's public id, or the shop's customer id")
]


def require_admin(
    settings: SettingsDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(admin_bearer)]
) -> None:
    token = settings.admin_token
    if token is None:
        raise HTTPException(status.HTTP_403_FORBIDDEN, detail="The admin API is disabled; set MEMDESK_ADMIN_TOKEN.")
    given = credentials.credentials if credentials is not None else ""
    if not given or not secure_equals(given, token.get_secret_value()):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            detail="A valid admin bearer token is required.",
            headers={"WWW-Authenticate": "Bearer"},
        )


router = APIRouter(
    prefix="/api/admin",
    tags=["admin"],
    route_class=StrictJSONRoute,
    responses=error_responses(401, 403, 404, 503),
    dependencies=[Depends(require_admin)],
)


class ExportFormat(StrEnum):
    JSON = "json"
    HTML = "html"


class CustomerErased(BaseModel):
    erased: dict[str, int] = Field(description="How many rows (per table) and memories were deleted")


def _memory_busy(error: MemoryStoreBusyError) -> HTTPException:
    # Memories go first in an erasure, so nothing was deleted yet: trying again later is safe.
    return HTTPException(
        status.HTTP_503_SERVICE_UNAVAILABLE,
        detail=f"Long-term memory is busy ({error}); nothing was changed. Try again shortly.",
        headers={"Retry-After": str(MEMORY_BUSY_RETRY_AFTER_S)},
    )


@router.get(
    "/customers/{customer_id}/export",
    response_model=CustomerExport,
    responses={200: {"content": {"text/html": {"schema": {"type": "string"}}}, "description": "The export"}},
)
async def export(
    customer_id: CustomerRef,
    db: DbDep,
    store: MemoryStoreDep,
    format: Annotated[
        ExportFormat, Query(description="json (default), or html: a printable page to send to the customer")
    ] = ExportFormat.JSON,
) -> CustomerExport | HTMLResponse:
    """Everything memdesk holds about the customer, as a document they can read; staff notes in their own
    section."""

    def run() -> CustomerExport:
        with Session(db) as session:
            return export_customer(session, store, find_customer(session, customer_id))

    try:
        document = await anyio.to_thread.run_sync(run)
    except CustomerNotFoundError as error:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=str(error)) from error
    except MemoryStoreBusyError as error:
        raise _memory_busy(error) from error
    if format is ExportFormat.HTML:
        return HTMLResponse(printable_export(document), headers={"Content-Security-Policy": PRINTABLE_CSP})
    return document


@router.delete("/customers/{customer_id}", response_model=CustomerErased)
async def erase(
    customer_id: CustomerRef,
    db: DbDep,
    store: MemoryStoreDep,
    broker: BrokerDep,
    turns: TurnsDep,
    limiter: LimiterDep,
) -> CustomerErased:
    def run() -> tuple[str, Erasure]:
        with Session(db) as session:
            customer = find_customer(session, customer_id)
            public_id = customer.public_id
            return public_id, erase_customer(session, store, customer, actor="admin-api")

    try:
        public_id, erasure = await anyio.to_thread.run_sync(run)
    except CustomerNotFoundError as error:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=str(error)) from error
    except MemoryStoreBusyError as error:
        raise _memory_busy(error) from error
    forget_erased(erasure, public_id, broker=broker, turns=turns, limiter=limiter)
    return CustomerErased(erased=erasure.counts)
