"""A scenario's customer at the widget API of one running app (``WidgetVisit``), and what a day left in its database
(``read_transcript``).

The visit signs in as the shop signs a customer in (a verified session), opens a conversation a day, posts each line
as the widget does and waits until it is answered: a reply (the bot's, or a person's takeover) after the customer's
last message, with no turn scheduled or running. A burst posts its lines one after another without waiting between
them, then waits once, as a customer typing fast does.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any

import httpx
from sqlalchemy import Engine, text
from sqlmodel import Session, col, select

from app.evals.checks import DayRecord, ToolCallRecord
from app.evals.judge import TOOL_RESULT_CHARS
from app.evals.scenario import Customer as CustomerSpec
from app.identity import shop_identity_hmac
from app.models import Conversation, ConversationStatus, Customer, Message, MessageAuthor, MessageRole, PromiseRecord
from app.models.shop import Order

REPLY_TIMEOUT_S = 180.0
POLL_S = 0.02
CITED_CHUNKS = (
    "SELECT c.heading_path || ' ' || c.text FROM message_sources s JOIN messages m ON m.id = s.message_id "
    "JOIN knowledge_chunks c ON c.id = s.chunk_id WHERE m.conversation_id = :key"
)


class WidgetVisit:
    """One scenario's customer at the widget API of one running app."""

    def __init__(self, app: Any, client: httpx.AsyncClient, customer_id: int, timeout_s: float) -> None:
        self.app = app
        self.client = client
        self.customer_id = customer_id
        self.timeout_s = timeout_s
        # Customers memdesk erased during the visit: their memories must stay gone.
        self.erased_customer_ids: list[int] = []

    @property
    def services(self) -> Any:
        return self.app.state.services

    async def open_session(self, spec: CustomerSpec) -> None:
        """A verified session for the customer (a new customer of that name when memdesk holds none, as after an
        erasure); ``customer_id`` is theirs after it."""
        secret = self.services.settings.widget_identity_secret.get_secret_value()
        body = {"external_id": spec.external_id, "identity_hmac": shop_identity_hmac(secret, spec.external_id),
                "name": spec.name, "email": spec.email}  # fmt: skip
        response = await self.client.post("/api/widget/sessions", json=body)
        response.raise_for_status()
        self.client.headers["Authorization"] = f"Bearer {response.json()['token']}"
        with Session(self.services.db) as session:
            key = session.exec(select(Customer.id).where(Customer.public_id == response.json()["customer_id"])).one()
        assert key is not None
        if key != self.customer_id:
            self.erased_customer_ids.append(self.customer_id)
        self.customer_id = key

    async def new_conversation(self) -> str:
        response = await self.client.post("/api/widget/conversations", json={"title": "Help"})
        response.raise_for_status()
        conversation_id: str = response.json()["id"]
        return conversation_id

    async def say(self, conversation: str, lines: Sequence[str]) -> float:
        """Post ``lines`` one after another and wait until the last is answered; the milliseconds it took."""
        started = time.perf_counter()
        for line in lines:
            path = f"/api/widget/conversations/{conversation}/messages"
            response = await self.client.post(path, json={"content": line})
            if response.status_code != 202:
                raise RuntimeError(f"the widget API refused the message: {response.status_code} {response.text[:200]}")
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            if self.services.turns.idle and (self._answered(conversation) or self._not_bot(conversation)):
                return (time.perf_counter() - started) * 1000
            await asyncio.sleep(POLL_S)
        raise TimeoutError(f"no reply within {self.timeout_s:.0f} s to: {lines[-1][:80]}")

    def _answered(self, conversation: str) -> bool:
        with Session(self.services.db) as session:
            key = conversation_key(session, conversation)
            return last_line_answered(session, key)

    def _not_bot(self, conversation: str) -> bool:
        with Session(self.services.db) as session:
            found = session.exec(select(Conversation.status).where(Conversation.public_id == conversation)).first()
            return found is not None and found != ConversationStatus.BOT


def conversation_key(session: Session, public_id: str) -> int:
    key = session.exec(select(Conversation.id).where(Conversation.public_id == public_id)).one()
    assert key is not None
    return key


def last_line_answered(session: Session, key: int) -> bool:
    """Whether a reply with text (the bot's or a person's) follows the customer's last message."""
    last = session.exec(
        select(Message.id).where(Message.conversation_id == key, Message.author == MessageAuthor.CUSTOMER)
        .order_by(col(Message.id).desc())
    ).first()  # fmt: skip
    reply = session.exec(
        select(Message.id).where(
            Message.conversation_id == key,
            Message.role == MessageRole.ASSISTANT,
            col(Message.content).is_not(None),
            Message.content != "",
            col(Message.id) > (last or 0),
        )
    ).first()
    return reply is not None


def read_transcript(db: Engine, conversation: str, record: DayRecord) -> None:
    """What the day's conversation holds, into ``record``: replies, tool calls and results, cited knowledge, the
    customer's messages as stored, whether it was handed off, the customer's orders and promises."""
    with Session(db) as session:
        key = conversation_key(session, conversation)
        row = session.exec(select(Conversation).where(Conversation.id == key)).one()
        record.handed_off = row.status in (ConversationStatus.NEEDS_HUMAN, ConversationStatus.HUMAN)
        record.last_line_answered = last_line_answered(session, key)
        messages = session.exec(select(Message).where(Message.conversation_id == key).order_by(col(Message.id))).all()
        for message in messages:
            _read_message(message, record)
        cited = session.execute(text(CITED_CHUNKS), {"key": key}).scalars()
        record.cited_knowledge = [str(chunk) for chunk in cited]
        orders = session.exec(select(Order.number, Order.status).where(Order.customer_id == row.customer_id))
        record.order_statuses = {number: str(status) for number, status in orders}


def transcript_of(db: Engine, conversation: str) -> list[tuple[str, str]]:
    """The conversation so far, as (who, what) pairs."""
    record = DayRecord()
    read_transcript(db, conversation, record)
    return record.transcript


def read_promises(db: Engine, customer_id: int, record: DayRecord) -> None:
    with Session(db) as session:
        promises = session.exec(select(PromiseRecord).where(PromiseRecord.customer_id == customer_id)).all()
        record.promise_statuses = [(promise.text, str(promise.status)) for promise in promises]


# How the judge's transcript names each side of the conversation.
SPEAKERS = {
    MessageAuthor.CUSTOMER: "Customer",
    MessageAuthor.BOT: "Support (bot)",
    MessageAuthor.STAFF: "Support (staff)",
}


def _read_message(message: Message, record: DayRecord) -> None:
    record.tokens += (message.prompt_tokens or 0) + (message.completion_tokens or 0)
    if message.role == MessageRole.TOOL and message.content:
        record.transcript.append(("Tool result", message.content[:TOOL_RESULT_CHARS]))
    elif message.author in SPEAKERS and message.content:
        record.transcript.append((SPEAKERS[message.author], message.content))
    if message.author == MessageAuthor.CUSTOMER and message.content is not None:
        record.stored_customer_lines.append(message.content)
    if message.role == MessageRole.TOOL and message.content:
        record.tool_results.append(message.content)
    if message.role == MessageRole.ASSISTANT and message.author == MessageAuthor.BOT and message.content:
        record.replies.append(message.content)
    for call in message.tool_calls or []:
        record.tool_calls.append(ToolCallRecord(call["function"]["name"], _arguments(call)))


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    try:
        arguments = json.loads(call["function"].get("arguments") or "{}")
    except json.JSONDecodeError:
        return {}
    return arguments if isinstance(arguments, dict) else {}
