"""The customer API used by the chat widget: sessions, conversations, messages and live events.

Every route but ``POST /sessions`` needs a visitor token, and a customer only ever reaches their own conversations:
another customer's conversation id answers 404 exactly like a missing one. Customers, conversations and messages
are named by their random public ids; integer keys never leave the server.

On SQLite every transaction takes the write lock when it begins (``app.db``), and a ``SessionDep`` session is closed
only after the response, on a worker thread the event loop has to schedule. The agent's turns run their short
database steps on the event loop itself, so a route that left its transaction open would have a turn wait for a lock
whose release waits for the turn (until the busy timeout fails the turn). Every route here therefore ends its
transaction before it returns, reads included.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Query, status
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import AfterValidator, BaseModel, Field, StrictBool
from sqlalchemy import update
from sqlmodel import Session, col, select

from app.identity import IdentityError, Visitor, verify_shop_identity
from app.infra.metrics import Metrics
from app.knowledge.citations import sources_by_message
from app.live.broker import Event, Subscription
from app.models import (
    Conversation,
    ConversationPublic,
    ConversationStatus,
    Customer,
    Message,
    MessagePublic,
    MessageRole,
    StaffMember,
)
from app.ratelimit import VisitorRateLimiter, customer_rate_key
from app.turns.context import start_first_segment
from app.turns.preparation import ButtonHandoff
from app.web.deps import (
    BrokerDep,
    DbDep,
    HandoffDep,
    LimiterDep,
    MetricsDep,
    SessionDep,
    SettingsDep,
    StreamVisitorDep,
    TurnsDep,
    TypingDep,
    VisitorDep,
    VisitorTokensDep,
)
from app.web.errors import error_responses, stream_error_responses
from app.web.event_streams import LastEventIdHeader, SinceQuery, reconnect_delay
from app.web.input import SOME_VISIBLE_TEXT, FreeText, IdentifierText, StrictJSONRoute

router = APIRouter(
    prefix="/api/widget",
    tags=["widget"],
    route_class=StrictJSONRoute,
    responses=error_responses(status.HTTP_401_UNAUTHORIZED),
)

CUSTOMER_EVENT_TYPES = frozenset({"message.created", "message.delta", "typing", "conversation.status", "resync"})
MAX_NAME_CHARS = 200
MAX_PUBLIC_ID_CHARS = 64
ConversationRef = Annotated[str, Path(max_length=MAX_PUBLIC_ID_CHARS, description="The conversation's public id")]


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("The message is empty; type something.")
    return text.strip()


class SessionStart(BaseModel):
    external_id: IdentifierText | None = Field(
        default=None, min_length=1, max_length=128, description="The shop's id of a signed-in customer"
    )
    identity_hmac: IdentifierText | None = Field(
        default=None, max_length=128, description="hex HMAC-SHA256 of external_id"
    )
    name: FreeText | None = Field(default=None, max_length=MAX_NAME_CHARS)
    email: IdentifierText | None = Field(default=None, max_length=320)


class SessionStarted(BaseModel):
    token: str
    customer_id: str = Field(description="The customer's public id")
    verified: bool


class ConversationStart(BaseModel):
    title: FreeText = Field(default="", max_length=MAX_NAME_CHARS)


class MessageIn(BaseModel):
    content: Annotated[FreeText, AfterValidator(_not_blank)] = Field(
        description="The customer's text; its longest accepted length is the server's MEMDESK_MAX_MESSAGE_CHARS (413)",
        json_schema_extra={"pattern": SOME_VISIBLE_TEXT},
    )
    handoff: StrictBool = Field(
        default=False,
        description="The customer pressed 'Talk to a person': the conversation goes to the support team at once",
    )


def _customer(session: Session, visitor: Visitor) -> Customer:
    """The visitor's customer; a token whose customer was erased is no longer anyone's."""
    customer = session.exec(select(Customer).where(Customer.public_id == visitor.customer_public_id)).first()
    if customer is None:
        session.rollback()  # ends the read transaction (see the module docstring)
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            detail="Unknown visitor; start a new widget session.",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return customer


def own_conversation(session: Session, visitor: Visitor, conversation_ref: str) -> Conversation:
    """The conversation, if it is the visitor's; one query checks both."""
    statement = (
        select(Conversation)
        .join(Customer, col(Customer.id) == col(Conversation.customer_id))
        .where(Conversation.public_id == conversation_ref, Customer.public_id == visitor.customer_public_id)
    )
    conversation = session.exec(statement).first()
    if conversation is None:
        _customer(session, visitor)  # a revoked token is a 401 here too, so the widget starts a new session
        session.rollback()  # ends the read transaction (see the module docstring)
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail="Conversation not found.")
    return conversation


