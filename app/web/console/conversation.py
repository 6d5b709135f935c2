"""One conversation in the console: the page, its live stream, and what staff do to it.

The page renders the transcript once; its stream (``/events``, resuming after the page's own event position) then
sends each new message as a rendered entry, an updated tool line when a tool result arrives, ``state`` when the
status or assignment changes (the header reloads) and ``compaction`` when the bot compacted (the transcript
reloads). Two people on one conversation therefore see each other's actions as they happen.

Actions answer htmx with the refreshed header (state changes) or a cleared composer (messages); without htmx they
redirect back to the page.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

import anyio
from fastapi import Depends, Form, Path, Query, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent
from sqlalchemy import Engine
from sqlmodel import Session

from app.console import actions
from app.console.audit import record_audit_event
from app.console.handoff import (
    HandoffSummaryTimeout,
    handoff_view,
    write_handoff_summary,
)
from app.console.permissions import Staff
from app.console.rendering import render
from app.console.summary_jobs import SUMMARY_EVENT, SummaryJobs
from app.console.transcript import load_transcript
from app.console.view import live_entry, load_page, load_state
from app.live.broker import Event, Subscription
from app.live.typing import CUSTOMER_TYPING
from app.models import Conversation
from app.web.console.common import ConsoleError, after_action, console_event, console_router, console_stream, page
from app.web.deps import (
    BrokerDep,
    DbDep,
    GatewayDep,
    SettingsDep,
    SignedInCheckDep,
    SummariesDep,
    TurnsDep,
    TypingDep,
    WorkerDep,
)
from app.web.event_streams import LastEventIdHeader, SinceQuery
from app.web.input import DatabaseInt

router = console_router("/console/conversations")

MAX_PUBLIC_ID_CHARS = 64
MAX_TEXT_CHARS = 20_000
ConversationRef = Annotated[str, Path(max_length=MAX_PUBLIC_ID_CHARS)]
TextField = Annotated[str, Form(max_length=MAX_TEXT_CHARS)]
BeforeQuery = Annotated[DatabaseInt | None, Query(ge=1, description="Page back from this message")]
# Empty: nobody (a form field left empty is its default).
AssigneeField = Annotated[DatabaseInt | None, Form()]
STATE_EVENTS = frozenset({"conversation.status", "conversation.assigned", actions.LABELS_EVENT, SUMMARY_EVENT})
CUSTOMER_TYPING_TEXT = "The customer is typing…"


def _url(ref: str) -> str:
    return f"/console/conversations/{ref}"


def _conversation(session: Session, ref: str) -> Conversation:
    try:
        return actions.find_conversation(session, ref)
    except actions.ActionError as error:
        raise ConsoleError(error.status_code, str(error)) from error


@router.get("/{ref}", response_class=HTMLResponse)
async def conversation_page(
    request: Request,
    ref: ConversationRef,
    db: DbDep,
    broker: BrokerDep,
    summaries: SummariesDep,
    staff: WorkerDep,
    before: BeforeQuery = None,
) -> Any:
    """The conversation with its latest page of messages, or (``before``: the "Show earlier messages" link
    without JavaScript) from the page before that message through the latest."""

    def load() -> Any:
        with Session(db, expire_on_commit=False) as session:
            conversation = _conversation(session, ref)
            assert conversation.id is not None
            return load_page(session, conversation, staff_id=staff.id, before_id=before)

    key = await anyio.to_thread.run_sync(_key, db, ref)
    position = broker.position(key)  # before loading: a message stored meanwhile comes again, not never
    view = await anyio.to_thread.run_sync(load)
    summary = _summary_state(summaries, key)
    return page(request, "conversation.html", staff=staff, view=view, position=position, **summary)


def _key(db: Engine, ref: str) -> int:
    with Session(db) as session:
        key = _conversation(session, ref).id
        session.commit()
    assert key is not None
    return key


def _state_fragment(
    request: Request, db: Engine, staff: Staff, ref: str, summaries: SummaryJobs | None = None
) -> HTMLResponse:
    with Session(db, expire_on_commit=False) as session:
        state = load_state(session, _conversation(session, ref))
        key = state.conversation.id or 0
        handoff = handoff_view(session, key)
        session.commit()
    summary = _summary_state(summaries, key)
    return page(request, "_state.html", staff=staff, state=state, handoff=handoff, **summary)


def _summary_state(summaries: SummaryJobs | None, key: int) -> dict[str, Any]:
    """Whether a summary is being written for the card, and why the last attempt stored nothing."""
    if summaries is None:
        return {"summarizing": False, "summary_problem": None}
    return {"summarizing": summaries.running(key), "summary_problem": summaries.problem(key)}


@router.get("/{ref}/state", response_class=HTMLResponse)
def conversation_state(
    request: Request, ref: ConversationRef, db: DbDep, summaries: SummariesDep, staff: WorkerDep
) -> Any:
    return _state_fragment(request, db, staff, ref, summaries)


@router.get("/{ref}/transcript", response_class=HTMLResponse)
def conversation_transcript(
    request: Request, ref: ConversationRef, db: DbDep, staff: WorkerDep, before: BeforeQuery = None
) -> Any:
    """The latest page of the transcript (reloaded after a compaction), or with ``before`` only the page before
    that message (htmx puts it above, in place of the "Show earlier messages" control)."""
    with Session(db, expire_on_commit=False) as session:
        conversation = _conversation(session, ref)
        transcript = load_transcript(session, conversation.id or 0, before_id=before, through_latest=before is None)
        session.commit()
    fragment = "_transcript.html" if before is None else "_transcript_page.html"
    return page(request, fragment, staff=staff, transcript=transcript, ref=ref)


async def conversation_subscription(
    ref: ConversationRef,
    staff: WorkerDep,
    db: DbDep,
    broker: BrokerDep,
    last_event_id: LastEventIdHeader = None,
    since: SinceQuery = None,
) -> AsyncIterator[Subscription]:
    """The conversation's subscription, for staff who work conversations (``app.web.event_streams``)."""
    key = await anyio.to_thread.run_sync(_key, db, ref)
    with broker.subscribe(key, last_event_id or since) as subscription:
        yield subscription


