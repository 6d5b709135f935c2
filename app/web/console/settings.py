"""Each staff member's own settings (``/console/settings``): a browser notification and a sound when a customer
waits for them, and the JSON every console page reads for its unread count and notifications
(``/console/attention``, see ``app.console.attention`` and ``app/static/console-attention.js``)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import Form, Request
from fastapi.responses import HTMLResponse, JSONResponse
from sqlalchemy import Engine
from sqlmodel import Session

from app.console.attention import attention
from app.console.audit import record_audit_event
from app.console.permissions import Staff
from app.models import StaffMember
from app.web.console.common import after_action, console_router, page
from app.web.deps import ConsoleStaffDep, DbDep, WorkerDep

router = console_router()

Toggle = Annotated[str | None, Form(max_length=8)]


def _attention(db: Engine, staff_id: int) -> list[dict[str, Any]]:
    with Session(db) as session:
        return [item.as_json() for item in attention(session, staff_id)]


@router.get("/attention")
async def attention_now(staff: WorkerDep, db: DbDep) -> JSONResponse:
    """What needs this staff member now; the pages poll it on every inbox event."""
    items = await anyio.to_thread.run_sync(_attention, db, staff.id)
    return JSONResponse({"count": len(items), "items": items}, headers={"Cache-Control": "no-store"})


@router.get("/settings", response_class=HTMLResponse)
async def settings_page(request: Request, staff: ConsoleStaffDep) -> HTMLResponse:
    return page(request, "settings.html", staff=staff, active="settings")


def _save(db: Engine, staff: Staff, desktop: bool, sound: bool) -> None:
    with Session(db) as session:
        member = session.get(StaffMember, staff.id)
        assert member is not None
        member.notify_desktop, member.notify_sound = desktop, sound
        session.add(member)
        detail = {"notify_desktop": desktop, "notify_sound": sound}
        record_audit_event(
            session,
            actor=staff.actor,
            action="console.settings",
            target_type="staff",
            target_id=str(staff.id),
            detail=detail,
        )
        session.commit()


@router.post("/settings")
async def save_settings(
    request: Request, staff: ConsoleStaffDep, db: DbDep, desktop: Toggle = None, sound: Toggle = None
) -> Any:
    await anyio.to_thread.run_sync(_save, db, staff, desktop == "on", sound == "on")
    return after_action(request, "/console/settings?saved=1")