@router.post(
    "/sessions",
    response_model=SessionStarted,
    status_code=status.HTTP_201_CREATED,
    openapi_extra={"security": []},
)
def start_session(
    body: SessionStart, session: SessionDep, settings: SettingsDep, tokens: VisitorTokensDep
) -> SessionStarted:
    """A visitor token: anonymous, or linked to a shop customer whose id the shop vouched for with an HMAC."""
    customer: Customer | None = None
    if body.external_id is not None:
        secret = settings.widget_identity_secret
        try:
            verify_shop_identity(secret.get_secret_value() if secret else None, body.external_id, body.identity_hmac)
        except IdentityError as error:
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, detail=str(error)) from error
        customer = session.exec(select(Customer).where(Customer.external_id == body.external_id)).first()
    if customer is None:
        customer = Customer(external_id=body.external_id, name=body.name, email=body.email)
        session.add(customer)
    session.commit()  # also ends the read transaction of a returning customer
    token = tokens.issue(customer.public_id)
    return SessionStarted(token=token, customer_id=customer.public_id, verified=customer.external_id is not None)


@router.post("/conversations", response_model=ConversationPublic, status_code=status.HTTP_201_CREATED)
def start_conversation(body: ConversationStart, visitor: VisitorDep, session: SessionDep) -> ConversationPublic:
    customer = _customer(session, visitor)
    assert customer.id is not None
    conversation = Conversation(customer_id=customer.id, title=body.title)
    session.add(conversation)
    session.flush()
    start_first_segment(session, conversation)
    session.commit()
    return ConversationPublic.of(conversation)


@router.get("/conversations", response_model=list[ConversationPublic])
def list_conversations(visitor: VisitorDep, session: SessionDep) -> list[ConversationPublic]:
    customer = _customer(session, visitor)
    statement = (
        select(Conversation)
        .where(Conversation.customer_id == customer.id)
        .order_by(col(Conversation.updated_at).desc())
    )
    conversations = session.exec(statement).all()
    session.commit()
    return [ConversationPublic.of(c) for c in conversations]


@router.get(
    "/conversations/{conversation_id}/messages",
    response_model=list[MessagePublic],
    responses=error_responses(status.HTTP_404_NOT_FOUND),
)
def list_messages(
    conversation_id: ConversationRef,
    visitor: VisitorDep,
    session: SessionDep,
    after: Annotated[
        str | None,
        Query(max_length=MAX_PUBLIC_ID_CHARS, description="Only the messages after this one (a message's id)"),
    ] = None,
) -> list[MessagePublic]:
    """The conversation's messages in the order they were stored, all of them or those after ``after``."""
    conversation = own_conversation(session, visitor, conversation_id)
    assert conversation.id is not None
    after_key = 0 if after is None else _message_key(session, conversation.id, after)
    statement = (
        select(Message, StaffMember.name)
        .outerjoin(StaffMember, col(StaffMember.id) == col(Message.staff_id))
        .where(Message.conversation_id == conversation.id, col(Message.id) > after_key)
        .order_by(col(Message.id))
    )
    rows = session.exec(statement).all()
    cited = sources_by_message(session, [m.id for m, _ in rows if m.id is not None and m.role == MessageRole.ASSISTANT])
    session.commit()
    public = [
        MessagePublic.of(m, conversation_public_id=conversation_id, staff_name=name, sources=cited.get(m.id or 0, ()))
        for m, name in rows
    ]
    return [message for message in public if message.customer_visible]


