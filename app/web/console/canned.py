"""Canned replies (``/console/canned``): the team's and each member's own, added and deleted here, and the
composer's suggestions as a member types ``/`` (``/console/canned/suggest``, filled in for the conversation)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import Form, Path, Query, Request, status
from fastapi.responses import HTMLResponse, JSONResponse
from sqlalchemy import Engine
from sqlmodel import Session, select

from app.console import canned
from app.console.audit import record_audit_event
from app.console.permissions import Permission, Staff
from app.models import Conversation
from app.models.console import CANNED_BODY_LENGTH
from app.web.console.common import ConsoleError, after_action, console_router, page
from app.web.deps import DbDep, WorkerDep
from app.web.input import DatabaseInt

router = console_router("/console/canned")

MAX_QUERY_CHARS = 64
ShortcutField = Annotated[str, Form(max_length=64)]
BodyField = Annotated[str, Form(max_length=CANNED_BODY_LENGTH * 2)]
ScopeField = Annotated[str, Form(max_length=16)]


def _listing(db: Engine, staff: Staff) -> list[canned.CannedView]:
    with Session(db) as session:
        found = canned.visible(session, staff)
        session.commit()
    return found


def _page(request: Request, staff: Staff, listed: list[canned.CannedView], **context: Any) -> HTMLResponse:
    return page(
        request,
        "canned.html",
        staff=staff,
        replies=listed,
        fields=canned.FIELDS,
        can_manage_team=staff.can(Permission.MANAGE_CANNED_REPLIES),
        active="canned",
        **context,
    )


@router.get("", response_class=HTMLResponse)
async def canned_page(request: Request, staff: WorkerDep, db: DbDep) -> HTMLResponse:
    return _page(request, staff, await anyio.to_thread.run_sync(_listing, db, staff))


def _add(db: Engine, staff: Staff, shortcut: str, body: str, team: bool) -> None:
    with Session(db) as session:
        reply = canned.add(session, staff, shortcut, body, team=team)
        session.flush()
        detail = {"shortcut": reply.shortcut, "team": team}
        record_audit_event(
            session,
            actor=staff.actor,
            action="console.canned_add",
            target_type="canned_reply",
            target_id=str(reply.id),
            detail=detail,
        )
        session.commit()


@router.post("", response_class=HTMLResponse)
async def add_reply(
    request: Request, staff: WorkerDep, db: DbDep, shortcut: ShortcutField, body: BodyField, scope: ScopeField = "own"
) -> Any:
    try:
        await anyio.to_thread.run_sync(_add, db, staff, shortcut, body, scope == "team")
    except PermissionError as error:
        raise ConsoleError(status.HTTP_403_FORBIDDEN, str(error)) from error
    except canned.CannedReplyError as error:
        listed = await anyio.to_thread.run_sync(_listing, db, staff)
        form = {"shortcut": shortcut, "body": body, "scope": scope}
        return _page(request, staff, listed, error=str(error), form=form, status_code=422)
    return after_action(request, "/console/canned")


def _remove(db: Engine, staff: Staff, reply_id: int) -> None:
    with Session(db) as session:
        reply = canned.remove(session, staff, reply_id)
        detail = {"shortcut": reply.shortcut, "team": reply.owner_staff_id is None}
        record_audit_event(
            session,
            actor=staff.actor,
            action="console.canned_delete",
            target_type="canned_reply",
            target_id=str(reply_id),
            detail=detail,
        )
        session.commit()


@router.post("/{reply_id}/delete")
async def delete_reply(request: Request, staff: WorkerDep, db: DbDep, reply_id: Annotated[DatabaseInt, Path()]) -> Any:
    try:
        await anyio.to_thread.run_sync(_remove, db, staff, reply_id)
    except LookupError as error:
        raise ConsoleError(status.HTTP_404_NOT_FOUND, str(error)) from error
    except PermissionError as error:
        raise ConsoleError(status.HTTP_403_FORBIDDEN, str(error)) from error
    return after_action(request, "/console/canned")


def _suggest(db: Engine, staff: Staff, query: str, conversation: str | None) -> list[dict[str, Any]]:
    with Session(db) as session:
        found = canned.visible(session, staff, query)[: canned.SUGGESTIONS_SHOWN]
        key = None
        if conversation:
            key = session.exec(select(Conversation.id).where(Conversation.public_id == conversation)).first()
        values = canned.field_values(session, key, staff)
        session.commit()
    return [{"shortcut": view.shortcut, "team": view.team, "text": canned.fill(view.body, values)} for view in found]


@router.get("/suggest")
async def suggest(
    staff: WorkerDep,
    db: DbDep,
    q: Annotated[str, Query(max_length=MAX_QUERY_CHARS)] = "",
    conversation: Annotated[str | None, Query(max_length=64)] = None,
) -> JSONResponse:
    """The replies matching what follows the ``/``, filled in for ``conversation``."""
    found = await anyio.to_thread.run_sync(_suggest, db, staff, q, conversation)
    return JSONResponse({"replies": found}, headers={"Cache-Control": "no-store"})