ConversationSubscriptionDep = Annotated[Subscription, Depends(conversation_subscription)]


@router.get("/{ref}/events", response_class=EventSourceResponse)
async def conversation_events(
    subscription: ConversationSubscriptionDep, db: DbDep, still_signed_in: SignedInCheckDep, staff: WorkerDep
) -> AsyncIterator[ServerSentEvent]:
    async def frame(event: Event) -> ServerSentEvent | None:
        if event.type == "message.created" and isinstance(event.data.get("id"), str):
            html = await anyio.to_thread.run_sync(_rendered_entry, db, staff, event.conversation_id, event.data["id"])
            return console_event(event, "transcript", html) if html else None
        if event.type in STATE_EVENTS:
            return console_event(event, "state")
        if event.type in ("context.compacted", "resync"):
            return console_event(event, "compaction")
        if event.type == CUSTOMER_TYPING:
            return console_event(event, "customer-typing", CUSTOMER_TYPING_TEXT if event.data.get("on") else "")
        return None

    async for sent in console_stream(subscription, frame, still_signed_in):
        yield sent


def _rendered_entry(db: Engine, staff: Staff, conversation_id: int, message_public_id: str) -> str | None:
    with Session(db) as session:
        entry = live_entry(session, conversation_id, message_public_id)
        session.commit()
    if entry is None:
        return None
    if entry.tool_line is not None:
        return render("_tool_line.html", line=entry.tool_line, oob=True)
    return render("_entry.html", message=entry.message, staff=staff)


async def _act(request: Request, db: Engine, staff: Staff, ref: str, action: Callable[..., Any]) -> Response:
    """Run a state change on the event loop (it publishes live events), then answer with the refreshed header."""
    with Session(db, expire_on_commit=False) as session:
        conversation = _conversation(session, ref)
        try:
            action(session, conversation)
        except actions.ActionError as error:
            session.rollback()
            raise ConsoleError(error.status_code, str(error)) from error
    if request.headers.get("HX-Request") == "true":
        return await anyio.to_thread.run_sync(_state_fragment, request, db, staff, ref)
    return after_action(request, _url(ref))


@router.post("/{ref}/typing", status_code=204)
async def staff_typing(
    ref: ConversationRef, db: DbDep, typing: TypingDep, staff: WorkerDep, on: Annotated[bool, Form()] = True
) -> Response:
    """This staff member is writing a reply (``on``) or stopped: the customer sees "Sam is typing…"."""
    key = await anyio.to_thread.run_sync(_key, db, ref)
    typing.staff(key, staff.id, staff.name, on=on)
    return Response(status_code=204)


