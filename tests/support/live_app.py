"""A real memdesk server for tests: uvicorn on an ephemeral 127.0.0.1 port, in a background thread
(``tests.support.servers.app_in_thread``).

Tests talk to it over real HTTP (httpx), and it talks to a scripted OpenAI-compatible server through the real
``openai`` client.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from fastapi import FastAPI
from sqlmodel import Session, col, select

from app.identity import shop_identity_hmac
from app.main import create_app
from app.models import Conversation, Customer, Message, Order, OrderStatus
from app.services import Services
from app.settings import Settings
from app.web.http_protocol import UVICORN_CONFIG
from tests.support.servers import app_in_thread

IDENTITY_SECRET = "shop-identity-secret-for-tests"
STARTUP_TIMEOUT_S = 20.0
T = TypeVar("T")


@dataclass
class LiveApp:
    url: str
    app: FastAPI
    settings: Settings
    clients: list[httpx.Client] = field(default_factory=list)

    @property
    def services(self) -> Services:
        services: Services = self.app.state.services
        return services

    def db(self) -> Session:
        return Session(self.services.db)

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        client = httpx.Client(base_url=self.url, headers=headers, timeout=10.0)
        self.clients.append(client)
        return client

    def visitor(self, external_id: str | None = None) -> tuple[httpx.Client, str]:
        """A widget session (verified when ``external_id`` is given): a client carrying its token, and the
        customer's public id."""
        body: dict[str, Any] = {}
        if external_id is not None:
            body = {"external_id": external_id, "identity_hmac": shop_identity_hmac(IDENTITY_SECRET, external_id)}
        response = self.client().post("/api/widget/sessions", json=body)
        assert response.status_code == 201, response.text
        data = response.json()
        return self.client(data["token"]), data["customer_id"]

    def conversation(self, client: httpx.Client) -> str:
        """A new conversation of the client's visitor; its public id."""
        response = client.post("/api/widget/conversations", json={"title": "Help"})
        assert response.status_code == 201, response.text
        conversation_id: str = response.json()["id"]
        return conversation_id

    def customer(self, public_id: str) -> Customer:
        with self.db() as session:
            found = session.exec(select(Customer).where(Customer.public_id == public_id)).one()
            session.expunge(found)
            return found

    def conversation_key(self, public_id: str) -> int | None:
        """The internal id of the conversation with this public id (None when there is none)."""
        with self.db() as session:
            return session.exec(select(Conversation.id).where(Conversation.public_id == public_id)).first()

    def transcript(self, conversation: str | int) -> list[Message]:
        """Every stored message of the conversation (by public id, or internal id), in order."""
        key = conversation if isinstance(conversation, int) else self.conversation_key(conversation)
        if key is None:
            return []
        with self.db() as session:
            rows = session.exec(select(Message).where(Message.conversation_id == key).order_by(col(Message.id))).all()
            return list(rows)

    def wait_for(self, probe: Callable[[], T | None], *, timeout: float = 10.0, what: str = "condition") -> T:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = probe()
            if value:
                return value
            time.sleep(0.02)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")

    def wait_for_reply(self, conversation_id: str | int, *, count: int = 1, timeout: float = 10.0) -> list[Message]:
        """Wait until ``count`` assistant messages with text exist and no turn is running any more."""

        def replies() -> list[Message] | None:
            found = [m for m in self.transcript(conversation_id) if m.role.value == "assistant" and m.content]
            idle = self.services.turns.idle
            return found if len(found) >= count and idle else None

        return self.wait_for(replies, timeout=timeout, what=f"{count} assistant replies")

    def close(self) -> None:
        for client in self.clients:
            client.close()


def add_customer_with_order(
    live: LiveApp, *, external_id: str, number: str, status: OrderStatus = OrderStatus.SHIPPED, total_cents: int = 4210
) -> int:
    with live.db() as session:
        customer = Customer(external_id=external_id, name="Jane Doe", email="jane@example.com")
        session.add(customer)
        session.flush()
        assert customer.id is not None
        session.add(
            Order(
                number=number,
                customer_id=customer.id,
                status=status,
                total_cents=total_cents,
                shipping_name="Jane Doe",
                shipping_line1="1 Main St",
                shipping_city="Springfield",
                shipping_postal_code="12345",
                shipping_country="US",
            )
        )
        session.commit()
        return customer.id


def run_live_app(settings: Settings, **app_options: Any) -> Iterator[LiveApp]:
    """Start memdesk with ``settings``; yields once it answers, stops it afterwards."""
    app = create_app(settings, **app_options)
    with app_in_thread(app, timeout_s=STARTUP_TIMEOUT_S, timeout_graceful_shutdown=5, **UVICORN_CONFIG) as url:
        live = LiveApp(url=url, app=app, settings=settings)
        try:
            yield live
        finally:
            live.close()


def sse_events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """Parse a text/event-stream response into {"id", "event", "data"} dicts as they arrive."""
    event: dict[str, Any] = {}
    for line in response.iter_lines():
        if not line:
            if "event" in event:
                yield event
            event = {}
        elif line.startswith(":"):
            continue
        else:
            key, _, value = line.partition(":")
            value = value.removeprefix(" ")
            event[key] = json.loads(value) if key == "data" else value
