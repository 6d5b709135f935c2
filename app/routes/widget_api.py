"""The customer API used by the chat widget: sessions, conversations, messages and live events.

Every route but ``POST /sessions`` needs a visitor token, and a customer only ever reaches their own conversations:
another customer's conversation id answers 404 exactly like a missing one.

On SQLite every transaction takes the write lock when it begins (``app.db``), and a ``SessionDep`` session is closed
only after the response, on a worker thread the event loop has to schedule. The agent's turns run their short
database steps on the event loop itself, so a route that left its transaction open would have a turn wait for a lock
whose release waits for the turn (until the busy timeout fails the turn). Every route here therefore ends its
transaction before it returns, reads included.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Request, status
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from sqlmodel import Session, col, select

from app.conversation_context import start_first_segment
from app.deps import ServicesDep, SessionDep, VisitorDep
from app.events import Event, SubscriptionClosed
from app.identity import IdentityError, verify_shop_identity
from app.models import (
    Agent,
    Conversation,
    ConversationStatus,
    Customer,
    Message,
    MessageAuthor,
    MessageRole,
)
from app.services import Services

router = APIRouter(prefix="/api/widget", tags=["widget"])

HEARTBEAT_S = 15.0
CUSTOMER_EVENT_TYPES = frozenset({"message.created", "message.delta", "typing", "conversation.status", "resync"})
MAX_NAME_CHARS = 200


class SessionStart(BaseModel):
    external_id: str | None = Field(default=None, max_length=128, description="The shop's id of a signed-in customer")
    identity_hmac: str | None = Field(default=None, max_length=128, description="hex HMAC-SHA256 of external_id")
    name: str | None = Field(default=None, max_length=MAX_NAME_CHARS)
    email: str | None = Field(default=None, max_length=320)


class SessionStarted(BaseModel):
    token: str
    customer_id: int
    verified: bool


class ConversationStart(BaseModel):
    title: str = Field(default="", max_length=MAX_NAME_CHARS)


class WidgetConversation(BaseModel):
    id: int
    title: str
    status: ConversationStatus
    created_at: datetime
    updated_at: datetime


class WidgetMessage(BaseModel):
    id: int
    role: MessageRole
    author: MessageAuthor
    content: str
    created_at: datetime
    agent_name: str | None = Field(default=None, description="The human agent's display name on their messages")


class MessageIn(BaseModel):
    content: str


def _widget_message(message: Message, *, agent_name: str | None = None) -> WidgetMessage:
    assert message.id is not None
    return WidgetMessage(
        id=message.id,
        role=message.role,
        author=message.author,
        content=message.content or "",
        created_at=message.created_at,
        agent_name=agent_name if message.author == MessageAuthor.AGENT else None,
    )


def _widget_conversation(conversation: Conversation) -> WidgetConversation:
    assert conversation.id is not None
    return WidgetConversation(
        id=conversation.id,
        title=conversation.title,
        status=conversation.status,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
    )


def _own_conversation(session: Session, customer_id: int, conversation_id: int) -> Conversation:
    conversation = session.get(Conversation, conversation_id)
    if conversation is None or conversation.customer_id != customer_id:
        session.rollback()  # ends the read transaction (see the module docstring)
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail="Conversation not found.")
    return conversation


def is_customer_visible(message: Message) -> bool:
    return (
        not message.private
        and message.role in (MessageRole.USER, MessageRole.ASSISTANT)
        and bool((message.content or "").strip())
    )


@router.post("/sessions", response_model=SessionStarted, status_code=status.HTTP_201_CREATED)
def start_session(body: SessionStart, session: SessionDep, services: ServicesDep) -> SessionStarted:
    """A visitor token: anonymous, or linked to a shop customer whose id the shop vouched for with an HMAC."""
    customer: Customer | None = None
    if body.external_id is not None:
        secret = services.settings.widget_identity_secret
        try:
            verify_shop_identity(secret.get_secret_value() if secret else None, body.external_id, body.identity_hmac)
        except IdentityError as error:
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, detail=str(error)) from error
        customer = session.exec(select(Customer).where(Customer.external_id == body.external_id)).first()
    if customer is None:
        customer = Customer(external_id=body.external_id, name=body.name, email=body.email)
        session.add(customer)
    session.commit()  # also ends the read transaction of a returning customer
    assert customer.id is not None
    token = services.visitor_tokens.issue(customer.id)
    return SessionStarted(token=token, customer_id=customer.id, verified=customer.external_id is not None)


@router.post("/conversations", response_model=WidgetConversation, status_code=status.HTTP_201_CREATED)
def start_conversation(body: ConversationStart, visitor: VisitorDep, session: SessionDep) -> WidgetConversation:
    if session.get(Customer, visitor.customer_id) is None:
        session.rollback()
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, detail="Unknown visitor; start a new widget session.")
    conversation = Conversation(customer_id=visitor.customer_id, title=body.title)
    session.add(conversation)
    session.flush()
    start_first_segment(session, conversation)
    session.commit()
    return _widget_conversation(conversation)


@router.get("/conversations", response_model=list[WidgetConversation])
def list_conversations(visitor: VisitorDep, session: SessionDep) -> list[WidgetConversation]:
    statement = (
        select(Conversation)
        .where(Conversation.customer_id == visitor.customer_id)
        .order_by(col(Conversation.updated_at).desc())
    )
    conversations = session.exec(statement).all()
    session.commit()
    return [_widget_conversation(c) for c in conversations]


@router.get("/conversations/{conversation_id}/messages", response_model=list[WidgetMessage])
def list_messages(
    conversation_id: int, visitor: VisitorDep, session: SessionDep, after_id: int = 0
) -> list[WidgetMessage]:
    _own_conversation(session, visitor.customer_id, conversation_id)
    statement = (
        select(Message, Agent.name)
        .outerjoin(Agent, col(Agent.id) == col(Message.agent_id))
        .where(Message.conversation_id == conversation_id, col(Message.id) > after_id)
        .order_by(col(Message.id))
    )
    rows = session.exec(statement).all()
    session.commit()
    return [_widget_message(m, agent_name=name) for m, name in rows if is_customer_visible(m)]


@router.post(
    "/conversations/{conversation_id}/messages", response_model=WidgetMessage, status_code=status.HTTP_202_ACCEPTED
)
async def post_message(
    conversation_id: int, body: MessageIn, visitor: VisitorDep, services: ServicesDep
) -> WidgetMessage:
    """Store the customer's message (committed before the reply starts) and answer it in the background.

    Async on purpose: the agent and the live-event broker live on the event loop. It opens its own short session
    instead of ``SessionDep``, whose setup and teardown would cost two thread hops on the busiest route.
    """
    with Session(services.db, expire_on_commit=False) as session:
        return _post_message(session, services, visitor.customer_id, conversation_id, body)


def _post_message(
    session: Session, services: Services, customer_id: int, conversation_id: int, body: MessageIn
) -> WidgetMessage:
    conversation = _own_conversation(session, customer_id, conversation_id)
    text = body.content.strip()
    limit = services.settings.max_message_chars
    if not text:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail="The message is empty; type something.")
    if len(text) > limit:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE,
            detail=f"Messages can be at most {limit} characters; this one has {len(text)}. Split it up.",
        )
    if conversation.status == ConversationStatus.CLOSED:
        raise HTTPException(status.HTTP_409_CONFLICT, detail="This conversation is closed; start a new one.")
    wait = services.message_limiter.retry_after(f"customer:{customer_id}")
    if wait is not None:
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            detail=f"You are sending messages too quickly; try again in {int(wait) + 1} seconds.",
            headers={"Retry-After": str(int(wait) + 1)},
        )
    message = services.agent.accept_customer_message(session, conversation, text)
    return _widget_message(message)


def _customer_event(event: Event) -> bool:
    if event.type not in CUSTOMER_EVENT_TYPES:
        return False
    if event.type == "message.created":
        data = event.data
        visible_role = data.get("role") in ("user", "assistant")
        return bool(visible_role and not data.get("private") and (data.get("content") or "").strip())
    return True


@router.get("/conversations/{conversation_id}/events")
async def conversation_events(
    conversation_id: int,
    request: Request,
    visitor: VisitorDep,
    services: ServicesDep,
    last_event_id: Annotated[str | None, Header()] = None,
    since: str | None = None,
) -> StreamingResponse:
    """Server-sent events; reconnect with ``Last-Event-ID`` (or ``?since=``) to receive what was missed."""
    with Session(services.db) as session:
        _own_conversation(session, visitor.customer_id, conversation_id)
    subscription = services.broker.subscribe(conversation_id, last_event_id or since)

    async def stream() -> AsyncIterator[str]:
        with subscription:
            yield "retry: 2000\n\n"
            while not await request.is_disconnected():
                try:
                    event = await subscription.next(HEARTBEAT_S)
                except SubscriptionClosed:
                    return
                if event is None:
                    yield ": keep-alive\n\n"
                elif _customer_event(event):
                    yield event.to_sse()

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)
