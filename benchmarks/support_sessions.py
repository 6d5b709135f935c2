"""A seeded generator of realistic support sessions, shared by the benchmarks.

A session is a list of turns. Each turn has the customer's message, the tool calls the agent makes (order JSON,
shipment logs, tables) and the agent's reply. Identifiers are planted at known turns so a benchmark can check they
are still present in the context at the end.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

BASE_TIME = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
PRODUCTS = [
    ("KTL-200", "Electric kettle 1.7 l", "39.90"),
    ("TST-410", "Four-slice toaster", "54.00"),
    ("BLN-900", "Blender pro 900 W", "89.99"),
    ("MUG-012", "Stoneware mug set", "24.50"),
    ("PAN-280", "Cast iron pan 28 cm", "42.10"),
    ("KNF-008", "Chef knife 20 cm", "65.00"),
    ("SCL-150", "Kitchen scale", "19.95"),
    ("GRD-050", "Coffee grinder", "47.25"),
    ("BWL-300", "Mixing bowls, 3 pack", "29.00"),
    ("TWL-004", "Tea towels, 4 pack", "12.40"),
]
CARRIERS = ("UPS", "DHL", "FedEx")
CUSTOMER_ASKS = (
    "Where is my order {order}? It was supposed to arrive already.",
    "Can you check order {order} for me, please?",
    "The {product} in order {order} arrived damaged. What can you do?",
    "I would like a refund for the {product} from {order}.",
    "Could you change the delivery address for {order}?",
    "Is there any update on the tracking for {order}?",
    "How long do refunds usually take to reach my card?",
    "Thanks. And what about my other order?",
    "Can I get the invoice for {order} sent to me again?",
    "OK, please go ahead with that.",
    "Sorry, one more question about the {product}.",
    "Please text me instead of emailing, I rarely check email.",
)
AGENT_REPLIES = (
    "I checked order {order}: it is {status}. {detail}",
    "Thanks for your patience. Order {order} is {status}; {detail}",
    "I understand. I have looked at {order} and it is currently {status}. {detail}",
    "Of course. For {order} the latest status is {status}. {detail}",
)
DETAILS = (
    "The carrier reports a short delay at the regional hub.",
    "A replacement can be sent as soon as the return is scanned.",
    "Refunds reach the original card within 5 business days.",
    "I have added a note to the order so the warehouse sees it.",
    "The tracking page should update within a few hours.",
)


@dataclass
class Turn:
    user: str
    tool_calls: list[tuple[str, dict[str, Any], str]]
    reply: str
    at: datetime


@dataclass
class Session:
    turns: list[Turn]
    planted: list[tuple[int, str]] = field(default_factory=list)  # (turn index, identifier)

    @property
    def tool_call_count(self) -> int:
        return sum(len(turn.tool_calls) for turn in self.turns)


def _order_json(rng: random.Random, order: dict[str, Any]) -> str:
    items = [
        {
            "sku": sku,
            "name": name,
            "unit_price": {"amount": price, "currency": "USD"},
            "quantity": rng.randint(1, 3),
            "description": f"{name}. " + "Durable, easy to clean and covered by a two-year warranty. " * 3,
            "image_url": f"https://cdn.example-shop.test/img/{sku.lower()}-{rng.randint(1000, 9999)}.jpg",
        }
        for sku, name, price in rng.sample(PRODUCTS, rng.randint(2, 5))
    ]
    payload = {
        "order": {
            "number": order["number"],
            "status": order["status"],
            "placed_at": order["placed"],
            "total": {"amount": order["total"], "currency": "USD"},
            "shipping_address": {
                "name": order["name"],
                "line1": "12 Harbour Street",
                "city": "Portsmouth",
                "postcode": "PO1 2AB",
                "country": "GB",
            },
            "items": items,
            "payment": {"method": "card", "last4": "4242", "captured": True},
            "shipment": {"carrier": order["carrier"], "tracking_number": order["tracking"]},
            "internal_notes": "Customer service history: " + "standard handling, no flags. " * 6,
        }
    }
    return json.dumps(payload)


def _shipment_log(rng: random.Random, order: dict[str, Any], at: datetime) -> str:
    lines = []
    moment = at - timedelta(days=4)
    for _ in range(rng.randint(25, 45)):
        moment += timedelta(minutes=rng.randint(20, 200))
        level = "INFO" if rng.random() > 0.06 else rng.choice(("WARN", "ERROR"))
        event = rng.choice(
            (
                "scanned at sorting hub",
                "departed facility",
                "arrived at facility",
                "in transit",
                "label printed",
                "loaded on vehicle",
            )
        )
        if level != "INFO":
            event = rng.choice(("delivery exception: address incomplete", "weather delay", "missed connection"))
        lines.append(f"{moment:%Y-%m-%dT%H:%M:%SZ} {level} {order['tracking']} {event} (hub {rng.randint(10, 99)})")
    return "\n".join(lines)


def _orders_table(orders: list[dict[str, Any]]) -> str:
    rows = ["number,status,placed_at,total,currency,carrier,tracking"]
    rows += [
        f"{o['number']},{o['status']},{o['placed']},{o['total']},USD,{o['carrier']},{o['tracking']}"
        for o in orders * 4  # the shop API returns line-level rows, so orders repeat
    ]
    return "\n".join(rows)


def generate_session(seed: int = 7, turns: int = 220) -> Session:
    """A deterministic session with ``turns`` turns and well over 60 tool calls."""
    rng = random.Random(seed)
    name = "Jane Doe"
    orders = []
    for index in range(8):
        tracking = "1Z" + "".join(rng.choice("0123456789ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(16))
        orders.append(
            {
                "number": f"#W{rng.randint(1_000_000, 9_999_999)}",
                "status": rng.choice(("processing", "shipped", "delivered", "delivered")),
                "placed": (BASE_TIME - timedelta(days=30 - index * 3)).date().isoformat(),
                "total": f"{rng.randint(20, 300)}.{rng.randint(0, 99):02d}",
                "carrier": rng.choice(CARRIERS),
                "tracking": tracking,
                "name": name,
            }
        )
    session_turns: list[Turn] = []
    planted: list[tuple[int, str]] = []
    at = BASE_TIME
    for index in range(turns):
        at += timedelta(minutes=rng.randint(1, 9))
        order = rng.choice(orders)
        product = rng.choice(PRODUCTS)
        user = rng.choice(CUSTOMER_ASKS).format(order=order["number"], product=product[1])
        if index % 7 == 3:  # plant an identifier the customer states once
            kind = (index // 7) % 4
            identifier = [
                f"jane.doe+{index}@example.com",
                f"+44 7700 900{index:03d}",
                f"${rng.randint(10, 99)}.{rng.randint(10, 99)}",
                f"RMA-{rng.randint(100000, 999999)}",
            ][kind]
            user += f" For reference: {identifier}."
            planted.append((index, identifier))
        calls: list[tuple[str, dict[str, Any], str]] = []
        if index % 3 == 0:
            calls.append(("get_order", {"number": order["number"]}, _order_json(rng, order)))
        if index % 5 == 1:
            calls.append(("track_shipment", {"tracking_number": order["tracking"]}, _shipment_log(rng, order, at)))
        if index % 11 == 2:
            calls.append(("list_orders", {"customer": name}, _orders_table(orders)))
        if index % 13 == 6:  # parallel calls
            other = rng.choice(orders)
            calls.append(("get_order", {"number": other["number"]}, _order_json(rng, other)))
        if index == 5 or index % 9 == 4:
            planted.append((index, order["number"]))
        reply = rng.choice(AGENT_REPLIES).format(
            order=order["number"], status=order["status"], detail=rng.choice(DETAILS)
        )
        session_turns.append(Turn(user=user, tool_calls=calls, reply=reply, at=at))
    return Session(turns=session_turns, planted=planted)


def turn_messages(
    turn: Turn, call_offset: int
) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]], dict[str, Any]]:
    """(user message, tool-call rounds, final reply) of one turn in OpenAI chat format."""
    stamp = turn.at.isoformat()
    user = [{"role": "user", "content": turn.user, "created_at": stamp}]
    rounds: list[list[dict[str, Any]]] = []
    if turn.tool_calls:
        calls, results = [], []
        for offset, (name, arguments, output) in enumerate(turn.tool_calls):
            call_id = f"call_{call_offset + offset}"
            calls.append(
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
            )
            results.append({"role": "tool", "tool_call_id": call_id, "content": output, "created_at": stamp})
        rounds.append([{"role": "assistant", "content": None, "tool_calls": calls, "created_at": stamp}, *results])
    reply = {"role": "assistant", "content": turn.reply, "created_at": stamp}
    return user, rounds, reply