@router.post("/{ref}/take-over")
async def take_over(request: Request, ref: ConversationRef, db: DbDep, broker: BrokerDep, staff: WorkerDep) -> Response:
    return await _act(request, db, staff, ref, lambda s, c: actions.take_over(s, broker, staff, c))


@router.post("/{ref}/hand-back")
async def hand_back(
    request: Request, ref: ConversationRef, db: DbDep, broker: BrokerDep, turns: TurnsDep, staff: WorkerDep
) -> Response:
    return await _act(request, db, staff, ref, lambda s, c: actions.hand_back(s, broker, turns, staff, c))


@router.post("/{ref}/close")
async def close(request: Request, ref: ConversationRef, db: DbDep, broker: BrokerDep, staff: WorkerDep) -> Response:
    return await _act(request, db, staff, ref, lambda s, c: actions.close(s, broker, staff, c))


@router.post("/{ref}/reopen")
async def reopen(request: Request, ref: ConversationRef, db: DbDep, broker: BrokerDep, staff: WorkerDep) -> Response:
    return await _act(request, db, staff, ref, lambda s, c: actions.reopen(s, broker, staff, c))


@router.post("/{ref}/assign")
async def assign(
    request: Request,
    ref: ConversationRef,
    db: DbDep,
    broker: BrokerDep,
    staff: WorkerDep,
    assigned_staff_id: AssigneeField = None,
) -> Response:
    return await _act(request, db, staff, ref, lambda s, c: actions.assign(s, broker, staff, c, assigned_staff_id))


LabelField = Annotated[str, Form(max_length=80)]


@router.post("/{ref}/labels")
async def add_label(
    request: Request, ref: ConversationRef, db: DbDep, broker: BrokerDep, staff: WorkerDep, label: LabelField
) -> Response:
    return await _act(request, db, staff, ref, lambda s, c: actions.label(s, broker, staff, c, label))


@router.post("/{ref}/labels/remove")
async def remove_label(
    request: Request, ref: ConversationRef, db: DbDep, broker: BrokerDep, staff: WorkerDep, label: LabelField
) -> Response:
    return await _act(request, db, staff, ref, lambda s, c: actions.unlabel(s, broker, staff, c, label))


async def _write(request: Request, db: Engine, staff: Staff, ref: str, action: Callable[..., Any]) -> Response:
    with Session(db, expire_on_commit=False) as session:
        conversation = _conversation(session, ref)
        try:
            action(session, conversation)
        except actions.ActionError as error:
            session.rollback()
            raise ConsoleError(error.status_code, str(error)) from error
    return after_action(request, _url(ref), "_composer.html", staff=staff, ref=ref)


@router.post("/{ref}/reply")
async def reply(
    request: Request, ref: ConversationRef, db: DbDep, broker: BrokerDep, staff: WorkerDep, text: TextField = ""
) -> Response:
    return await _write(request, db, staff, ref, lambda s, c: actions.reply(s, broker, staff, c, text))


@router.post("/{ref}/note")
async def note(
    request: Request, ref: ConversationRef, db: DbDep, broker: BrokerDep, staff: WorkerDep, text: TextField = ""
) -> Response:
    return await _write(request, db, staff, ref, lambda s, c: actions.add_note(s, broker, staff, c, text))


@router.post("/{ref}/handoff-summary", response_class=HTMLResponse)
async def summarize(
    request: Request,
    ref: ConversationRef,
    db: DbDep,
    gateway: GatewayDep,
    settings: SettingsDep,
    summaries: SummariesDep,
    staff: WorkerDep,
) -> Any:
    """Start writing the handoff summary with the summary model and answer at once: the card says it is being
    written, and the conversation's ``handoff.summary`` event reloads it when the summary is there
    (``app.console.summary_jobs``)."""
    key = await anyio.to_thread.run_sync(_key, db, ref)

    def write() -> None:
        written = write_handoff_summary(db, gateway, settings, conversation_id=key, requested_by=staff.id)
        with Session(db) as session:
            detail = {"summary_id": written.id if written else None}
            record_audit_event(
                session, actor=staff.actor, action="console.handoff_summary", target_type="conversation",
                target_id=key, detail=detail,
            )  # fmt: skip
            session.commit()

    summaries.start(key, write, HandoffSummaryTimeout)
    return await anyio.to_thread.run_sync(_state_fragment, request, db, staff, ref, summaries)
