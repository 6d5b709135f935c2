"""A small, hand-built shop for tool tests: two customers whose orders cover every status.

Built on a fresh SQLite file with ``SQLModel.metadata.create_all`` (the migrations have their own tests), so each
test starts from the same known state and can change it freely.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session, SQLModel

import app.models  # noqa: F401  (registers every table)
from app.db import create_db_engine
from app.models import (
    Conversation,
    Customer,
    Order,
    OrderItem,
    OrderStatus,
    Product,
    Refund,
    RefundStatus,
    Shipment,
    ShipmentStatus,
)

PLACED = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

ALICE_PENDING = "#W1000001"
ALICE_PROCESSING = "#W1000002"
ALICE_SHIPPED = "#W1000003"
ALICE_DELIVERED = "#W1000004"  # $100.00 paid, $25.00 refund approved: $75.00 still refundable
ALICE_CANCELLED = "#W1000005"
ALICE_SECOND_PENDING = "#W1000006"
BOB_PENDING = "#W2000001"
BOB_DELIVERED = "#W2000002"
MISSING_ORDER = "#W9999999"

ALICE_UPS_TRACKING = "1Z999AA10123456784"
BOB_FEDEX_TRACKING = "123456789012"


@dataclass(frozen=True)
class TinyShop:
    engine: Engine
    alice_id: int
    bob_id: int
    alice_conversation_id: int
    bob_conversation_id: int


def make_engine(directory: Path) -> Engine:
    engine = create_db_engine(f"sqlite:///{directory / 'shop.db'}")
    SQLModel.metadata.create_all(engine)
    return engine


def _order(customer_id: int, number: str, status: OrderStatus, total_cents: int, days: int) -> Order:
    return Order(
        number=number,
        customer_id=customer_id,
        status=status,
        placed_at=PLACED + timedelta(days=days),
        total_cents=total_cents,
        shipping_name="Test Person",
        shipping_line1="1 Test St",
        shipping_city="Portland",
        shipping_region="OR",
        shipping_postal_code="97201",
        shipping_country="US",
    )


def build_tiny_shop(directory: Path) -> TinyShop:
    engine = make_engine(directory)
    with Session(engine) as session:
        alice = Customer(external_id="shop-alice", name="Alice Example", email="alice@example.com")
        bob = Customer(external_id="shop-bob", name="Bob Example", email="bob@example.com")
        mug = Product(sku="T-MUG", name="Test Mug", price_cents=2500)
        lamp = Product(sku="T-LAMP", name="Test Lamp", price_cents=5000)
        session.add_all([alice, bob, mug, lamp])
        session.flush()
        assert alice.id and bob.id and mug.id and lamp.id
        orders = {
            ALICE_PENDING: _order(alice.id, ALICE_PENDING, OrderStatus.PENDING, 5000, 9),
            ALICE_PROCESSING: _order(alice.id, ALICE_PROCESSING, OrderStatus.PROCESSING, 2500, 8),
            ALICE_SHIPPED: _order(alice.id, ALICE_SHIPPED, OrderStatus.SHIPPED, 5000, 6),
            ALICE_DELIVERED: _order(alice.id, ALICE_DELIVERED, OrderStatus.DELIVERED, 10000, 1),
            ALICE_CANCELLED: _order(alice.id, ALICE_CANCELLED, OrderStatus.CANCELLED, 2500, 0),
            ALICE_SECOND_PENDING: _order(alice.id, ALICE_SECOND_PENDING, OrderStatus.PENDING, 2500, 10),
            BOB_PENDING: _order(bob.id, BOB_PENDING, OrderStatus.PENDING, 2500, 3),
            BOB_DELIVERED: _order(bob.id, BOB_DELIVERED, OrderStatus.DELIVERED, 5000, 2),
        }
        session.add_all(orders.values())
        session.flush()
        ids = {number: order.id for number, order in orders.items()}
        for number, order in orders.items():
            assert ids[number] is not None
            if order.total_cents == 10000:
                session.add(OrderItem(order_id=ids[number], product_id=mug.id, quantity=2, unit_price_cents=2500))
                session.add(OrderItem(order_id=ids[number], product_id=lamp.id, quantity=1, unit_price_cents=5000))
            elif order.total_cents == 5000:
                session.add(OrderItem(order_id=ids[number], product_id=lamp.id, quantity=1, unit_price_cents=5000))
            else:
                session.add(OrderItem(order_id=ids[number], product_id=mug.id, quantity=1, unit_price_cents=2500))
        session.add(
            Shipment(
                order_id=ids[ALICE_SHIPPED],
                carrier="UPS",
                tracking_number=ALICE_UPS_TRACKING,
                status=ShipmentStatus.IN_TRANSIT,
                events=[
                    {"at": "2026-11-08T10:00:00+00:00", "status": "label_created", "location": "Reno, NV",
                     "description": "Shipping label created"},
                    {"at": "2026-11-09T10:00:00+00:00", "status": "in_transit", "location": "Reno, NV",
                     "description": "Picked up by carrier"},
                ],
                eta=date(2026, 11, 12),
            )
        )  # fmt: skip
        session.add(
            Shipment(
                order_id=ids[BOB_DELIVERED],
                carrier="FedEx",
                tracking_number=BOB_FEDEX_TRACKING,
                status=ShipmentStatus.DELIVERED,
                events=[],
                eta=date(2026, 11, 6),
            )
        )
        delivered = ids[ALICE_DELIVERED]
        assert delivered is not None
        # The rejected refund must not count against what can still be refunded.
        session.add(Refund(order_id=delivered, amount_cents=2500, reason="Mug chipped", status=RefundStatus.APPROVED))
        session.add(Refund(order_id=delivered, amount_cents=9000, reason="Not eligible", status=RefundStatus.REJECTED))
        alice_conversation = Conversation(customer_id=alice.id, title="Alice's chat")
        bob_conversation = Conversation(customer_id=bob.id, title="Bob's chat")
        session.add_all([alice_conversation, bob_conversation])
        session.commit()
        assert alice_conversation.id and bob_conversation.id
        return TinyShop(
            engine=engine,
            alice_id=alice.id,
            bob_id=bob.id,
            alice_conversation_id=alice_conversation.id,
            bob_conversation_id=bob_conversation.id,
        )


def chat(*customer_lines: str) -> list[dict[str, Any]]:
    """A conversation in OpenAI format: the bot asks, the customer answers each line in turn."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a support agent."}]
    for line in customer_lines:
        messages.append({"role": "assistant", "content": "Shall I go ahead with that?"})
        messages.append({"role": "user", "content": line})
    return messages


def tool_exchange(
    name: str, arguments: Mapping[str, Any], result: str, call_id: str = "call_1"
) -> Sequence[dict[str, Any]]:
    """An assistant tool call and its tool result, as they appear in the conversation after a tool ran."""
    return (
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": result},
    )
