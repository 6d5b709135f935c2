"""The inbox (``/console``): the conversation list with its filters, its live updates, and the search across
conversations (``/console/search``).

The page holds the list as a fragment (``/console/inbox``) that reloads whenever the console event channel
(``/console/events``) says a conversation appeared or changed, at most once per 300 ms, and once more when a burst
of changes is over (``app/static/console.js``), so the last change of a burst is never missed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import Depends, Query, Request
from fastapi.responses import HTMLResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent
from sqlalchemy import Engine
from sqlmodel import Session

from app.console.inbox import InboxFilter, InboxPage, inbox_page
from app.console.labels import LabelError, normalized
from app.console.permissions import Staff
from app.console.search import MAX_QUERY_CHARS, RESULTS_SHOWN, SearchResult, search
from app.live.broker import Event, Subscription
from app.models import ConversationStatus
from app.web.console.common import ConsoleError, console_event, console_router, console_stream, page
from app.web.deps import BrokerDep, DbDep, SignedInCheckDep, WorkerDep
from app.web.event_streams import LastEventIdHeader
from app.web.input import DatabaseInt

router = console_router()

MAX_PAGE = 10_000
StatusQuery = Annotated[ConversationStatus | None, Query()]
MineQuery = Annotated[bool, Query()]
PageQuery = Annotated[DatabaseInt, Query(alias="page", ge=1, le=MAX_PAGE)]
LabelQuery = Annotated[str | None, Query(max_length=64)]


def _load(db: Engine, staff: Staff, wanted: InboxFilter) -> InboxPage:
    with Session(db) as session:
        return inbox_page(session, staff.id, wanted)


async def inbox_listing(
    db: DbDep,
    staff: WorkerDep,
    status: StatusQuery = None,
    mine: MineQuery = False,
    page_number: PageQuery = 1,
    label: LabelQuery = None,
) -> InboxPage:
    """The inbox page the query asks for: the same for the whole page and for the list fragment it reloads."""
    try:
        wanted_label = normalized(label) if label else None
    except LabelError as error:
        raise ConsoleError(status_code=422, message=str(error)) from error
    wanted = InboxFilter(status, mine, page_number, wanted_label)
    return await anyio.to_thread.run_sync(_load, db, staff, wanted)


InboxListingDep = Annotated[InboxPage, Depends(inbox_listing)]


@router.get("", response_class=HTMLResponse)
async def inbox(request: Request, staff: WorkerDep, listing: InboxListingDep) -> HTMLResponse:
    return page(request, "inbox.html", staff=staff, inbox=listing, statuses=list(ConversationStatus))


@router.get("/inbox", response_class=HTMLResponse)
async def inbox_list(request: Request, staff: WorkerDep, listing: InboxListingDep) -> HTMLResponse:
    return page(request, "_inbox_list.html", staff=staff, inbox=listing, statuses=list(ConversationStatus))


def _search(db: Engine, query: str) -> list[SearchResult]:
    with Session(db) as session:
        return search(session, query)


@router.get("/search", response_class=HTMLResponse)
async def search_page(
    request: Request, db: DbDep, staff: WorkerDep, q: Annotated[str, Query(max_length=MAX_QUERY_CHARS)] = ""
) -> HTMLResponse:
    """Conversations by an identifier, a customer or their text (``app.console.search``)."""
    results = await anyio.to_thread.run_sync(_search, db, q) if q.strip() else []
    return page(request, "search.html", staff=staff, query=q, results=results, shown=RESULTS_SHOWN)


async def inbox_subscription(
    staff: WorkerDep, broker: BrokerDep, last_event_id: LastEventIdHeader = None
) -> AsyncIterator[Subscription]:
    """The console channel's subscription, for staff who work conversations (``app.web.event_streams``)."""
    with broker.subscribe_console(last_event_id) as subscription:
        yield subscription


InboxSubscriptionDep = Annotated[Subscription, Depends(inbox_subscription)]


async def _inbox_event(event: Event) -> ServerSentEvent:
    return console_event(event, "inbox")


@router.get("/events", response_class=EventSourceResponse)
async def inbox_events(
    subscription: InboxSubscriptionDep,
    still_signed_in: SignedInCheckDep,
    staff: WorkerDep,
) -> AsyncIterator[ServerSentEvent]:
    """One ``inbox`` event whenever any conversation appears or changes."""
    async for sent in console_stream(subscription, _inbox_event, still_signed_in):
        yield sent