def _message_key(session: Session, conversation_key: int, public_id: str) -> int:
    """The internal id of this conversation's message ``public_id``; 404 for one it does not hold, like a missing
    conversation: the widget only pages after a message it was shown, so the message is gone (erased) if not there."""
    statement = select(Message.id).where(Message.public_id == public_id, Message.conversation_id == conversation_key)
    key = session.exec(statement).first()
    if key is None:
        session.rollback()  # ends the read transaction (see the module docstring)
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail="No message of this conversation has this id.")
    return key


@router.post(
    "/conversations/{conversation_id}/messages",
    response_model=MessagePublic,
    status_code=status.HTTP_202_ACCEPTED,
    responses=error_responses(
        status.HTTP_404_NOT_FOUND,
        status.HTTP_409_CONFLICT,
        status.HTTP_413_CONTENT_TOO_LARGE,
        status.HTTP_429_TOO_MANY_REQUESTS,
    ),
)
async def post_message(
    conversation_id: ConversationRef,
    body: MessageIn,
    visitor: VisitorDep,
    db: DbDep,
    settings: SettingsDep,
    limiter: LimiterDep,
    metrics: MetricsDep,
    turns: TurnsDep,
    handoff: HandoffDep,
) -> MessagePublic:
    """Store the customer's message (committed before the reply starts) and answer it in the background.

    Async on purpose: the agent and the live-event broker live on the event loop. It opens its own short session
    instead of ``SessionDep``, whose setup and teardown would cost two thread hops on the busiest route.
    """
    _check_length(body.content, settings.max_message_chars)
    with Session(db, expire_on_commit=False) as session:
        conversation = _touch_open_conversation(session, visitor, conversation_id)
        _check_rate(session, limiter, metrics, visitor)
        message = turns.accept_customer_message(session, conversation, body.content)
        if body.handoff:
            _hand_off_on_button(session, handoff, conversation, body.content)
        return MessagePublic.of(message, conversation_public_id=conversation.public_id)


class TypingIn(BaseModel):
    on: StrictBool = Field(default=True, description="Writing (true) or stopped (false)")


@router.post(
    "/conversations/{conversation_id}/typing",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=error_responses(status.HTTP_404_NOT_FOUND),
)
async def customer_typing(
    conversation_id: ConversationRef, body: TypingIn, visitor: VisitorDep, db: DbDep, typing: TypingDep
) -> None:
    """The customer is writing (``on``) or stopped: staff watching the conversation see "The customer is typing…".
    Signals closer together than a couple of seconds are dropped (``app.live.typing``). Async, like the message
    route: the live-event broker lives on the event loop."""
    with Session(db) as session:
        key = own_conversation(session, visitor, conversation_id).id
        session.commit()
    assert key is not None
    typing.customer(key, on=body.on)


def _check_length(text: str, limit: int) -> None:
    if len(text) > limit:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE,
            detail=f"Messages can be at most {limit} characters; this one has {len(text)}. Split it up.",
        )


def _check_rate(session: Session, limiter: VisitorRateLimiter, metrics: Metrics, visitor: Visitor) -> None:
    """Counts the message against the visitor's limit; past it, 429 (and the conversation's touch rolled back)."""
    wait = limiter.retry_after(customer_rate_key(visitor.customer_public_id))
    if wait is None:
        return
    metrics.rate_limited.inc()
    session.rollback()
    raise HTTPException(
        status.HTTP_429_TOO_MANY_REQUESTS,
        detail=f"You are sending messages too quickly; try again in {int(wait) + 1} seconds.",
        headers={"Retry-After": str(int(wait) + 1)},
    )


