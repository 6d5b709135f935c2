"""The inbox (``/console``): the conversation list with its filters, and its live updates.

The page holds the list as a fragment (``/console/inbox``) that reloads whenever the console event channel
(``/console/events``) says a conversation appeared or changed, at most once per 300 ms, and once more when a burst
of changes is over (``app/static/console.js``), so the last change of a burst is never missed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

import anyio
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import HTMLResponse, StreamingResponse
from sqlmodel import Session

from app.console import auth
from app.console.inbox import InboxFilter, InboxPage, inbox_page
from app.console.permissions import Staff
from app.live.broker import Event
from app.models import ConversationStatus
from app.services import Services
from app.web.console.common import event_stream, page, sse_frame
from app.web.deps import ServicesDep, WorkerDep, console_signer

router = APIRouter(prefix="/console", include_in_schema=False)

MAX_PAGE = 10_000
StatusQuery = Annotated[ConversationStatus | None, Query()]
MineQuery = Annotated[bool, Query()]
PageQuery = Annotated[int, Query(ge=1, le=MAX_PAGE)]


def _load(services: Services, staff: Staff, wanted: InboxFilter) -> InboxPage:
    with Session(services.db) as session:
        return inbox_page(session, staff.id, wanted)


@router.get("", response_class=HTMLResponse)
async def inbox(
    request: Request,
    services: ServicesDep,
    staff: WorkerDep,
    status: StatusQuery = None,
    mine: MineQuery = False,
    page_number: Annotated[int, Query(alias="page", ge=1, le=MAX_PAGE)] = 1,
) -> HTMLResponse:
    listing = await anyio.to_thread.run_sync(_load, services, staff, InboxFilter(status, mine, page_number))
    return page(request, "inbox.html", staff=staff, inbox=listing, statuses=list(ConversationStatus))


@router.get("/inbox", response_class=HTMLResponse)
async def inbox_list(
    request: Request,
    services: ServicesDep,
    staff: WorkerDep,
    status: StatusQuery = None,
    mine: MineQuery = False,
    page_number: Annotated[int, Query(alias="page", ge=1, le=MAX_PAGE)] = 1,
) -> HTMLResponse:
    listing = await anyio.to_thread.run_sync(_load, services, staff, InboxFilter(status, mine, page_number))
    return page(request, "_inbox_list.html", staff=staff, inbox=listing, statuses=list(ConversationStatus))


def signed_in_check(request: Request, services: Services) -> Callable[[], Awaitable[bool]]:
    """A coroutine function telling whether this request's session is still valid (for long-lived streams)."""
    token = console_signer(services.settings).session_token(request.cookies.get(auth.SESSION_COOKIE))

    def check() -> bool:
        if token is None:
            return False
        with Session(services.db) as session:
            return auth.load_session(session, token, services.settings, activity=False) is not None

    async def still() -> bool:
        return await anyio.to_thread.run_sync(check)

    return still


@router.get("/events", response_class=StreamingResponse)
async def inbox_events(
    request: Request,
    services: ServicesDep,
    staff: WorkerDep,
    last_event_id: Annotated[str | None, Header(max_length=64)] = None,
) -> StreamingResponse:
    """One ``inbox`` event whenever any conversation appears or changes."""

    async def frame(event: Event) -> str:
        return sse_frame(event, "inbox")

    subscription = services.broker.subscribe_console(last_event_id)
    return event_stream(request, subscription, frame, signed_in_check(request, services))
