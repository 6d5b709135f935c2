"""Administration API: a customer's data export and erasure. Guarded by ``MEMDESK_ADMIN_TOKEN`` (bearer); without
that setting the routes answer 403 and say how to enable them."""

from __future__ import annotations

import hmac
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, HTTPException, Request, status
from sqlmodel import Session

from app.deps import ServicesDep
from app.privacy import CustomerNotFoundError, erase_customer, export_customer
from app.services import Services

router = APIRouter(prefix="/api/admin", tags=["admin"])


def require_admin(request: Request, services: ServicesDep) -> Services:
    token = services.settings.admin_token
    if token is None:
        raise HTTPException(status.HTTP_403_FORBIDDEN, detail="The admin API is disabled; set MEMDESK_ADMIN_TOKEN.")
    header = request.headers.get("authorization", "")
    given = header[7:].strip() if header.lower().startswith("bearer ") else ""
    if not given or not hmac.compare_digest(given, token.get_secret_value()):
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, detail="A valid admin bearer token is required.")
    return services


AdminDep = Annotated[Services, Depends(require_admin)]


def _memory(services: Services) -> Any:
    return services.memory.memory if services.memory is not None else None


@router.get("/customers/{customer_id}/export")
async def export(customer_id: int, services: AdminDep) -> dict[str, Any]:
    def run() -> dict[str, Any]:
        with Session(services.db) as session:
            return export_customer(session, _memory(services), customer_id)

    try:
        return await anyio.to_thread.run_sync(run)
    except CustomerNotFoundError as error:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=str(error)) from error


@router.delete("/customers/{customer_id}")
async def erase(customer_id: int, services: AdminDep) -> dict[str, Any]:
    def run() -> dict[str, int]:
        with Session(services.db) as session:
            return erase_customer(session, _memory(services), customer_id, actor="admin-api")

    try:
        return {"erased": await anyio.to_thread.run_sync(run)}
    except CustomerNotFoundError as error:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=str(error)) from error