def _touch_open_conversation(session: Session, visitor: Visitor, conversation_ref: str) -> Conversation:
    """The visitor's open conversation, its last activity set to now (in the transaction the message commits): one
    statement checks the owner and the status and writes the time. Only when it finds nothing does a second query
    tell a missing conversation (404), a revoked token (401) and a closed conversation (409) apart."""
    owner = select(Customer.id).where(Customer.public_id == visitor.customer_public_id).scalar_subquery()
    touch = (
        update(Conversation)
        .where(
            col(Conversation.public_id) == conversation_ref,
            col(Conversation.customer_id) == owner,
            col(Conversation.status) != ConversationStatus.CLOSED,
        )
        .values(updated_at=datetime.now(UTC))
        .returning(Conversation)
    )
    conversation: Conversation | None = (
        session.execute(touch, execution_options={"synchronize_session": False}).scalars().first()
    )
    if conversation is not None:
        return conversation
    own_conversation(session, visitor, conversation_ref)  # 401 or 404 when it is not the visitor's
    session.rollback()
    raise HTTPException(status.HTTP_409_CONFLICT, detail="This conversation is closed; start a new one.")


def _hand_off_on_button(session: Session, handoff: ButtonHandoff, conversation: Conversation, text: str) -> None:
    """Before the scheduled turn starts (no await since the message was accepted): the turn then finds the
    conversation waiting for a person and stays silent."""
    customer = session.get(Customer, conversation.customer_id)
    session.commit()
    if customer is not None:
        handoff(session, conversation, customer, text)


def _for_customer(event: Event) -> bool:
    """Whether the customer's stream sends this event: one of their types, and no message hidden from them."""
    if event.type not in CUSTOMER_EVENT_TYPES:
        return False
    return event.type != "message.created" or MessagePublic.model_validate(event.data).customer_visible


EVENT_STREAM_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": (
            "Server-sent events. Each has an id; reconnect with Last-Event-ID to get what was missed. "
            "`message.created` carries a message, `message.delta` a fragment of the reply being written, `typing` "
            "the bot's or a staff member's writing (`who` names the person), `conversation.status` the "
            "conversation's state, and `resync` says the history is gone: reload the messages."
        ),
        "content": {
            "text/event-stream": {
                "itemSchema": {
                    "required": ["id", "event", "data"],
                    "properties": {
                        "event": {"enum": sorted(CUSTOMER_EVENT_TYPES)},
                        "data": {"contentMediaType": "application/json"},
                    },
                }
            }
        },
    },
    **stream_error_responses(status.HTTP_401_UNAUTHORIZED, status.HTTP_404_NOT_FOUND),
}


async def visitor_subscription(
    conversation_id: ConversationRef,
    visitor: StreamVisitorDep,
    db: DbDep,
    broker: BrokerDep,
    metrics: MetricsDep,
    last_event_id: LastEventIdHeader = None,
    since: SinceQuery = None,
) -> AsyncIterator[Subscription]:
    """The subscription to the visitor's own conversation (404 for any other), counted as an open stream."""
    with Session(db) as session:
        key = own_conversation(session, visitor, conversation_id).id
    assert key is not None
    with broker.subscribe(key, last_event_id or since) as subscription, metrics.sse_connections.track_inprogress():
        yield subscription


VisitorSubscriptionDep = Annotated[Subscription, Depends(visitor_subscription)]


@router.get(
    "/conversations/{conversation_id}/events",
    response_class=EventSourceResponse,
    responses=EVENT_STREAM_DOC,
)
async def conversation_events(subscription: VisitorSubscriptionDep) -> AsyncIterator[ServerSentEvent]:
    """Server-sent events; reconnect with ``Last-Event-ID`` (or ``?since=``) to receive what was missed."""
    yield reconnect_delay()
    async for event in subscription:
        if _for_customer(event):
            yield ServerSentEvent(id=event.id, event=event.type, data=event.data)
